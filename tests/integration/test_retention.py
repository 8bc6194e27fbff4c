"""Retention: after DynamoDB's TTL removes a soft-deleted conversation item, its partition is purged.

moto never expires TTL items, so each test simulates the removal as DynamoDB's TTL process makes it: the
conversation item is deleted and its REMOVE record (read from moto's stream) is given the service
identity. Records reach the purge handler through its template FilterCriteria, as Lambda would deliver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import botocore.client
import pytest
from chat_core.errors import ConversationNotExpired
from chat_core.store import partitions
from chat_core.store.keys import META_SK, conversation_pk
from chat_core.store.records import SummaryRecord
from chat_core.store.summary_item import SummarySuperseded, save_summary

from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.runtime import renew
from tests.support.stream_records import TableStream, as_ttl_removal, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

PURGE = "PurgeConversationFunction"
TABLE = "chat-history-it"


def items_in(owner: str, conversation_id: str) -> list[str]:
    """Sort keys of every item in the conversation's partition (paged; any item type)."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    pager = client.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": conversation_pk(owner, conversation_id)}},
    )
    return [item["sk"]["S"] for page in pager for item in page["Items"]]


def conversation_with(turns: int, user: str = "alice") -> str:
    conversation_id: str | None = None
    for turn in range(turns):
        answer = api.post(f"turn {turn}", conversation_id, user=user)
        assert answer.status == 201
        conversation_id = answer.body["conversation_id"]
    assert conversation_id is not None
    return conversation_id


def add_event_and_summary(owner: str, conversation_id: str) -> None:
    """A turn-log event item and a summary in the partition, as the other features leave them."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": conversation_pk(owner, conversation_id)},
            "sk": {"S": "EVT#0000000001#0001"},
            "type": {"S": "event_for_test"},
        },
    )
    summary = SummaryRecord(
        conversation_id=conversation_id,
        from_seq=1,
        to_seq=2,
        text="earlier: turn 0",
        model="m",
        created_at="2025-01-01T00:00:00.000000Z",
    )
    save_summary(summary, previous_to_seq=None, owner=owner)


def ttl_removes(owner: str, conversation_id: str, stream: TableStream) -> list[dict[str, Any]]:
    """Delete the conversation item as DynamoDB's TTL process would; its stream record, TTL-marked."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    key = {"pk": {"S": conversation_pk(owner, conversation_id)}, "sk": {"S": META_SK}}
    client.delete_item(TableName=TABLE, Key=key)
    removals = [r for r in stream.read() if r["eventName"] == "REMOVE" and r["dynamodb"]["Keys"] == key]
    assert len(removals) == 1
    # A REMOVE by anyone but the TTL process reaches no purge (the template's filter drops it)
    assert for_function(PURGE, removals) == []
    return [as_ttl_removal(r) for r in removals]


def purge(records: list[dict[str, Any]]) -> dict[str, Any]:
    handler = api.load("purge_conversation").lambda_handler
    result: dict[str, Any] = handler(event(records), LambdaContext(function_name="purge_conversation"))
    return result


@pytest.fixture
def stream(chat_service: None) -> TableStream:
    return TableStream(TABLE)


def test_purge_after_ttl_removal_deletes_the_partition_and_nothing_else(stream: TableStream) -> None:
    """Retention (AGT-1): once TTL removes a soft-deleted conversation, its messages, events
    and summary are deleted; the same user's other conversation and another user's are untouched."""
    # Given alice's conversation with messages, an event and a summary, her second one, and bob's
    doomed = conversation_with(3)
    add_event_and_summary("alice", doomed)
    other = conversation_with(2)
    bobs = conversation_with(2, user="bob")
    before_other, before_bob = items_in("alice", other), items_in("bob", bobs)
    # When it is soft-deleted and DynamoDB's TTL later removes its conversation item
    assert api.delete(doomed).status == 204
    records = for_function(PURGE, ttl_removes("alice", doomed, stream))
    assert len(records) == 1
    left = items_in("alice", doomed)
    assert {"~SUMMARY", "EVT#0000000001#0001", "MSG#0000000001", "MSG#0000000006"} <= set(left)
    result = purge(records)
    # Then everything in its partition is gone, and nothing else
    assert result["conversations"] == 1
    assert result["deleted"] == len(left)
    assert items_in("alice", doomed) == []
    assert items_in("alice", other) == before_other
    assert items_in("bob", bobs) == before_bob
    assert api.detail(other).status == 200
    assert api.detail(bobs, user="bob").status == 200


