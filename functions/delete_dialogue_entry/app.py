"""DELETE /worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}: remove one entry (DLG-4)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import worlds
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.delete("/worlds/<world_id>/dialogues/<dialogue_id>/entries/<entry_id>")
def delete_dialogue_entry(world_id: str, dialogue_id: str, entry_id: str) -> Response[Any]:
    return json_response(200, worlds.delete_entry(caller(app), world_id, dialogue_id, entry_id))


lambda_handler = http_entry(app)
