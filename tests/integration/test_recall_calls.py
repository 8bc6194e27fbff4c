"""MEM-9: a post (and a window) with recall makes at most 3 more DynamoDB calls than without it, at 10,
1,000 and 10,000 messages, with a cold segment cache (the worst case)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from chat_core.chat.recall import upkeep as recall_upkeep
from chat_core.store.items import Conversation, Message
from chat_core.store.keys import message_id_for
from chat_core.store.recall import index as recall_index

from tests.support import functions as api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

WORDS = [
    "lisbon",
    "tokyo",
    "budget",
    "garden",
    "piano",
    "river",
    "coffee",
    "meeting",
    "train",
    "doctor",
    "invoice",
    "cat",
]


def seed(count: int) -> str:
    """A conversation of `count` messages (two posted, the rest written straight to the table)."""
    created = api.create(window_policy={"max_tokens": 2000})
    cid = str(created.body["conversation_id"])
    assert api.post("my cat is called Mochi", cid).status == 201
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    with Message.batch_write() as batch:
        for seq in range(3, count + 1):
            role = "user" if seq % 2 else "assistant"
            text = " ".join(WORDS[(seq * k) % len(WORDS)] for k in range(1, 9)) + f" number {seq}"
            item = Message(
                Conversation.key("alice", cid)[0],
                f"MSG#{seq:010d}",
                message_id=message_id_for(seq),
                seq=seq,
                role=role,
                content=text,
                created_at=now,
                tokens=20,
                **({"model": "gpt-4o-mini"} if role == "assistant" else {}),
            )
            batch.save(item)
    conversation = Conversation.get(*Conversation.key("alice", cid))
    conversation.update(actions=[Conversation.next_seq.set(count + 1), Conversation.message_count.set(count)])
    recall_upkeep.update_index("alice", cid)
    return cid


def calls_of(dynamo_calls: Counter[str], action: Any) -> Counter[str]:
    recall_index.clear_cache()
    dynamo_calls.clear()
    answer = action()
    assert answer.status in (200, 201), answer.body
    return Counter(dynamo_calls)


@pytest.mark.parametrize("count", [10, 1000, 10000])
def test_recall_adds_at_most_three_calls(chat_service: None, dynamo_calls: Counter[str], count: int) -> None:
    # Given a conversation of `count` messages, all indexed
    cid = seed(count)
    assert recall_index.read_tail("alice", cid).n_docs == count
    on = {"max_tokens": 2000, "recall": {"max_tokens": 500}}
    off = {"max_tokens": 2000}
    # When the same window is built with recall and without
    with_recall = calls_of(dynamo_calls, lambda: api.window(cid, "what is my cat called?", window_policy=on))
    without = calls_of(dynamo_calls, lambda: api.window(cid, "what is my cat called?", window_policy=off))
    # Then recall costs at most 3 more calls
    assert sum(with_recall.values()) - sum(without.values()) <= 3, (with_recall, without)
    # And so does a post
    assert api.update(cid, window_policy=off).status == 200
    post_without = calls_of(dynamo_calls, lambda: api.post("what is my cat called?", cid))
    assert api.update(cid, window_policy=on).status == 200
    post_with = calls_of(dynamo_calls, lambda: api.post("what is my cat called?", cid))
    assert sum(post_with.values()) - sum(post_without.values()) <= 3, (post_with, post_without)
    window = api.window(cid, "what is my cat called?", window_policy=on)
    first = next(e for e in window.body["inspect"]["entries"] if e["seq"] == 1)
    assert first["state"] == ("kept" if count == 10 else "recalled")
