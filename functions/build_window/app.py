"""POST /conversations/{conversation_id}/window: the window a message would be sent with (no model call)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import assembly
from chat_core.http import request_commands as commands
from chat_core.http.api import build_app, caller, json_response
from chat_core.http.schemas import BuildWindowIn
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.post("/conversations/<conversation_id>/window")
def build_window(conversation_id: str, body: BuildWindowIn) -> Response[Any]:
    return json_response(
        200, assembly.build_window(caller(app), conversation_id, commands.window_command(body))
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
