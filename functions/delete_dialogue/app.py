"""DELETE /worlds/{world_id}/dialogues/{dialogue_id}: delete one dialogue and its entries (DLG-4)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import worlds
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.delete("/worlds/<world_id>/dialogues/<dialogue_id>")
def delete_dialogue(world_id: str, dialogue_id: str) -> Response[Any]:
    return json_response(200, worlds.delete_dialogue(caller(app), world_id, dialogue_id))


lambda_handler = http_entry(app)
