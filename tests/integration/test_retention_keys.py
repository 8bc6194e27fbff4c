"""Retention never touches another partition: only a conversation's own key parses back to it (property)."""

from __future__ import annotations

import pytest
from chat_core.store.keys import conversation_pk, is_valid_owner, message_sk, new_id, owner_pk
from chat_core.store.partitions import parse_conversation_pk
from hypothesis import given
from hypothesis import strategies as st

owners = st.text(min_size=1, max_size=40).filter(is_valid_owner)
ids = st.integers(min_value=0, max_value=2**47).map(lambda ms: new_id(ms))


@given(owner=owners, conversation_id=ids)
def test_a_conversation_key_parses_back_to_its_owner_and_id(owner: str, conversation_id: str) -> None:
    """STO-1 owner-prefixed keys: owners with '#', '%' or '%23' round-trip through the escaped key."""
    # Given any valid owner and id / When the key is built and parsed / Then both come back unchanged
    assert parse_conversation_pk(conversation_pk(owner, conversation_id)) == (owner, conversation_id)


@given(owner=owners, conversation_id=ids)
def test_keys_of_other_items_are_not_conversation_keys(owner: str, conversation_id: str) -> None:
    """Retention: a listing key, a key with a suffix or a sort key never passes as a conversation key."""
    # Given keys that are not a conversation partition key / Then none parses
    assert parse_conversation_pk(owner_pk(owner)) is None
    assert parse_conversation_pk(conversation_pk(owner, conversation_id) + "#X") is None
    assert parse_conversation_pk(message_sk(1)) is None


@pytest.mark.parametrize(
    "key",
    [
        "USER#alice#CONV#not-an-id",
        "USER##CONV#01JABCDEFGHJKMNPQRSTVWXYZ0",
        "USER#a#b#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0",
        "USER#%41#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0",
        "WORLD#alice#CONV#01JABCDEFGHJKMNPQRSTVWXYZ0",
    ],
)
def test_malformed_keys_are_refused(key: str) -> None:
    """Retention: a key `conversation_pk` could not have built (raw '#', a foreign escape) is refused."""
    # When it is parsed / Then it is not taken for a conversation
    assert parse_conversation_pk(key) is None