def test_purge_rerun_is_a_noop(stream: TableStream) -> None:
    """Idempotent: the same TTL record delivered again (a stream retry) deletes nothing and succeeds."""
    # Given a conversation already purged after its TTL removal
    doomed = conversation_with(2)
    kept = conversation_with(1)
    assert api.delete(doomed).status == 204
    records = for_function(PURGE, ttl_removes("alice", doomed, stream))
    purge(records)
    kept_items = items_in("alice", kept)
    # When the same batch is delivered again
    again = purge(records)
    # Then nothing more is deleted and nothing fails
    assert again["deleted"] == 0
    assert again["purged"][0]["deleted"] == 0
    assert items_in("alice", doomed) == []
    assert items_in("alice", kept) == kept_items


def test_purge_pages_through_a_long_partition(stream: TableStream, monkeypatch: pytest.MonkeyPatch) -> None:
    """Retention: a partition bigger than one Query page is purged page by page, 25 deletes at most per
    BatchWriteItem (a small page size stands in for a long conversation)."""
    # Given a conversation of 12 messages and a Query page of 5 keys
    doomed = conversation_with(6)
    monkeypatch.setattr(partitions, "PAGE_SIZE", 5)
    assert api.delete(doomed).status == 204
    # When its TTL removal is purged
    records = for_function(PURGE, ttl_removes("alice", doomed, stream))
    left = items_in("alice", doomed)
    result = purge(records)
    # Then every message is gone after several pages
    purged = result["purged"][0]
    assert purged["deleted"] == len(left) >= 12
    assert purged["pages"] >= 3
    assert items_in("alice", doomed) == []


