"""STO-1/§9 key layout: owner-prefixed keys that no owner id can forge, time-sortable validated ids."""

from __future__ import annotations

from chat_core.store.keys import (
    META_SK,
    conversation_pk,
    escape_owner,
    is_valid_id,
    is_valid_owner,
    message_sk,
    new_id,
    owner_pk,
)
from hypothesis import given
from hypothesis import strategies as st


def test_keys_follow_the_documented_layout() -> None:
    """DES-1: pk = USER#<owner>#CONV#<id>, sk = MSG#<zero-padded seq> or ~META, gsi1pk = USER#<owner>."""
    # Given an owner and a conversation id
    # When keys are built
    # Then they have the documented shape, and ~META sorts after every message
    assert (
        conversation_pk("alice", "01J0000000000000000000000Z") == "USER#alice#CONV#01J0000000000000000000000Z"
    )
    assert owner_pk("alice") == "USER#alice"
    assert message_sk(7) == "MSG#0000000007"
    assert message_sk(9_999_999_999) < META_SK
    assert message_sk(9) < message_sk(10)


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_distinct_owners_never_share_a_key_prefix(a: str, b: str) -> None:
    """STO-1: owner escaping is injective, so one owner's prefix is never another's (even with '#')."""
    # Given two different owner ids
    if a == b:
        return
    # When their listing keys are built
    # Then neither is the other nor a prefix that reaches into the other's partitions
    assert escape_owner(a) != escape_owner(b)
    assert not conversation_pk(b, "X").startswith(owner_pk(a) + "#")


def test_ids_are_valid_unique_and_time_sortable() -> None:
    """Conversation ids are generated server-side, 26 characters, sortable by creation time."""
    # Given ids made at increasing times
    ids = [new_id(now_ms=ms) for ms in (1_000, 2_000, 3_000)]
    # Then they are valid and in time order, and fresh ids differ
    assert all(is_valid_id(i) for i in ids)
    assert ids == sorted(ids)
    assert new_id() != new_id()


def test_malformed_ids_and_owners_are_rejected() -> None:
    """API-5: ids that could carry a separator, and unusable owners, are refused before any key is built."""
    # Given malformed values
    # Then they are invalid
    for bad in ("", "short", "01J0000000000000000000000#", "01j0000000000000000000000z", "X" * 27):
        assert not is_valid_id(bad)
    for bad in ("", " ", "a\x00b", "x" * 513):
        assert not is_valid_owner(bad)
    assert is_valid_owner("auth0|5f7c8ec7c33c6c004bbafe82")
