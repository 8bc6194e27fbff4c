"""DELETE /worlds/{world_id}/saves/{save_id}/load: revert a load: hidden history is back (DLG-5)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import saves
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.delete("/worlds/<world_id>/saves/<save_id>/load")
def revert_load(world_id: str, save_id: str) -> Response[Any]:
    return json_response(200, saves.revert(caller(app), world_id, save_id))


lambda_handler = http_entry(app)
