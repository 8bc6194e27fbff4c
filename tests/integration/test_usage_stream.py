"""COST-3: the owners' usage of the day is added from the table's stream, exactly once per priced message,
however Lambda delivers the records (again, from a later point, from two shards at once), and a post
writes no usage item itself. Records come from moto's real stream and go through the summarizer's handler
with the FilterCriteria of template.yaml, as its event source mapping would deliver them."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from chat_core.chat import usage_stream

from tests.integration.conftest import TABLE
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.openai_standin import OpenAIStandin
from tests.support.stream_records import TableStream, for_function

SUMMARIZER = "SummarizeConversationFunction"


@pytest.fixture
def stream(standin_llm: OpenAIStandin) -> TableStream:
    return TableStream(TABLE)


def _deliver(records: list[dict[str, Any]], shard: str) -> dict[str, Any]:
    """One invocation of the summarizer as its event source mapping makes it (a tumbling window names
    the shard and expects `state` back)."""
    event = {"Records": records, "shardId": shard, "state": {}, "window": {}, "isFinalInvokeForWindow": False}
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    answer: dict[str, Any] = api.load("summarize_conversation").lambda_handler(event, context)
    return answer


def _day(user: str = "alice") -> dict[str, int]:
    """The user's day items, read raw (no delivery before the read): calls, tokens and cost summed."""
    items = boto3.client("dynamodb", region_name="us-east-1").query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"USER#{user}#USAGE"}},
        ConsistentRead=True,
    )["Items"]
    days = [i for i in items if i["sk"]["S"].startswith("DAY#")]
    return {
        name: sum(int(i.get(name, {}).get("N", 0)) for i in days)
        for name in ("calls", "prompt_tokens", "completion_tokens", "cost_micros")
    }


def _replies(conversation_ids: list[str]) -> dict[str, int]:
    replies = [
        m
        for c in conversation_ids
        for m in api.detail(c, limit="100").body["messages"]
        if m["role"] == "assistant" and m.get("cost") is not None
    ]
    return {
        "calls": len(replies),
        "prompt_tokens": sum(m["usage"]["prompt_tokens"] for m in replies),
        "completion_tokens": sum(m["usage"]["completion_tokens"] for m in replies),
        "cost_micros": sum(m["cost"]["micros"] for m in replies),
    }


def _posted(stream: TableStream, n: int) -> tuple[list[str], list[dict[str, Any]]]:
    first = api.post("hello")
    conversation_id = first.body["conversation_id"]
    for i in range(n - 1):
        assert api.post(f"question {i}", conversation_id).status == 201
    return [conversation_id], for_function(SUMMARIZER, stream.read())


def test_a_post_writes_no_usage_item_and_the_stream_adds_it_once(stream: TableStream) -> None:
    """COST-3: after posts the user's day holds nothing until the stream delivers their replies; then it
    equals the sum of the stored replies, and the same batch delivered again adds nothing."""
    conversations, records = _posted(stream, 3)
    # (each post's question and reply: the mapping sends every stored message, MEM-5)
    assert len(records) == 6
    # Before the stream delivers, no usage item was written by the posts
    assert _day()["calls"] == 0
    # When the batch is delivered, then delivered again (a retry after a timeout)
    assert _deliver(records, "shardId-1")["state"] == {}
    _deliver(records, "shardId-1")
    # Then the day equals the stored replies, each once
    assert _day() == _replies(conversations)
    assert _day()["calls"] == 3


def test_a_redelivery_from_a_later_point_adds_only_what_is_new(stream: TableStream) -> None:
    """COST-3: Lambda retries from the first failed record, with newer records behind it: the records
    already added are skipped, the new ones added."""
    conversations, records = _posted(stream, 4)
    _deliver(records[:3], "shardId-1")
    # When the retry starts at the second record and carries the fourth
    _deliver(records[1:], "shardId-1")
    assert _day() == _replies(conversations)
    assert _day()["calls"] == 4


def test_two_shards_add_to_one_day_item_each_exactly_once(stream: TableStream, serialized_moto: None) -> None:
    """COST-3: records of one owner's conversations reach the day item from different shards, at the same
    time: each shard's records count, once (the item's version makes concurrent updates retry)."""
    first, first_records = _posted(stream, 3)
    second, second_records = _posted(stream, 3)
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def deliver(records: list[dict[str, Any]], shard: str) -> None:
        start.wait(timeout=30)
        try:
            for _ in range(2):  # each batch twice
                usage_stream.record_usage(records, shard)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [
        threading.Thread(target=deliver, args=(first_records, "shardId-a")),
        threading.Thread(target=deliver, args=(second_records, "shardId-b")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    assert _day() == _replies(first + second)
    assert _day()["calls"] == 6


def test_records_that_are_not_priced_replies_add_nothing(
    stream: TableStream, standin_llm: OpenAIStandin
) -> None:
    """COST-3: an error reply (the model failed: nothing to pay), a user message and other changes add
    nothing; the priced replies beside them count."""
    conversations, records = _posted(stream, 2)
    standin_llm.set_mode("error500")
    failed = api.post("this one fails", conversations[0])
    assert failed.status == 502, failed.body
    standin_llm.set_mode("ok")
    unfiltered = stream.read()
    assert any(r["dynamodb"]["NewImage"].get("status", {}).get("S") == "error" for r in unfiltered)
    assert usage_stream.record_usage(unfiltered, "shardId-1") == 0
    _deliver(records, "shardId-1")
    assert _day() == _replies(conversations)
    assert _day()["calls"] == 2


def test_a_new_stream_whose_numbers_start_afresh_still_counts(stream: TableStream) -> None:
    """COST-3: a table's stream turned off and on again (or the local server started again on its data)
    is a new stream whose shard may have the same id and whose sequence numbers start low again: its
    records count, they are not taken for records already added."""
    conversations, records = _posted(stream, 2)
    first, second = [r for r in records if r["dynamodb"]["NewImage"]["role"]["S"] == "assistant"]
    _deliver([first], "shardId-1")
    # When the second reply comes from a new stream: another label, a lower sequence number, same shard id
    renewed = dict(second)
    renewed["eventSourceARN"] = second["eventSourceARN"].rsplit("/stream/", 1)[0] + "/stream/2099-01-01"
    renewed["dynamodb"] = {**second["dynamodb"], "SequenceNumber": "1"}
    _deliver([renewed], "shardId-1")
    # Then both replies are counted, once
    _deliver([renewed], "shardId-1")
    assert _day() == _replies(conversations)
    assert _day()["calls"] == 2
