"""API-13 tail rule: which messages of a Chat Completions request are new, given the stored conversation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from chat_core.chat.completions import new_messages, split_system, text_of
from chat_core.errors import InvalidInput
from chat_core.store.records import MessageRecord

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
}


def _stored(*messages: dict[str, Any]) -> list[MessageRecord]:
    items = []
    for seq, message in enumerate(messages, start=1):
        items.append(
            MessageRecord(
                owner="alice",
                conversation_id="c1",
                seq=seq,
                message_id=f"m{seq}",
                role=message["role"],
                content=message.get("content"),
                status=message.get("status", "ok"),
                created_at="2026-11-25T00:00:00Z",
                tool_calls=message.get("tool_calls"),
                tool_call_id=message.get("tool_call_id"),
                refusal=message.get("refusal"),
            )
        )
    return items


U1 = {"role": "user", "content": "one"}
A1 = {"role": "assistant", "content": "first answer"}
U2 = {"role": "user", "content": "two"}
A2 = {"role": "assistant", "content": "second answer"}
U3 = {"role": "user", "content": "three"}


def test_a_client_that_sends_only_what_is_new() -> None:
    assert new_messages([U3], _stored(U1, A1, U2, A2)) == [U3]


def test_a_client_that_resends_its_whole_history() -> None:
    assert new_messages([U1, A1, U2, A2, U3], _stored(U1, A1, U2, A2)) == [U3]


def test_a_client_whose_history_is_longer_than_what_was_read() -> None:
    """Only the newest stored messages are read: the request's tail is aligned with them."""
    assert new_messages([U1, A1, U2, A2, U3], _stored(U2, A2)) == [U3]


def test_the_last_message_is_always_new_even_when_it_repeats_the_last_stored_one() -> None:
    assert new_messages([U1, A1, U1], _stored(U1, A1)) == [U1]
    assert new_messages([U2], _stored(U1, A1, U2)) == [U2]


def test_a_failed_turn_is_not_part_of_the_stored_tail() -> None:
    """The client never got the error reply: its resend after a failed turn is still recognised."""
    stored = _stored(U1, A1, U2, {"role": "assistant", "content": "", "status": "error"})
    assert new_messages([U1, A1, U2], stored) == [U2]


def test_history_that_does_not_match_is_all_new() -> None:
    edited = {"role": "assistant", "content": "an answer the client rewrote"}
    assert new_messages([U1, edited, U2], _stored(U1, A1)) == [U1, edited, U2]


def test_tool_steps_match_on_their_calls_and_call_ids() -> None:
    asked = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "12 C"}
    stored = _stored(U1, asked)
    # a stateless agent resends the call and adds its result
    assert new_messages([U1, asked, result], stored) == [result]
    # a call with other arguments is another call
    other = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{**CALL, "function": {**CALL["function"], "arguments": "{}"}}],
    }
    assert new_messages([U1, other, result], stored) == [U1, other, result]


def test_a_refusal_sent_back_as_text_matches_the_stored_refusal() -> None:
    refused = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    echoed = {"role": "assistant", "content": "I can't help with that."}
    assert new_messages([U1, echoed, U2], _stored(U1, refused)) == [U2]


def test_system_messages_lead_and_text_parts_are_joined() -> None:
    system, rest = split_system(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        ]
    )
    assert system == "Be brief.\n\nUse metric units."
    assert rest == [{"role": "user", "content": "a\nb"}]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}],
        [{"role": "system", "content": "only a system prompt"}],
        [{"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}],
    ],
)
def test_requests_the_rule_cannot_take_are_refused(messages: list[dict[str, Any]]) -> None:
    with pytest.raises(InvalidInput):
        split_system(messages)


def test_text_of_keeps_strings_and_none() -> None:
    assert text_of("plain", field="f") == "plain"
    assert text_of(None, field="f") is None


def test_a_users_image_parts_are_kept_and_matched_as_sent() -> None:
    """API-15: a user's parts stay a list (the post stores them); resent, they match the stored parts."""
    parts = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
    ]
    _, rest = split_system([{"role": "user", "content": parts}])
    assert rest == [{"role": "user", "content": parts}]
    stored = _stored(U1, A1)
    stored[0] = replace(stored[0], parts=parts)
    stored[0] = replace(stored[0], content="what is this?")
    assert new_messages([{"role": "user", "content": parts}, A1, U2], stored) == [U2]
