"""PATCH /conversations/{conversation_id}: title, system prompt, model, window policy, default settings."""

from __future__ import annotations

from typing import Any

from chat_core.chat import update
from chat_core.http import request_commands as commands
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.schemas import UpdateConversationIn
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()


@app.patch("/conversations/<conversation_id>")
def update_conversation(conversation_id: str, body: UpdateConversationIn) -> Response[Any]:
    conversation = update.update_conversation(caller(app), conversation_id, commands.update_command(body))
    return json_response(200, conversation)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
