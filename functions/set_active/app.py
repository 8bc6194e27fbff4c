"""PUT /conversations/{conversation_id}/active: the active path ends at another message (API-18)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import navigation
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.schemas import SetActiveIn
from chat_core.observability import http_entry

app = build_app()


@app.put("/conversations/<conversation_id>/active")
def set_active(conversation_id: str, body: SetActiveIn) -> Response[Any]:
    return json_response(200, navigation.set_active(caller(app), conversation_id, body.message_id))


lambda_handler = http_entry(app)
