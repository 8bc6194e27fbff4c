"""PATCH /conversations/{conversation_id}/messages/{message_id}: pin or unpin a message (WIN-3)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import pins
from chat_core.http.api import build_app, caller, json_response
from chat_core.http.schemas import PinMessageIn
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.patch("/conversations/<conversation_id>/messages/<message_id>")
def update_message(conversation_id: str, message_id: str, body: PinMessageIn) -> Response[Any]:
    message = pins.pin_message(caller(app), conversation_id, message_id, body.pinned)
    return json_response(200, message)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
