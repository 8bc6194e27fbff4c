"""DELETE /conversations/{conversation_id}: soft delete (gone from list and detail; TTL removes it later)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import delete
from chat_core.http.api import build_app, caller, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.delete("/conversations/<conversation_id>")
def delete_conversation(conversation_id: str) -> Response[Any]:
    delete.delete_conversation(caller(app), conversation_id)
    return json_response(204, None)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
