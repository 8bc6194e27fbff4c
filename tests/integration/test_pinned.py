"""Pinned messages (AGT-1, WIN-3, seed 001 "保留重要消息"): kept before other history."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support import functions as api
from tests.support.agent_api import pin, pin_event
from tests.support.functions import invoke
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _long_conversation(turns: int = 8, system_prompt: str | None = None) -> tuple[str, list[dict[str, str]]]:
    """A conversation of `turns` user/assistant pairs (longer than the 10-message window, WIN-2)."""
    created = api.create(system_prompt=system_prompt) if system_prompt else None
    conversation_id = created.body["conversation_id"] if created else None
    for n in range(turns):
        answer = api.post(f"fact {n}: the code is {1000 + n}", conversation_id)
        assert answer.status == 201
        conversation_id = answer.body["conversation_id"]
    assert conversation_id is not None
    return conversation_id, api.detail(conversation_id).body["messages"]


def test_pinned_old_message_survives_trimming_in_window_and_model_request(standin_llm: OpenAIStandin) -> None:
    """WIN-3 pinned: a message far outside the window is kept, before other history, in what is sent."""
    # Given a conversation of 16 messages whose first user message has left the 10-message window
    conversation_id, messages = _long_conversation(8, system_prompt="Remember the codes.")
    first = messages[0]
    assert first["content"] == "fact 0: the code is 1000"
    before = api.window(conversation_id, "which code first?").body["messages"]
    assert first["content"] not in [m["content"] for m in before]
    # When the user pins it
    answer = pin(conversation_id, first["message_id"])
    # Then it is answered with the message, marked pinned
    assert answer.status == 200
    assert answer.body["message_id"] == first["message_id"]
    assert answer.body["pinned"] is True
    # And the window route keeps it right after the system prompt, within the 10-message cap
    window = api.window(conversation_id, "which code first?").body
    assert window["messages"][0] == {"role": "system", "content": "Remember the codes."}
    assert window["messages"][1] == {"role": "user", "content": "fact 0: the code is 1000"}
    assert len(window["messages"]) - 1 <= 10
    # And the model receives exactly that on the next post
    api.post("which code first?", conversation_id)
    sent = standin_llm.completion_requests[-1].json["messages"]
    assert sent == window["messages"]
    # And the conversation lists it as pinned; the detail marks the message
    detail = api.detail(conversation_id).body
    assert detail["pinned_message_ids"] == [first["message_id"]]
    assert detail["messages"][0]["pinned"] is True


def test_pinned_message_inside_history_is_kept_when_caps_trim(chat_service: None) -> None:
    """WIN-3 pinned within the fetched history: it stays even when the character cap cuts older ones."""
    # Given a conversation whose window is cut by the character cap (WIN-2: 5000 characters)
    conversation_id = api.post("tiny first").body["conversation_id"]
    api.post("x" * 2400, conversation_id)
    api.post("y" * 2400, conversation_id)
    messages = api.detail(conversation_id).body["messages"]
    window = api.window(conversation_id, "z").body["messages"]
    assert "tiny first" not in [m["content"] for m in window]
    # When the first message is pinned
    assert pin(conversation_id, messages[0]["message_id"]).status == 200
    # Then the window keeps it first among the history
    window = api.window(conversation_id, "z").body["messages"]
    assert window[0] == {"role": "user", "content": "tiny first"}
    assert window[-1] == {"role": "user", "content": "z"}


def test_unpinning_returns_the_message_to_normal_trimming(chat_service: None) -> None:
    """WIN-3: {"pinned": false} removes the pin; the old message leaves the window again."""
    conversation_id, messages = _long_conversation(8)
    first = messages[0]
    pin(conversation_id, first["message_id"])
    # When it is unpinned
    answer = pin(conversation_id, first["message_id"], False)
    # Then the answer has no pin and the window no longer holds the message
    assert answer.status == 200
    assert "pinned" not in answer.body
    window = api.window(conversation_id, "q").body["messages"]
    assert first["content"] not in [m["content"] for m in window]
    assert api.detail(conversation_id).body["pinned_message_ids"] == []


def test_pinning_twice_is_idempotent(chat_service: None) -> None:
    """PATCH is idempotent: pinning a pinned message changes nothing."""
    conversation_id, messages = _long_conversation(1)
    for _ in range(2):
        assert pin(conversation_id, messages[0]["message_id"]).status == 200
    assert api.detail(conversation_id).body["pinned_message_ids"] == [messages[0]["message_id"]]


def test_post_with_pinned_messages_is_still_one_query(chat_service: None, dynamo_calls: Counter[str]) -> None:
    """API-4 with pins: the pinned copies ride on the conversation item; a post stays 1 Query + 2 writes."""
    conversation_id, messages = _long_conversation(8)
    pin(conversation_id, messages[0]["message_id"])
    pin(conversation_id, messages[3]["message_id"])
    dynamo_calls.clear()
    assert api.post("next", conversation_id).status == 201
    assert dynamo_calls == Counter({"Query": 1, "TransactWriteItems": 2})


@pytest.mark.parametrize(
    "case", ["other_user", "unknown_message", "malformed_message", "unknown_conversation"]
)
def test_pin_is_404_for_what_the_caller_cannot_see(chat_service: None, case: str) -> None:
    """API-8 isolation on PATCH: another user's conversation, unknown or malformed ids -> 404."""
    conversation_id, messages = _long_conversation(1)
    target, message_id, user = conversation_id, messages[0]["message_id"], "alice"
    expected = "conversation_not_found"
    if case == "other_user":
        user = "bob"
    elif case == "unknown_message":
        message_id, expected = "01JD8ZQ5N6Y4T3W2V1S0R9P8QM", "message_not_found"
    elif case == "malformed_message":
        message_id, expected = "nope", "message_not_found"
    else:
        target = "01JD8ZQ5N6Y4T3W2V1S0R9P8QM"
    answer = pin(target, message_id, user=user)
    assert answer.status == 404
    assert answer.error_code == expected
    assert api.detail(conversation_id).body["pinned_message_ids"] == []


