"""POST /conversations: create an empty conversation (title, system prompt, model, window policy, key);
PUT /conversation-keys/{key}: the caller's conversation named by a key, created when there is none
(API-21)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from chat_core.chat import create
from chat_core.http import request_commands as commands
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.schemas import ConversationSettingsIn, CreateConversationIn
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()


@app.post("/conversations")
def create_conversation(body: CreateConversationIn) -> Response[Any]:
    return json_response(201, create.create_conversation(caller(app), commands.create_command(body)))


@app.put("/conversation-keys/<key>")
def conversation_for_key(key: str, body: ConversationSettingsIn | None = None) -> Response[Any]:
    # The router matches the raw path: `key` arrives percent-encoded (`user%3A1`), as clients send it.
    view, created = create.conversation_for_key(caller(app), unquote(key), commands.settings_command(body))
    return json_response(201 if created else 200, view)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
