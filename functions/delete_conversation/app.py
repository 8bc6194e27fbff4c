"""DELETE /conversations/{conversation_id}: soft delete (gone from list and detail; TTL removes it later)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import delete
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.delete("/conversations/<conversation_id>")
def delete_conversation(conversation_id: str) -> Response[Any]:
    delete.delete_conversation(caller(app), conversation_id)
    return json_response(204, None)


lambda_handler = http_entry(app)
