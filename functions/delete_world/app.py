"""DELETE /worlds/{world_id}: delete a dialogue world (DLG-4): gone from every route at once, purged later."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import worlds
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.delete("/worlds/<world_id>")
def delete_world(world_id: str) -> Response[Any]:
    return json_response(200, worlds.delete_world(caller(app), world_id))


lambda_handler = http_entry(app)
