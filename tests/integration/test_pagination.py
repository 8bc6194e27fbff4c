"""API-8 pagination: `limit` + opaque `cursor` on list and detail; cursors are useless to anyone else."""

from __future__ import annotations

import pytest

from tests.support import functions as api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def test_list_pages_through_every_conversation_newest_first(chat_service: None) -> None:
    """API-8 GET /conversations: pages of `limit`, newest updated_at first, no gaps or repeats."""
    # Given five conversations
    created = [api.post(f"c{n}").body["conversation_id"] for n in range(5)]
    # When the list is read two at a time
    pages, cursor = [], None
    while True:
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        answer = api.listing(**query)
        assert answer.status == 200
        pages.append([c["conversation_id"] for c in answer.body["items"]])
        cursor = answer.body["next_cursor"]
        if cursor is None:
            break
    # Then the pages hold 2, 2 and 1 conversations, newest first, all of them once
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [cid for page in pages for cid in page] == list(reversed(created))


def test_list_cursor_of_another_user_is_refused(chat_service: None) -> None:
    """API-8: another user's cursor is useless: 400 invalid_cursor, nothing of the owner leaks."""
    # Given alice has a next_cursor
    for n in range(3):
        api.post(f"a{n}", user="alice")
    cursor = api.listing(user="alice", limit="1").body["next_cursor"]
    assert cursor
    # When bob sends it
    answer = api.listing(user="bob", cursor=cursor)
    # Then it is refused
    assert answer.status == 400
    assert answer.error_code == "invalid_cursor"


def test_tampered_cursor_is_refused(chat_service: None) -> None:
    """API-8: a cursor edited by the client is 400, never a 500 or a read elsewhere."""
    # Given a valid cursor
    for n in range(3):
        api.post(f"t{n}")
    cursor = api.listing(limit="1").body["next_cursor"]
    payload, signature = cursor.split(".")
    # When one character of its payload is changed
    flipped = ("A" if payload[5] != "A" else "B").join([payload[:5], payload[6:]])
    answer = api.listing(cursor=f"{flipped}.{signature}")
    # Then it is refused
    assert answer.status == 400
    assert answer.error_code == "invalid_cursor"


def test_detail_pages_messages_oldest_first(chat_service: None) -> None:
    """API-8 GET /conversations/{id}: messages oldest first, `limit` per page, cursor to continue."""
    # Given a conversation of 14 messages
    conversation_id = api.post("m0").body["conversation_id"]
    for n in range(1, 7):
        api.post(f"m{n}", conversation_id)
    everything = api.detail(conversation_id).body
    # Then by default (100 per page) one page holds all of them
    assert len(everything["messages"]) == 14
    assert everything["next_cursor"] is None
    # When they are read five at a time
    seen, cursor = [], None
    while True:
        answer = api.detail(conversation_id, limit="5", **({"cursor": cursor} if cursor else {}))
        assert answer.status == 200
        seen.append(answer.body["messages"])
        cursor = answer.body["next_cursor"]
        if cursor is None:
            break
    # Then the pages hold 5, 5, 4 messages and together the whole conversation, in order
    assert [len(p) for p in seen] == [5, 5, 4]
    assert [m for page in seen for m in page] == everything["messages"]


def test_detail_cursor_is_bound_to_its_conversation_and_owner(chat_service: None) -> None:
    """API-8: a detail cursor works only on its conversation, for its owner."""
    # Given two conversations of alice and a cursor into the first
    first = api.post("x").body["conversation_id"]
    api.post("y", first)
    second = api.post("z").body["conversation_id"]
    cursor = api.detail(first, limit="1").body["next_cursor"]
    # When it is used on the other conversation, by another user, or on the list
    on_other = api.detail(second, cursor=cursor)
    by_bob = api.detail(first, user="bob", cursor=cursor)
    on_list = api.listing(cursor=cursor)
    # Then it is refused each time (bob's attempt may be a 400 or a 404, never alice's data)
    assert on_other.status == 400
    assert on_list.status == 400
    assert by_bob.status in (400, 404)
    assert "messages" not in (by_bob.body or {})
