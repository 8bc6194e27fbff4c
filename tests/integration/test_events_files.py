"""events/*.json (for `sam local invoke -e`): each is a valid HTTP API v2 event its function answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.functions import invoke
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EVENTS = Path(__file__).resolve().parents[2] / "events"

# The sample ids name no stored conversation, so on an empty table those routes answer 404.
EXPECTED = {
    "create_conversation": 201,
    "post_message": 201,
    "list_conversations": 200,
    "get_conversation": 404,
    "delete_conversation": 404,
    "build_window": 404,
    "update_conversation": 404,
    "get_usage": 200,
    # COST-4: the sample caller is in chat-admins, the deployment's administrators here.
    "set_budget": 200,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_event_is_answered_by_its_function(
    chat_service: None, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STO-1: one API Gateway HTTP API v2 event per function, routed by that function."""
    # Given the sample event of the function (in a deployment whose administrators are chat-admins)
    monkeypatch.setenv("ADMIN_GROUP", "chat-admins")
    renew()
    event = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    assert event["version"] == "2.0"
    # When the function is invoked with it on an empty table
    answer = invoke(name, event)
    # Then it answers the route (not a route_not_found, not a 5xx)
    assert answer.status == EXPECTED[name], answer.body
    if answer.status == 404:
        assert answer.error_code == "conversation_not_found"
