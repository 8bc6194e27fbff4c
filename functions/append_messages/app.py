"""POST /conversations/{conversation_id}/messages: store messages as given, no model call (API-18)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import history
from chat_core.http import request_commands as commands
from chat_core.http.api import Response, build_app, caller, idempotency_key, json_response
from chat_core.http.schemas import AppendMessagesIn
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()


@app.post("/conversations/<conversation_id>/messages")
def append_messages(conversation_id: str, body: AppendMessagesIn) -> Response[Any]:
    appended = history.append_messages(
        caller(app), conversation_id, commands.append_command(body), idempotency_key=idempotency_key(app)
    )
    return json_response(201, appended)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
