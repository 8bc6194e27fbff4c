"""DELETE /conversations/{conversation_id}/messages/{message_id}: remove one message of the active path
(and the results of its tool calls); kept for audit, never sent to the model again (API-18)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import message_removal
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.delete("/conversations/<conversation_id>/messages/<message_id>")
def delete_message(conversation_id: str, message_id: str) -> Response[Any]:
    return json_response(200, message_removal.delete_message(caller(app), conversation_id, message_id))


lambda_handler = http_entry(app)
