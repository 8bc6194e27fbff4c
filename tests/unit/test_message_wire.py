"""API-4: a window's messages are read straight from the Query's answer (`MessageRecord.from_wire`), and
read the same as through PynamoDB's model objects, attribute for attribute."""

from __future__ import annotations

from dataclasses import replace

import pytest
from chat_core.store.base import TableItem
from chat_core.store.records import MessageRecord, MessageUsage

BASE = MessageRecord(
    owner="alice#1%",
    conversation_id="01J0000000000000000000000A",
    seq=7,
    message_id="01J0000000000000000000007A",
    role="assistant",
    created_at="2026-11-27T00:00:00.000Z",
    content="hello",
)

VARIANTS = [
    BASE,
    replace(BASE, role="user", content="你好 🙂", tokens=12, tokens_encoding="o200k_base", parent_seq=3),
    replace(
        BASE,
        model="gpt-4o-mini",
        usage=MessageUsage(10, 5, 15),
        local_usage=MessageUsage(9, 5, 20),
        usage_reported=True,
        cost_micros=42,
        cost_status="reported",
        finish_reason="length",
        latency_ms=130,
        extras={"prompt_tokens_details": {"cached_tokens": 2}},
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        pinned=True,
        metadata={"n": 1, "tags": ["a"]},
        log='[{"t":"turn_end"}]',
        settings='{"store":false}',
    ),
    replace(BASE, role="tool", content="42", tool_call_id="c1", name="f", deleted_at="2026-11-27T01:00:00Z"),
    replace(
        BASE, status="error", content=None, error={"message": "boom"}, refusal="no", parts=[{"type": "text"}]
    ),
    replace(BASE, pending_totals={"reported": [1, 2, 3], "local": [1, 2]}),
]


@pytest.mark.parametrize("record", VARIANTS)
def test_a_message_reads_the_same_from_the_wire_as_through_its_model(record: MessageRecord) -> None:
    # Given a message item as DynamoDB answers it
    wire = record.to_item().serialize()
    # When it is read straight from the wire and through PynamoDB's model
    direct = MessageRecord.from_wire(wire)
    modelled = MessageRecord.of(TableItem.from_raw_data(wire))  # type: ignore[arg-type]
    # Then both records are equal, and equal to what was written
    assert direct == modelled == record


def test_an_item_of_another_kind_is_not_taken_for_a_message() -> None:
    wire = BASE.to_item().serialize()
    assert MessageRecord.from_wire({**wire, "type": {"S": "conversation"}}) is None
    assert MessageRecord.from_wire({k: v for k, v in wire.items() if k != "type"}) is None


def test_a_message_left_without_usage_totals_reads_them_as_the_model_does() -> None:
    # A usage map without its total (prompt + completion) and a local one holding only a prompt count
    wire = replace(BASE, usage=MessageUsage(3, 4, 7), local_usage=MessageUsage(5, 0, 5)).to_item().serialize()
    wire["local_usage"] = {"M": {"prompt_tokens": {"N": "5"}}}
    assert MessageRecord.from_wire(wire) == MessageRecord.of(TableItem.from_raw_data(wire))  # type: ignore[arg-type]
