"""POST /conversations: create an empty conversation (title, system prompt, model, window policy, key);
PUT /conversation-keys/{key}: the caller's conversation named by a key, created when there is none
(API-21)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import create
from chat_core.http import request_commands as commands
from chat_core.http.api import build_app, caller, json_response
from chat_core.http.schemas import ConversationSettingsIn, CreateConversationIn
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.post("/conversations")
def create_conversation(body: CreateConversationIn) -> Response[Any]:
    return json_response(201, create.create_conversation(caller(app), commands.create_command(body)))


@app.put("/conversation-keys/<key>")
def conversation_for_key(key: str, body: ConversationSettingsIn | None = None) -> Response[Any]:
    # The router matches the raw path: `key` arrives percent-encoded (`user%3A1`), as clients send it.
    view, created = create.conversation_for_key(caller(app), unquote(key), commands.settings_command(body))
    return json_response(201 if created else 200, view)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
