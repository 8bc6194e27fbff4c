"""GET /worlds/{world_id}/saves: a world's saves and which are loaded (DLG-5)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import saves
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.get("/worlds/<world_id>/saves")
def list_saves(world_id: str) -> Response[Any]:
    return json_response(200, saves.list_saves(caller(app), world_id))


lambda_handler = http_entry(app)
