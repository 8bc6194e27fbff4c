"""GET /v1/models: the models this deployment offers, in OpenAI's list format (API-13)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.http.api import build_app, caller, json_response
from chat_core.http.models_list import models_list
from chat_core.observability import logger, metrics, tracer

app = build_app(openai_errors=True)


@app.get("/v1/models")
def list_models() -> Response[Any]:
    caller(app)  # the same identity as every route: no anonymous listing
    return json_response(200, models_list())


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
