"""GET /worlds/{world_id}/export: every dialogue and entry of a world as JSON Lines (game save)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue import transfer
from chat_core.http.api import build_app, caller
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.get("/worlds/<world_id>/export")
def export_world(world_id: str) -> Response[Any]:
    body = transfer.export_world_jsonl(caller(app), world_id)
    return Response(
        status_code=200,
        content_type="application/x-ndjson; charset=utf-8",
        body=body,
        headers={"Content-Disposition": f'attachment; filename="{world_id}.jsonl"'},
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
