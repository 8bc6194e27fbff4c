"""A paid reply is never lost, and every retried transaction is idempotent (REL-2, REL-3, REL-4).

Faults are injected inside botocore (tests/reliability/faults.py) in front of moto, which here honours
ClientRequestToken as DynamoDB does (chat_local.moto_fidelity).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chat_core.chat import deadlines
from chat_local import moto_fidelity

from tests.reliability.faults import LOST_RESPONSE, DynamoFaults, injected
from tests.support import functions as api
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

ZERO = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
# Every write that touches a conversation item names its sort key.
CONVERSATION_ITEM = '"~META"'


@pytest.fixture
def faults(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoFaults]:
    with injected(monkeypatch) as installed:
        yield installed


def _exact(conversation_id: str) -> list[dict[str, Any]]:
    """message_count is the number of stored messages; usage totals are the sums over them."""
    detail = api.detail(conversation_id).body
    messages = detail["messages"]
    assert detail["message_count"] == len(messages)
    for key in ZERO:
        assert detail["usage"][key] == sum(m.get("usage", ZERO)[key] for m in messages), key
    # COST-2: and so is the cost
    assert detail["cost"]["micros"] == sum((m.get("cost") or {}).get("micros") or 0 for m in messages)
    return list(messages)


@pytest.mark.parametrize("which", ["first", "second"])
def test_a_transaction_whose_answer_is_lost_after_commit_is_a_success(
    faults: DynamoFaults, which: str
) -> None:
    """REL-2: TransactWrite #1 or #2 commits but its response is lost; botocore resends it with the same
    ClientRequestToken and the post answers 201, each message stored once."""
    # Given a conversation, and the next post's first (or second) transaction answered by a lost response
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", LOST_RESPONSE, skip=0 if which == "first" else 1, times=1)
    # When a message is posted
    answer = api.post("are you there?", conversation_id)
    # Then it succeeded once: 201, no duplicate, counters exact
    assert answer.status == 201, answer.body
    assert faults.injected["TransactWriteItems"] == 1
    messages = _exact(conversation_id)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["first", "are you there?"]
    assert messages[-1]["message_id"] == answer.body["assistant_message"]["message_id"]


def test_a_lost_answer_is_recognised_even_when_the_token_has_expired(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-2: past DynamoDB's 10-minute token window the resend fails its conditions; the post sees its own
    reply in the slot and still answers 201."""
    # Given tokens forgotten at once, and the next post's TransactWrite #2 answered by a lost response
    monkeypatch.setattr(moto_fidelity, "WINDOW_S", -1.0)
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", LOST_RESPONSE, skip=1, times=1)
    # When a message is posted
    answer = api.post("still there?", conversation_id)
    # Then 201 and one reply
    assert answer.status == 201, answer.body
    assert len(_exact(conversation_id)) == 4


@pytest.mark.parametrize("next_post", ["first attempt", "reserved slots"])
def test_a_reply_is_stored_alone_when_the_conversation_stays_contended(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch, next_post: str
) -> None:
    """REL-4: TransactWrite #2 keeps conflicting on the conversation item past its deadline -> the reply is
    stored on its own (201), and the next post (on its first attempt, or after losing the race and
    reserving its slots) folds its totals into the conversation."""
    # Given no time to retry, and the next post's TransactWrite #2 conflicting on the conversation item
    monkeypatch.setattr(deadlines, "STORE_MARGIN_S", 0.0)
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail(
        "TransactWriteItems", "TransactionCanceled:TransactionConflict", skip=1, when=CONVERSATION_ITEM
    )
    # When a message is posted
    answer = api.post("busy?", conversation_id)
    faults.clear()
    # Then the user gets the reply, and it is stored
    assert answer.status == 201, answer.body
    stored = api.detail(conversation_id).body["messages"]
    assert stored[-1]["message_id"] == answer.body["assistant_message"]["message_id"]
    assert stored[-1]["content"] == answer.body["assistant_message"]["content"]
    # When the next post lands
    if next_post == "reserved slots":
        faults.fail("TransactWriteItems", "TransactionCanceled:ConditionalCheckFailed", times=1)
    assert api.post("and now?", conversation_id).status == 201
    # Then the totals include the reply stored alone, exactly once
    messages = _exact(conversation_id)
    assert len(messages) == 6
    assert api.detail(conversation_id).body["turn_count"] == 3
    # And so does the user's usage of the day (COST-3)
    totals = api.usage().body["totals"]
    replies = [m for m in messages if m["role"] == "assistant"]
    assert totals["calls"] == 3
    assert totals["cost"]["micros"] == sum(m["cost"]["micros"] for m in replies)
    assert totals["prompt_tokens"] == sum(m["usage"]["prompt_tokens"] for m in replies)


def test_concurrent_posts_that_lose_the_race_take_their_own_slots(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-5: a post whose TransactWrite #1 loses the race for the next sequence number reserves its slots
    with one atomic update instead of re-reading in a loop; order and counters stay exact."""
    # Given a conversation, and the next post's TransactWrite #1 losing the race once
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "TransactionCanceled:ConditionalCheckFailed", times=1)
    # When a message is posted
    answer = api.post("second", conversation_id)
    # Then it landed in its own slots, with its own turn number
    assert answer.status == 201, answer.body
    messages = _exact(conversation_id)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["first", "second"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert faults.calls["UpdateItem"] == 1
    assert api.detail(conversation_id).body["turn_count"] == 2


def test_a_reservation_meeting_a_transaction_is_retried(faults: DynamoFaults) -> None:
    """REL-5: the atomic reservation meets a transaction on the conversation item
    (TransactionConflictException): it is retried and the post lands."""
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "TransactionCanceled:ConditionalCheckFailed", times=1)
    faults.fail("UpdateItem", "TransactionConflictException", times=1)
    answer = api.post("second", conversation_id)
    assert answer.status == 201, answer.body
    assert faults.injected["UpdateItem"] == 1
    assert [m["content"] for m in _exact(conversation_id) if m["role"] == "user"] == ["first", "second"]


def test_a_post_that_cannot_get_its_turn_answers_409_in_time(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-5: a post that keeps losing to other writers answers 409 conversation_busy with Retry-After
    once TURN_WAIT_SECONDS are over, instead of hanging; nothing of it is stored."""
    monkeypatch.setenv("TURN_WAIT_SECONDS", "0.5")
    renew()
    conversation_id = api.post("first").body["conversation_id"]
    # Every transaction after the first conflicts: the post can never write into a slot
    faults.fail("TransactWriteItems", "TransactionCanceled:TransactionConflict")
    answer = api.post("never", conversation_id)
    assert answer.status == 409, answer.body
    assert answer.error_code == "conversation_busy"
    assert answer.headers.get("Retry-After")
    assert [m["content"] for m in api.detail(conversation_id).body["messages"]] != []
    assert "never" not in [m["content"] for m in api.detail(conversation_id).body["messages"]]