@pytest.mark.parametrize("body", [{}, {"pinned": "yes"}, {"pinned": 1}, {"pinned": True, "colour": "red"}])
def test_pin_bad_body_is_422(chat_service: None, body: dict[str, object]) -> None:
    """API-5 on PATCH: the body must be exactly {"pinned": true|false}."""
    conversation_id, messages = _long_conversation(1)
    answer = invoke("update_message", pin_event(conversation_id, messages[0]["message_id"], body))
    assert answer.status == 422
    assert answer.error_code == "validation_error"


def test_tool_messages_and_failed_replies_cannot_be_pinned(standin_llm: OpenAIStandin) -> None:
    """WIN-3 tool groups: a call or result alone is never pinned (422); a failed reply neither."""
    conversation_id = api.post("hello").body["conversation_id"]
    recorded = api.post(
        "go",
        conversation_id,
        messages=[
            {"role": "assistant", "tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "r"},
        ],
    ).body["messages"]
    standin_llm.set_mode("error500")
    failed = api.post("fails", conversation_id).body["assistant_message"]
    for message_id in (recorded[0]["message_id"], recorded[1]["message_id"], failed["message_id"]):
        answer = pin(conversation_id, message_id)
        assert answer.status == 422
        assert answer.error_code == "pin_refused"


def test_at_most_twenty_pins(chat_service: None) -> None:
    """AGT-1 bound: the conversation item holds at most 20 pinned messages; the 21st is 422."""
    conversation_id, messages = _long_conversation(11)
    for message in messages[:20]:
        assert pin(conversation_id, message["message_id"]).status == 200
    answer = pin(conversation_id, messages[20]["message_id"])
    assert answer.status == 422
    assert answer.error_code == "pin_refused"
    assert "20" in answer.body["error"]["message"]
    assert len(api.detail(conversation_id).body["pinned_message_ids"]) == 20


def test_pin_without_identity_is_401(chat_service: None) -> None:
    """API-8: no identity is 401 on PATCH too; nothing changes."""
    conversation_id, messages = _long_conversation(1)
    answer = pin(conversation_id, messages[0]["message_id"], user=None)
    assert answer.status == 401
    assert api.detail(conversation_id).body["pinned_message_ids"] == []
