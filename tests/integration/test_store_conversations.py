"""STO-1 storage details the HTTP tests cannot reach directly: races with delete, template vs models."""

from __future__ import annotations

import pytest
from chat_core.engine.costs import Charge, TokenUse
from chat_core.store import conversations as store
from chat_core.store.base import TableItem
from chat_core.store.keys import new_id
from chat_core.store.records import MessageRecord, MessageUsage

from tests.support import functions as api
from tests.support.table import table_properties

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def test_reply_arriving_after_delete_is_kept_but_does_not_relist(chat_service: None) -> None:
    """STO-1 + soft delete: a reply landing after DELETE is stored; the conversation stays hidden."""
    # Given a conversation whose turn passed TransactWrite #1 (user message stored, reply slot reserved)
    conversation_id = api.post("first").body["conversation_id"]
    recent = store.read_recent("alice", conversation_id, 10)
    conversation = recent.conversation
    assert conversation is not None
    user = MessageRecord(
        owner="alice",
        conversation_id=conversation_id,
        seq=conversation.next_seq,
        message_id=new_id(),
        role="user",
        content="slow question",
        created_at="2025-01-01T00:00:00.000000Z",
        tokens=4,
    )
    store.append_user_message(conversation, user, user.created_at)
    # When the conversation is deleted while the model answers, and the reply is then recorded
    assert api.delete(conversation_id).status == 204
    reply = MessageRecord(
        owner="alice",
        conversation_id=conversation_id,
        seq=user.seq + 1,
        message_id=new_id(),
        role="assistant",
        content="late answer",
        created_at="2025-01-01T00:00:01.000000Z",
        tokens=4,
        model="gpt-4o",
        usage=MessageUsage(1000, 100, 1100),
        usage_reported=True,
        cost_micros=3500,
        cost_status="reported",
    )
    charge = Charge("gpt-4o", TokenUse(prompt=1000, completion=100), 3500, "reported")
    outcome = store.record_reply(
        conversation, reply, reply.created_at, reported=(1, 2, 3), local=(1, 2), charge=charge
    )
    # Then the reply is stored (nothing lost) and the conversation does not come back in the list
    assert outcome == store.STORED_DELETED
    assert store.read_turn("alice", conversation_id, user.seq)[1] is not None
    assert api.listing().body["items"] == []
    assert api.detail(conversation_id).status == 404
    # And the call it paid for is in the user's usage of that day, from the table's stream (COST-3)
    [day] = api.usage(from_="2025-01-01", to="2025-01-01").body["days"]
    assert (day["totals"]["calls"], day["totals"]["cost"]["micros"]) == (1, 3500)


def test_template_table_serves_the_store_models() -> None:
    """STO-1: the table in template.yaml has the keys, index and TTL attribute the models use."""
    # Given the template's table and the store's base model
    props = table_properties()
    # Then keys, the sparse index and the TTL attribute agree
    keys = {k["AttributeName"]: k["KeyType"] for k in props["KeySchema"]}
    assert keys == {TableItem.pk.attr_name: "HASH", TableItem.sk.attr_name: "RANGE"}
    index = {i["IndexName"]: i for i in props["GlobalSecondaryIndexes"]}["gsi1"]
    assert {k["AttributeName"] for k in index["KeySchema"]} == {"gsi1pk", "gsi1sk"}
    assert index["Projection"]["ProjectionType"] == "ALL"
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": TableItem.expires_at.attr_name,
        "Enabled": True,
    }
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
