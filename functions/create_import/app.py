"""POST /worlds/{world_id}/imports: an import job and the URL to PUT its file to (DLG-6)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue import jobs
from chat_core.http.api import build_app, caller, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.post("/worlds/<world_id>/imports")
def create_import(world_id: str) -> Response[Any]:
    return json_response(202, jobs.create_import(caller(app), world_id))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
