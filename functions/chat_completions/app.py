"""POST /v1/chat/completions: the Chat Completions wire format over a stored conversation (API-13)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.http import openai
from chat_core.http.api import build_app, caller, idempotency_key, json_response
from chat_core.observability import logger, metrics, tracer

app = build_app(openai_errors=True)
# The chunk sink of the invocation being resolved, when it came through `stream_handler`.
_streaming = threading.local()


@app.post("/v1/chat/completions")
def chat_completions(body: openai.ChatCompletionIn) -> Response[Any]:
    emit = getattr(_streaming, "emit", None) if body.stream else None
    answer = openai.chat_completion(
        caller(app),
        body,
        conversation_header=app.current_event.headers.get(openai.CONVERSATION_HEADER.lower()),
        idempotency_key=idempotency_key(app),
        context=app.lambda_context,
        emit=emit,
    )
    if emit is not None and answer.status == 200:
        # The answer went out as chunks; this response only closes the stream.
        return Response(200, "text/event-stream", "", answer.headers)
    return json_response(answer.status, answer.body, answer.headers)


def stream_handler(
    event: dict[str, Any], context: LambdaContext, emit: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """The streaming entry (API-14): like `lambda_handler`, and a `stream: true` request's chunks go to
    `emit` as the model produces them. The local server calls it; see the README for deployed streaming."""
    _streaming.emit = emit
    try:
        return lambda_handler(event, context)
    finally:
        _streaming.emit = None


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