def test_unprocessed_items_are_retried_until_deleted(
    stream: TableStream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention: deletes DynamoDB leaves unprocessed (throttling) are retried with backoff, not lost."""
    # Given a conversation, and a DynamoDB that processes only half of the first BatchWriteItem
    doomed = conversation_with(4)
    assert api.delete(doomed).status == 204
    records = for_function(PURGE, ttl_removes("alice", doomed, stream))
    original: Callable[..., Any] = botocore.client.BaseClient._make_api_call
    throttled = {"left": 1}

    def half_processed(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if operation != "BatchWriteItem" or not throttled["left"]:
            return original(self, operation, params)
        throttled["left"] -= 1
        ((table, requests),) = params["RequestItems"].items()
        half = len(requests) // 2
        original(self, operation, {**params, "RequestItems": {table: requests[:half]}})
        return {"UnprocessedItems": {table: requests[half:]}}

    left = items_in("alice", doomed)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", half_processed)
    # When the purge runs
    result = purge(records)
    # Then the unprocessed half was retried and the partition is empty
    assert result["purged"][0]["retries"] == 1
    assert result["deleted"] == len(left)
    assert items_in("alice", doomed) == []


@pytest.mark.parametrize(
    "case",
    ["message item", "not a conversation key", "owner mismatch", "user delete"],
)
def test_records_other_than_a_conversations_ttl_removal_purge_nothing(stream: TableStream, case: str) -> None:
    """Never touch other partitions: the handler re-checks each record (TTL identity, conversation item,
    a conversation key that the item's own owner and id build) even if a filter let it through."""
    # Given a live conversation and a TTL-looking REMOVE record crafted around it
    conversation_id = conversation_with(2)
    pk = conversation_pk("alice", conversation_id)
    old = {"type": {"S": "conversation"}, "owner": {"S": "alice"}, "conversation_id": {"S": conversation_id}}
    keys = {"pk": {"S": pk}, "sk": {"S": META_SK}}
    if case == "message item":
        keys["sk"] = {"S": "MSG#0000000001"}
    elif case == "not a conversation key":
        keys["pk"] = {"S": f"WORLD#alice#{conversation_id}"}
    elif case == "owner mismatch":
        old["owner"] = {"S": "mallory"}
    record: dict[str, Any] = {"eventName": "REMOVE", "dynamodb": {"Keys": keys, "OldImage": old}}
    if case != "user delete":
        record = as_ttl_removal(record)
    before = items_in("alice", conversation_id)
    # When the purge handler receives it directly
    result = purge([record])
    # Then nothing is purged
    assert result["conversations"] == 0
    assert items_in("alice", conversation_id) == before


def test_direct_invocation_purges_only_expired_conversations(
    stream: TableStream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGT-1 + retention: a plain JSON payload purges a conversation past its retention (e.g. to
    finish a purge that went to the dead-letter queue); a live one is refused, untouched."""
    handler = api.load("purge_conversation").lambda_handler
    live = conversation_with(2)
    before = items_in("alice", live)
    # When a live conversation is named
    with pytest.raises(ConversationNotExpired):
        handler({"owner": "alice", "conversation_id": live}, LambdaContext())
    # Then it is untouched
    assert items_in("alice", live) == before
    # Given a conversation deleted with a retention of 0 days (expired at once)
    monkeypatch.setenv("RETENTION_DAYS", "0")
    renew()
    expired = conversation_with(2)
    assert api.delete(expired).status == 204
    left = items_in("alice", expired)
    assert META_SK in left
    # When it is named
    result = handler({"owner": "alice", "conversation_id": expired}, LambdaContext())
    # Then its partition, conversation item included, is purged
    assert result["deleted"] == len(left)
    assert items_in("alice", expired) == []


def test_no_summary_is_written_into_a_purged_partition(stream: TableStream) -> None:
    """Retention + seed 001: a summary that finishes after the purge is refused (the conversation item is
    gone), so no item is left behind in a purged partition."""
    # Given a purged conversation
    doomed = conversation_with(2)
    assert api.delete(doomed).status == 204
    purge(for_function(PURGE, ttl_removes("alice", doomed, stream)))
    # When a summarizer that started earlier stores its result
    late = SummaryRecord(
        conversation_id=doomed,
        from_seq=1,
        to_seq=2,
        text="late",
        model="m",
        created_at="2025-01-01T00:00:00.000000Z",
    )
    with pytest.raises(SummarySuperseded):
        save_summary(late, previous_to_seq=None, owner="alice")
    # Then the partition stays empty
    assert items_in("alice", doomed) == []


def test_sample_events_pass_the_filter_and_run(chat_service: None) -> None:
    """AGT-1: events/purge_conversation*.json (`sam local invoke -e`): the TTL sample passes the
    template's filter and purges nothing on an empty table; the direct sample is accepted too."""
    import json
    from pathlib import Path

    events_dir = Path(__file__).resolve().parents[2] / "events"
    stream_event = json.loads((events_dir / "purge_conversation.json").read_text(encoding="utf-8"))
    direct = json.loads((events_dir / "purge_conversation_direct.json").read_text(encoding="utf-8"))
    # Given the samples / Then the stream one is delivered by the event source mapping
    assert for_function(PURGE, stream_event["Records"]) == stream_event["Records"]
    handler = api.load("purge_conversation").lambda_handler
    # When both are invoked on an empty table
    from_stream = handler(stream_event, LambdaContext())
    from_direct = handler(direct, LambdaContext())
    # Then the conversation is recognised and its (empty) partition purged without error
    assert from_stream["conversations"] == 1
    assert from_stream["deleted"] == 0
    assert from_direct["deleted"] == 0
