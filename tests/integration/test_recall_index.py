"""MEM-4/5: the recall index kept on the table's stream (summarizer's handler), through the handlers."""

from __future__ import annotations

from typing import Any

import pytest
from chat_core.engine import recall
from chat_core.store import recall_index

from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.stream_records import TableStream, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SUMMARIZER = "SummarizeConversationFunction"
TABLE = "chat-history-it"


def run_stream(stream: TableStream) -> dict[str, Any]:
    batch = for_function(SUMMARIZER, stream.read())
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    result: dict[str, Any] = api.load("summarize_conversation").lambda_handler(event(batch), context)
    return result


def post(text: str, conversation_id: str | None = None, **fields: Any) -> str:
    answer = api.post(text, conversation_id, **fields)
    assert answer.status == 201, answer.body
    return str(answer.body["conversation_id"])


def search(conversation_id: str, text: str) -> list[int]:
    tail = recall_index.read_tail("alice", conversation_id)
    pk = recall_index.conversation_pk("alice", conversation_id)
    segments = {
        sid: seg for (_, sid), seg in recall_index.read_segments((pk, r.id) for r in tail.segments).items()
    }
    if tail.pending:
        segments["~"] = recall.Segment(tail.pending)
    hits = recall.score(
        recall.query_terms(text), segments, n_docs=tail.n_docs, total_length=tail.total_length
    )
    return [h.doc.seq for h in hits]


def test_the_stream_indexes_every_turn_once_and_redelivery_is_a_no_op(chat_service: None) -> None:
    # Given a conversation of 20 turns, its stream processed after each
    stream = TableStream(TABLE)
    cid = post("my cat is called Mochi")
    run_stream(stream)
    for turn in range(19):
        cid = post(f"question {turn} about the weather", cid)
        batch = for_function(SUMMARIZER, stream.read())
        context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
        api.load("summarize_conversation").lambda_handler(event(batch), context)
        # When a batch is delivered twice
        again = api.load("summarize_conversation").lambda_handler(event(batch), context)
        # Then the second delivery adds nothing
        assert again["recall"]["documents"] == 0
    tail = recall_index.read_tail("alice", cid)
    # Then all 40 messages are indexed, in sealed segments merged by level, below the watermark
    assert tail.n_docs == 40
    assert tail.watermark == 40
    assert sorted(r.level for r in tail.segments) == [0, 1]
    # And the first user message is found by its words
    assert search(cid, "what is my cat called?")[0] == 1
