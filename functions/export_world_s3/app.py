"""POST /worlds/{world_id}/exports: the world's export as gzip JSON Lines in S3, and a GET URL (DLG-6)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue import jobs
from chat_core.http.api import build_app, caller, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.post("/worlds/<world_id>/exports")
def export_world_s3(world_id: str) -> Response[Any]:
    return json_response(201, jobs.export_to_s3(caller(app), world_id))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
