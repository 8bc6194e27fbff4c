"""EVT-1 / AGT-1: every function also takes a plain JSON payload (no API Gateway envelope)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import functions as api
from tests.support.agent_api import direct
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EVENTS = Path(__file__).resolve().parents[2] / "events"


def test_direct_create_post_get_list_window_events_pin_delete(chat_service: None) -> None:
    """EVT-1 direct invocation, each conversation function: same operation, plain JSON result."""
    # Given nothing; When a conversation is created directly
    created = direct("create_conversation", {"user_id": "alice", "body": {"title": "from a workflow"}})
    # Then the result is plain JSON: status and the parsed body
    assert created["statusCode"] == 201
    conversation_id = created["body"]["conversation_id"]
    assert created["body"]["title"] == "from a workflow"
    # When a message is posted directly (no envelope, body as an object)
    posted = direct(
        "post_message", {"user_id": "alice", "body": {"content": "hi", "conversation_id": conversation_id}}
    )
    assert posted["statusCode"] == 201
    assert posted["body"]["user_message"]["content"] == "hi"
    # Then the HTTP API sees the same data as alice, and the other functions answer directly too
    assert api.detail(conversation_id).body["message_count"] == 2
    listed = direct("list_conversations", {"user_id": "alice", "query": {"limit": 5}})
    assert [c["conversation_id"] for c in listed["body"]["items"]] == [conversation_id]
    detail = direct(
        "get_conversation", {"user_id": "alice", "path_parameters": {"conversation_id": conversation_id}}
    )
    assert [m["role"] for m in detail["body"]["messages"]] == ["user", "assistant"]
    window = direct(
        "build_window",
        {
            "user_id": "alice",
            "path_parameters": {"conversation_id": conversation_id},
            "body": {"content": "next"},
        },
    )
    assert window["statusCode"] == 200
    assert window["body"]["messages"][-1] == {"role": "user", "content": "next"}
    events = direct(
        "get_events", {"user_id": "alice", "path_parameters": {"conversation_id": conversation_id}}
    )
    assert events["statusCode"] == 200
    assert [e["type"] for e in events["body"]] == [
        "session_start",
        "turn_start",
        "assistant",
        "final",
        "turn_end",
    ]
    message_id = detail["body"]["messages"][0]["message_id"]
    pinned = direct(
        "update_message",
        {
            "user_id": "alice",
            "path_parameters": {"conversation_id": conversation_id, "message_id": message_id},
            "body": {"pinned": True},
        },
    )
    assert pinned["statusCode"] == 200
    assert pinned["body"]["pinned"] is True
    deleted = direct(
        "delete_conversation", {"user_id": "alice", "path_parameters": {"conversation_id": conversation_id}}
    )
    assert deleted["statusCode"] == 204
    assert deleted["body"] is None
    assert api.detail(conversation_id).status == 404


def test_direct_identity_is_the_payload_user(chat_service: None) -> None:
    """API-8 isolation holds for direct calls: user_id scopes every read like the JWT `sub` does."""
    conversation_id = api.post("alice's secret").body["conversation_id"]
    other = direct(
        "get_conversation", {"user_id": "bob", "path_parameters": {"conversation_id": conversation_id}}
    )
    assert other["statusCode"] == 404
    assert other["body"]["error"]["code"] == "conversation_not_found"


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"body": {"content": "hi"}}, 401, "unauthorized"),
        ({"user_id": "", "body": {"content": "hi"}}, 401, "unauthorized"),
        ({"user_id": "alice", "body": {"content": "hi"}, "colour": "red"}, 400, "invalid_input"),
        (
            {"user_id": "alice", "route": "GET /conversations", "body": {"content": "hi"}},
            400,
            "invalid_input",
        ),
        ({"user_id": "alice", "query": ["not", "an", "object"]}, 400, "invalid_input"),
        ({"user_id": "alice", "body": {"content": 5}}, 422, "validation_error"),
        ({"user_id": "alice", "body": "{not json"}, 415, "unsupported_media_type"),
    ],
)
def test_bad_direct_payloads_get_the_one_error_shape(
    chat_service: None, payload: dict[str, Any], status: int, code: str
) -> None:
    """API-5 for direct invocation: no identity 401, malformed payloads 4xx, never a 500 or a crash."""
    result = direct("post_message", payload)
    assert result["statusCode"] == status
    assert result["body"]["error"]["code"] == code
    assert result["body"]["error"]["message"]
    assert api.listing().body["items"] == []


def test_direct_path_parameters_are_required_and_cannot_escape_the_route(chat_service: None) -> None:
    """Direct invocation: missing path parameters are 400; a '/' inside one stays inside it (404)."""
    missing = direct("get_conversation", {"user_id": "alice"})
    assert missing["statusCode"] == 400
    escaping = direct(
        "get_conversation", {"user_id": "alice", "path_parameters": {"conversation_id": "a/../b"}}
    )
    assert escaping["statusCode"] == 404


def test_direct_invocation_reaches_the_dialogue_functions_too(chat_service: None) -> None:
    """EVT-1 "each function": the shared resolver gives the dialogue routes direct invocation as well."""
    result = direct(
        "get_dialogue_history",
        {"user_id": "alice", "path_parameters": {"world_id": "colony-1"}, "query": {"participants": "a,b"}},
    )
    assert result["statusCode"] == 200
    assert result["body"]["primary"] == []


def test_direct_tool_result_post_continues_the_turn(standin_llm: OpenAIStandin) -> None:
    """AGT-1 from a workflow: a Step Functions task can post tool results directly."""
    standin_llm.set_mode("tool_call")
    asked = direct("post_message", {"user_id": "alice", "body": {"content": "weather?"}})
    call = asked["body"]["assistant_message"]["tool_calls"][0]
    standin_llm.set_mode("ok")
    body = {
        "conversation_id": asked["body"]["conversation_id"],
        "messages": [{"role": "tool", "tool_call_id": call["id"], "content": "sunny"}],
    }
    answered = direct("post_message", {"user_id": "alice", "body": body})
    assert answered["statusCode"] == 201
    assert answered["body"]["assistant_message"]["content"].startswith("Stand-in reply")


@pytest.mark.parametrize(
    ("name", "function", "status"),
    [
        ("direct_post_message", "post_message", 201),
        ("direct_get_events", "get_events", 404),
        ("direct_update_message", "update_message", 404),
    ],
)
def test_direct_sample_events_run_as_shipped(
    chat_service: None, name: str, function: str, status: int
) -> None:
    """AGT-1: events/direct_*.json are plain payloads their function answers (sam local invoke)."""
    # Given the sample payload (its ids name nothing stored, so reads of them are 404)
    payload = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    assert "requestContext" not in payload
    # When the function is invoked with it
    result = direct(function, payload)
    # Then it answers the route in plain JSON
    assert result["statusCode"] == status, result
    assert isinstance(result["body"], dict)


@pytest.mark.parametrize(("name", "status"), [("get_events", 404), ("update_message", 404)])
def test_http_sample_events_of_the_new_routes(chat_service: None, name: str, status: int) -> None:
    """events/<name>.json are HTTP API v2 events their function routes (404: the sample ids name nothing)."""
    event = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    assert event["version"] == "2.0"
    answer = api.invoke(name, event)
    assert answer.status == status
    assert answer.error_code in {"conversation_not_found", "message_not_found"}
