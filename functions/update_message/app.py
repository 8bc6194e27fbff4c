"""PATCH /conversations/{conversation_id}/messages/{message_id}: pin or unpin a message (WIN-3)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import pins
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.schemas import PinMessageIn
from chat_core.observability import http_entry

app = build_app()


@app.patch("/conversations/<conversation_id>/messages/<message_id>")
def update_message(conversation_id: str, message_id: str, body: PinMessageIn) -> Response[Any]:
    message = pins.pin_message(caller(app), conversation_id, message_id, body.pinned)
    return json_response(200, message)


lambda_handler = http_entry(app)
