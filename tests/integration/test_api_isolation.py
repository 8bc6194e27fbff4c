"""API-8: 404 for anything of another user, deleted or nonexistent; 401 without identity — every route."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support import events
from tests.support import functions as api
from tests.support.functions import Answer, invoke

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

NONEXISTENT = "01J0000000000000000000000Z"

# Every route that names a conversation, as (name, call(conversation_id, user)).
ROUTES_WITH_ID: list[tuple[str, Callable[[str, str], Answer]]] = [
    ("post_message", lambda cid, user: api.post("hi", cid, user=user)),
    ("get_conversation", lambda cid, user: api.detail(cid, user=user)),
    ("delete_conversation", lambda cid, user: api.delete(cid, user=user)),
    ("build_window", lambda cid, user: api.window(cid, "hi", user=user)),
]


@pytest.fixture
def alices_conversation(chat_service: None) -> str:
    answer = api.post("alice's secret", user="alice")
    assert answer.status == 201
    return str(answer.body["conversation_id"])


@pytest.mark.parametrize(("route", "call"), ROUTES_WITH_ID, ids=[r for r, _ in ROUTES_WITH_ID])
def test_another_users_conversation_is_404(
    alices_conversation: str, route: str, call: Callable[[str, str], Answer]
) -> None:
    """API-8: a user only ever sees their own conversations; anything else is 404 (not 403)."""
    # Given alice's conversation
    # When bob uses its id on the route
    answer = call(alices_conversation, "bob")
    # Then bob gets 404, and alice's conversation is untouched
    assert answer.status == 404
    assert answer.error_code == "conversation_not_found"
    detail = api.detail(alices_conversation, user="alice")
    assert detail.status == 200
    assert len(detail.body["messages"]) == 2


def test_another_users_listing_is_empty(alices_conversation: str) -> None:
    """API-8/§5: listing is per owner; bob sees none of alice's conversations."""
    # Given alice's conversation
    # When bob lists his conversations
    answer = api.listing(user="bob")
    # Then he gets an empty list
    assert answer.status == 200
    assert answer.body == {"items": [], "next_cursor": None}


def test_owner_ids_with_separators_cannot_reach_other_keys(chat_service: None) -> None:
    """STO-1 owner-prefixed keys: an owner id containing '#' or '%' cannot forge another owner's prefix."""
    # Given conversations of "alice" and of a user whose id looks like a key fragment
    victim = api.post("victim", user="alice").body["conversation_id"]
    forger = "alice#CONV#" + victim
    # When the forger lists and reads with that id
    listing = api.listing(user=forger)
    detail = api.detail(victim, user=forger)
    # Then nothing of alice's is visible
    assert listing.body["items"] == []
    assert detail.status == 404
    # And the odd owner id still works for its own data
    own = api.post("mine", user="a%23b#c").body["conversation_id"]
    assert api.detail(own, user="a%23b#c").status == 200
    assert api.detail(own, user="a#b#c").status == 404


@pytest.mark.parametrize(("route", "call"), ROUTES_WITH_ID, ids=[r for r, _ in ROUTES_WITH_ID])
def test_deleted_conversation_is_404(
    alices_conversation: str, route: str, call: Callable[[str, str], Answer]
) -> None:
    """Seed 003 soft delete: after DELETE, every route answers 404 for that conversation."""
    # Given alice deleted her conversation
    assert api.delete(alices_conversation).status == 204
    # When she uses it on the route
    answer = call(alices_conversation, "alice")
    # Then it is 404 (a second delete too)
    assert answer.status == 404
    assert answer.error_code == "conversation_not_found"


@pytest.mark.parametrize(("route", "call"), ROUTES_WITH_ID, ids=[r for r, _ in ROUTES_WITH_ID])
@pytest.mark.parametrize(
    "conversation_id", [NONEXISTENT, "not-an-id", "x" * 64, "01J0000000000000000000000%23"]
)
def test_nonexistent_or_malformed_conversation_is_404(
    chat_service: None, route: str, call: Callable[[str, str], Answer], conversation_id: str
) -> None:
    """API-5: an unknown or malformed conversation id is a 404 JSON error, never a 500."""
    # Given no such conversation
    # When the route is called with the id
    answer = call(conversation_id, "alice")
    # Then it is 404 with the one error shape
    assert answer.status == 404
    assert answer.error_code == "conversation_not_found"
    assert answer.body["error"]["message"]


ANONYMOUS_EVENTS = {
    "create_conversation": lambda: events.create_conversation({"title": "x"}, user=None),
    "post_message": lambda: events.post_message({"content": "hi"}, user=None),
    "list_conversations": lambda: events.list_conversations(user=None),
    "get_conversation": lambda: events.get_conversation(NONEXISTENT, user=None),
    "delete_conversation": lambda: events.delete_conversation(NONEXISTENT, user=None),
    "build_window": lambda: events.build_window(NONEXISTENT, {"content": "hi"}, user=None),
}


@pytest.mark.parametrize("route", sorted(ANONYMOUS_EVENTS))
def test_no_identity_is_401(chat_service: None, route: str) -> None:
    """API-8: no identity -> 401 on every route."""
    # Given a request without a JWT sub
    event = ANONYMOUS_EVENTS[route]()
    # When it reaches the function
    answer = invoke(route, event)
    # Then it is refused with 401 in the one error shape
    assert answer.status == 401
    assert answer.error_code == "unauthorized"


@pytest.mark.parametrize("sub", ["", "   ", "a\nb", "x" * 513])
def test_unusable_identity_is_401(chat_service: None, sub: str) -> None:
    """API-8: a blank, control-character or oversized `sub` is no identity (401), not a key."""
    # Given a JWT whose sub is unusable
    # When the caller lists conversations
    answer = invoke("list_conversations", events.list_conversations(user=sub))
    # Then it is 401
    assert answer.status == 401


def test_no_identity_with_bad_body_is_still_401(chat_service: None) -> None:
    """API-8: identity is checked first: an anonymous request with a malformed body is 401, not 4xx."""
    # Given an anonymous request with malformed JSON
    event = events.post_message(raw_body="{nope", user=None)
    # When it reaches the function
    answer = invoke("post_message", event)
    # Then it is 401
    assert answer.status == 401
