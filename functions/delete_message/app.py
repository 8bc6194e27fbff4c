"""DELETE /conversations/{conversation_id}/messages/{message_id}: remove one message of the active path
(and the results of its tool calls); kept for audit, never sent to the model again (API-18)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import history
from chat_core.http.api import build_app, caller, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.delete("/conversations/<conversation_id>/messages/<message_id>")
def delete_message(conversation_id: str, message_id: str) -> Response[Any]:
    return json_response(200, history.delete_message(caller(app), conversation_id, message_id))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
