"""POST /worlds/{world_id}/saves: record a save game at a game tick (DLG-5)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import saves
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.dialogue_schemas import SaveIn
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/saves")
def save_world(world_id: str, body: SaveIn) -> Response[Any]:
    return json_response(201, saves.save(caller(app), world_id, body.save_id, body.game_tick))


lambda_handler = http_entry(app)
