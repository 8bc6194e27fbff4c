"""POST /worlds/{world_id}/import?mode=restore|merge: load a JSON Lines export into a world (game load)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue import transfer
from chat_core.errors import InvalidInput
from chat_core.http.api import build_app, caller, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.post("/worlds/<world_id>/import")
def import_world(
    world_id: str,
    mode: Annotated[
        Literal["restore", "merge"],
        Query(description="restore: the world must be empty (else 409); merge: add to what is there"),
    ] = "restore",
) -> Response[Any]:
    owner = caller(app)
    try:
        text = app.current_event.decoded_body or ""
    except UnicodeDecodeError as exc:
        raise InvalidInput("the import body must be UTF-8 JSON Lines", field="body") from exc
    result = transfer.import_world_jsonl(owner, world_id, text, mode=mode)
    return json_response(201, result.to_dict())


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
