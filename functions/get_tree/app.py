"""GET /conversations/{conversation_id}/tree: every message with its parent, children and whether it is
on the active path, oldest first, paginated (API-18)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import navigation
from chat_core.chat.paging import MAX_CURSOR_CHARS
from chat_core.http.api import build_app, caller, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.get("/conversations/<conversation_id>/tree")
def get_tree(
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 100,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
) -> Response[Any]:
    return json_response(200, navigation.tree_page(caller(app), conversation_id, limit=limit, cursor=cursor))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
