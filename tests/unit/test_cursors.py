"""API-8 opaque cursors: signed for one owner and one listing, checked against the caller's keys."""

from __future__ import annotations

import pytest
from chat_core.chat.paging import decode_cursor, encode_cursor
from chat_core.errors import InvalidCursor
from chat_core.settings import Settings

SETTINGS = Settings(table_name="t", cursor_secret="s3cret")
KEY = {"pk": "USER#alice#CONV#X", "sk": "MSG#0000000005"}


def _always(key: object) -> bool:
    return True


def test_cursor_round_trips_for_its_owner_and_scope() -> None:
    """A cursor decodes to the key it was made from, for the same owner and listing."""
    # Given a cursor made for alice's message listing
    cursor = encode_cursor("alice", "messages:X", KEY, SETTINGS)
    # When alice sends it back
    # Then it yields the key
    assert decode_cursor("alice", "messages:X", cursor, _always, SETTINGS) == KEY


@pytest.mark.parametrize(
    ("owner", "scope"), [("bob", "messages:X"), ("alice", "messages:Y"), ("alice", "conversations")]
)
def test_cursor_is_useless_to_another_owner_or_listing(owner: str, scope: str) -> None:
    """API-8: another user's cursor (or one from another listing) is 400 invalid_cursor."""
    # Given alice's cursor
    cursor = encode_cursor("alice", "messages:X", KEY, SETTINGS)
    # When it is used by someone else or elsewhere
    # Then it is refused
    with pytest.raises(InvalidCursor):
        decode_cursor(owner, scope, cursor, _always, SETTINGS)


def test_cursor_signed_with_another_secret_is_refused() -> None:
    """A cursor from another deployment (other CURSOR_SECRET) is refused."""
    # Given a cursor of another deployment
    cursor = encode_cursor("alice", "conversations", KEY, Settings(table_name="t", cursor_secret="other"))
    # Then it is refused here
    with pytest.raises(InvalidCursor):
        decode_cursor("alice", "conversations", cursor, _always, SETTINGS)


def test_cursor_outside_the_callers_keys_is_refused_even_if_signed() -> None:
    """The key check is the real isolation: a well-signed cursor pointing elsewhere is still refused."""
    # Given a correctly signed cursor whose key fails the caller's check
    cursor = encode_cursor("alice", "conversations", KEY, SETTINGS)
    # Then it is refused
    with pytest.raises(InvalidCursor):
        decode_cursor("alice", "conversations", cursor, lambda key: False, SETTINGS)


@pytest.mark.parametrize(
    "garbage", ["", "x", "a.b.c", "!!!.???", "e30.", "." * 3000, "W10.AAAAAAAAAAAAAAAAAAAAAA"]
)
def test_garbage_cursor_is_invalid_cursor_not_a_crash(garbage: str) -> None:
    """API-5: any garbage is InvalidCursor (400), never another exception."""
    # Given garbage
    # Then decoding raises InvalidCursor
    with pytest.raises(InvalidCursor):
        decode_cursor("alice", "conversations", garbage, _always, SETTINGS)
