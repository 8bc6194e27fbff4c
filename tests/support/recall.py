"""Helpers of the recall tests (MEM-5): the summarizer's handler run on the table's stream, and posts."""

from __future__ import annotations

from typing import Any

from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.stream_records import TableStream, event, for_function

SUMMARIZER = "SummarizeConversationFunction"


def run_stream(stream: TableStream) -> dict[str, Any]:
    """The summarizer's handler on what the stream holds since the last read (as its mapping sends it)."""
    batch = for_function(SUMMARIZER, stream.read())
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    result: dict[str, Any] = api.load("summarize_conversation").lambda_handler(event(batch), context)
    return result


def post(text: str, conversation_id: str | None = None, **fields: Any) -> str:
    """A post that must answer 201; its conversation's id."""
    answer = api.post(text, conversation_id, **fields)
    assert answer.status == 201, answer.body
    return str(answer.body["conversation_id"])
