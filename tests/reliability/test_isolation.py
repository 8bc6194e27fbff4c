"""API-7 (OWASP API1, broken object-level authorization) over real HTTP.

Every route of template.yaml (routes added later included) is called as another user, on a deleted
conversation, on a nonexistent one and with malformed ids: never a 5xx, never internal text, never a
byte of someone else's data; conversation-scoped routes answer 4xx (404 for a well-formed id). A cursor
is bound to the user and the listing it came from.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from chat_core.store.keys import new_id

from tests.reliability.conftest import ClientFactory
from tests.reliability.leaks import assert_clean
from tests.reliability.routes import Route, http_routes
from tests.reliability.samples import QUERIES, body_for, dialogue_entries
from tests.support.local_server import ServerProcess

pytestmark = [pytest.mark.reliability, pytest.mark.e2e]

SECTION = "isolation"
RUN = uuid.uuid4().hex[:8]
ALICE, BOB = f"iso-alice-{RUN}", f"iso-bob-{RUN}"
SECRET = f"SECRET-{RUN}"  # in everything alice stores
BURIED = f"BURIED-{RUN}"  # in alice's deleted conversation
SCENARIOS = ("another user", "deleted", "nonexistent", "malformed")


@pytest.fixture(scope="module")
def alice_data(rel_server: ServerProcess) -> dict[str, Any]:
    """Alice's live conversation (two turns), a deleted one, a dialogue world, all carrying markers."""
    with httpx.Client(base_url=rel_server.url, headers={"X-User-Id": ALICE}, timeout=60) as alice:
        live = alice.post(
            "/conversations", json={"title": SECRET, "system_prompt": f"{SECRET} prompt"}
        ).json()
        first = alice.post("/messages", json={"conversation_id": live["conversation_id"], "content": SECRET})
        alice.post("/messages", json={"conversation_id": live["conversation_id"], "content": f"{SECRET} 2"})
        gone = alice.post("/messages", json={"content": f"{BURIED} words"}).json()
        assert alice.delete(f"/conversations/{gone['conversation_id']}").status_code == 204
        world = alice.post(f"/worlds/iso-world-{RUN}/dialogues/entries", json=dialogue_entries(SECRET))
        assert world.status_code in (200, 201), world.text
        for n in range(2):
            alice.post("/messages", json={"content": f"{SECRET} filler {n}"})
        snapshot = alice.get(f"/conversations/{live['conversation_id']}").json()
    return {
        "live": live["conversation_id"],
        "message": first.json()["user_message"]["message_id"],
        "deleted": gone["conversation_id"],
        "deleted_message": gone["user_message"]["message_id"],
        "world": f"iso-world-{RUN}",
        "snapshot": snapshot,
    }


