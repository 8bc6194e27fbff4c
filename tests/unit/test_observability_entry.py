"""The one entry every function shares (chat_core.observability.entry / http_entry): the Lambda context and
the right correlation id in every log line, state cleared between worker batches (OPS-1)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from chat_core.observability import entry, http_entry, logger

from tests.support.lambda_context import LambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


class _LoggingResolver:
    def resolve(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.info("resolved")
        return {"statusCode": 200, "body": ""}


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What the service's logger writes, one JSON object a line."""
    stream = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", stream)
    return stream


def _lines(log: io.StringIO, message: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.getvalue().splitlines() if line.startswith("{")]
    return [line for line in lines if line["message"] == message]


def test_an_http_entry_logs_with_the_api_request_id_as_correlation_id(
    log: io.StringIO,
) -> None:
    """OPS-1: `lambda_handler = http_entry(app)` resolves the event on the app, and each log line names the
    API Gateway request id and the Lambda request, as the decorators it replaces did."""
    # Given an HTTP function's entry
    handler = http_entry(_LoggingResolver())
    context = LambdaContext(function_name="list_worlds")
    # When an HTTP API v2 event comes in
    answer = handler({"version": "2.0", "requestContext": {"requestId": "api-req-1"}}, context)
    # Then the app answered and its log line carries both ids
    assert answer["statusCode"] == 200
    [line] = _lines(log, "resolved")
    assert line["correlation_id"] == "api-req-1"
    assert line["function_request_id"] == context.aws_request_id
    assert line["function_name"] == "list_worlds"


def test_a_worker_entry_clears_the_keys_of_the_previous_batch(log: io.StringIO) -> None:
    """OPS-1: `@entry(clear_state=True)` (the stream and queue workers): a key appended while handling one
    batch is gone in the next."""

    # Given a worker that appends a key only for its first batch
    @entry(clear_state=True)
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if event.get("first"):
            logger.append_keys(batch="one")
        logger.info("handled")
        return {}

    # When two batches are handled
    lambda_handler({"first": True}, LambdaContext())
    lambda_handler({}, LambdaContext())
    # Then the second batch's line does not carry the first batch's key
    first, second = _lines(log, "handled")
    assert first["batch"] == "one"
    assert "batch" not in second
