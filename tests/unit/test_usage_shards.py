"""COST-4: where a post counts its reply's usage while budgets are on (pure, no I/O)."""

from __future__ import annotations

from chat_core.engine.costs import REPORTED, Charge, TokenUse
from chat_core.store import ledger
from chat_core.store.ledger import UsageDayRecord
from chat_core.store.records import MessageRecord


def test_a_retry_counts_in_another_shard_and_every_shard_is_one_of_a_few() -> None:
    """COST-4: a conversation's shard is fixed by its id, and each retry moves it on, within the shards."""
    # Given one conversation id
    # When its shards are taken for successive attempts
    shards = [ledger.shard_of("01CONVERSATION", attempt) for attempt in range(ledger.USAGE_SHARDS)]
    # Then the same attempt always names the same shard, each attempt another one, all of them in range
    assert ledger.shard_of("01CONVERSATION", 0) == shards[0]
    assert len(set(shards)) == ledger.USAGE_SHARDS
    assert {int(s) for s in shards} == set(range(ledger.USAGE_SHARDS))


def test_a_day_and_models_shards_add_up_to_one_record() -> None:
    """COST-3/COST-4: the stream's item and the shards posts counted in read as one day and model."""
    # Given two items of one day and model (the stream's and a shard) and one of another model
    streamed = UsageDayRecord("alice", "2026-01-02", "gpt-4o", calls=1, prompt_tokens=10, cost_micros=5)
    shard = UsageDayRecord("alice", "2026-01-02", "gpt-4o", calls=2, prompt_tokens=20, completion_tokens=3)
    # When they are added
    total = streamed.plus(shard)
    # Then every count is the sum, and the day and model stay
    assert total == UsageDayRecord(
        "alice", "2026-01-02", "gpt-4o", calls=3, prompt_tokens=30, completion_tokens=3, cost_micros=5
    )


def test_counted_updates_mark_what_they_count() -> None:
    """COST-4: the messages a post counts are marked, so the stream leaves them out; others are not."""
    # Given a priced reply carrying an embedding charge, and a user message
    embedding = Charge("text-embedding-3-small", TokenUse(prompt=7), 1, REPORTED)
    reply = MessageRecord(
        owner="alice",
        conversation_id="c1",
        seq=2,
        message_id="m2",
        role="assistant",
        created_at="2026-01-02T03:04:05.000Z",
        model="gpt-4o",
        cost_micros=100,
        cost_status=REPORTED,
        charges=[embedding.to_json()],
    )
    user = MessageRecord(
        owner="alice", conversation_id="c1", seq=1, message_id="m1", role="user", created_at=reply.created_at
    )
    # When the post's usage updates are made
    marked, updates = ledger.counted_updates("alice", [user, reply], "3")
    # Then only the reply is marked, and one update per model lands in shard 3 of its day
    assert [m.counted for m in marked] == [None, True]
    keys = sorted(item.sk for _, item, _, _ in updates)
    assert keys == ["DAY#2026-01-02#gpt-4o#3", "DAY#2026-01-02#text-embedding-3-small#3"]
