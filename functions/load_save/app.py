"""POST /worlds/{world_id}/saves/{save_id}/load: load a save: later history leaves prompts (DLG-5)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import saves
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/saves/<save_id>/load")
def load_save(world_id: str, save_id: str) -> Response[Any]:
    return json_response(200, saves.load(caller(app), world_id, save_id))


lambda_handler = http_entry(app)