def _request(scenario: str, data: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """Who asks, and the ids the request names, for a scenario."""
    if scenario == "another user":
        return BOB, {
            "conversation_id": data["live"],
            "message_id": data["message"],
            "world_id": data["world"],
        }
    if scenario == "deleted":
        ids = {"conversation_id": data["deleted"], "message_id": data["deleted_message"]}
        return ALICE, {**ids, "world_id": f"never-{RUN}"}
    if scenario == "nonexistent":
        return ALICE, {"conversation_id": new_id(), "message_id": new_id(), "world_id": f"none-{RUN}"}
    return ALICE, {"conversation_id": "not-an-id", "message_id": "../../x", "world_id": "bad world!"}


def _conversation_scoped(route: Route) -> bool:
    return "conversation_id" in route.params or route.key == "POST /messages"


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("route", http_routes(), ids=str)
def test_no_route_reaches_what_is_not_the_callers(
    route: Route, scenario: str, alice_data: dict[str, Any], counted_client: ClientFactory
) -> None:
    """API-7: every route x {another user, deleted, nonexistent, malformed id}."""
    # Given alice's data, and a caller and ids for the scenario
    user, ids = _request(scenario, alice_data)
    client = counted_client(user, SECTION)
    body = body_for(route.key, ids, marker="probe")
    # When the route is called with them
    kwargs: dict[str, Any] = {"params": QUERIES.get(route.key)}
    if isinstance(body, str):
        kwargs["content"] = body.encode()
        kwargs["headers"] = {"Content-Type": "application/x-ndjson"}
    elif route.method in ("POST", "PUT", "PATCH"):
        kwargs["json"] = body
    response = client.request(route.method, route.url(ids), **kwargs)
    # Then: no 5xx, nothing internal, nothing of alice's that this request may not see
    assert response.status_code < 500, response.text
    assert_clean(response.status_code, response.text, f"{route.key} {scenario}")
    assert BURIED not in response.text
    if user == BOB:
        assert SECRET not in response.text
    # And a conversation-scoped route refuses: 404 for a well-formed id, some 4xx for a malformed one
    if _conversation_scoped(route):
        if scenario == "malformed":
            assert 400 <= response.status_code < 500, response.text
        else:
            assert response.status_code == 404, response.text


def test_other_users_requests_changed_nothing_of_alices(
    rel_server: ServerProcess, alice_data: dict[str, Any], counted_client: ClientFactory
) -> None:
    """API-7: after bob's posts, deletes, pins and windows on alice's ids, her data is as it was."""
    # Given the isolation requests above have run (module order), When alice reads her conversation
    alice = counted_client(ALICE, SECTION)
    now = alice.get(f"/conversations/{alice_data['live']}").json()
    # Then nothing changed, her deleted conversation stays deleted, her listing has no one else's
    assert now["messages"] == alice_data["snapshot"]["messages"]
    assert now["message_count"] == alice_data["snapshot"]["message_count"]
    assert alice.get(f"/conversations/{alice_data['deleted']}").status_code == 404
    mine = {c["conversation_id"] for c in alice.get("/conversations", params={"limit": 100}).json()["items"]}
    bobs = counted_client(BOB, SECTION).get("/conversations", params={"limit": 100}).json()["items"]
    assert bobs, "bob's scenario created conversations of his own"
    assert mine.isdisjoint(c["conversation_id"] for c in bobs)
    assert alice_data["live"] in mine
    history = alice.get(
        f"/worlds/{alice_data['world']}/history", params=QUERIES["GET /worlds/{world_id}/history"]
    )
    assert history.status_code == 200
    assert "probe" not in history.text


def test_a_cursor_is_useless_to_another_user(
    alice_data: dict[str, Any], counted_client: ClientFactory
) -> None:
    """API-7: cursors are bound to their owner and listing: another user gets 400/404, never a page."""
    # Given alice's cursors for her listing and for a conversation's messages
    alice, bob = counted_client(ALICE, SECTION), counted_client(BOB, SECTION)
    list_cursor = alice.get("/conversations", params={"limit": 1}).json()["next_cursor"]
    detail = alice.get(f"/conversations/{alice_data['live']}", params={"limit": 1}).json()
    message_cursor = detail["next_cursor"]
    assert list_cursor
    assert message_cursor
    own = bob.post("/messages", json={"content": "bob's own"}).json()["conversation_id"]
    # When bob uses them on his listing, on his conversation and on hers
    on_list = bob.get("/conversations", params={"limit": 1, "cursor": list_cursor})
    on_his = bob.get(f"/conversations/{own}", params={"cursor": message_cursor})
    on_hers = bob.get(f"/conversations/{alice_data['live']}", params={"cursor": message_cursor})
    swapped = alice.get("/conversations", params={"cursor": message_cursor})
    # Then none of them yields a page
    assert on_list.status_code == 400
    assert on_list.json()["error"]["code"] == "invalid_cursor"
    assert on_his.status_code == 400
    assert on_hers.status_code in (400, 404)
    assert swapped.status_code == 400  # a messages cursor is not a listing cursor, even for its owner
    for response in (on_list, on_his, on_hers, swapped):
        assert SECRET not in response.text
        assert_clean(response.status_code, response.text, "cursor")
