"""RSP-1: Responses items and Chat Completions messages, both ways, and the ids the Responses routes show."""

from __future__ import annotations

import pytest
from chat_core.chat.response_items import (
    input_messages,
    item_id,
    items_of,
    parse_item_id,
    parse_response_id,
    pick_item,
    response_id,
)
from chat_core.errors import InvalidInput
from chat_core.store.keys import message_id_for, new_id

CONVERSATION = new_id()


def view(seq: int, role: str, **fields: object) -> dict[str, object]:
    return {"message_id": message_id_for(seq), "conversation_id": CONVERSATION, "role": role, **fields}


def test_a_string_is_one_user_message() -> None:
    assert input_messages("hi").messages == [{"role": "user", "content": "hi"}]


def test_message_items_with_parts_and_system_text() -> None:
    found = input_messages(
        [
            {"type": "message", "role": "developer", "content": "Be brief."},
            {"role": "system", "content": [{"type": "input_text", "text": "Use metric."}]},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
                    {
                        "type": "input_file",
                        "file_data": "data:application/pdf;base64,AAAA",
                        "filename": "a.pdf",
                    },
                ],
            },
        ]
    )
    assert found.system == ["Be brief.", "Use metric."]
    assert found.messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
                {
                    "type": "file",
                    "file": {"file_data": "data:application/pdf;base64,AAAA", "filename": "a.pdf"},
                },
            ],
        }
    ]


def test_function_calls_join_the_assistant_message_before_them_and_outputs_answer_their_ids() -> None:
    found = input_messages(
        [
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "weather",
                "arguments": '{"city":"Paris"}',
            },
            {"type": "function_call", "call_id": "call_2", "name": "weather", "arguments": '{"city":"Oslo"}'},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": [{"type": "input_text", "text": "rain"}],
            },
        ]
    )
    assert found.messages[1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
            },
        ],
    }
    assert found.messages[2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
    ]


def test_references_are_collected_and_refusals_kept() -> None:
    found = input_messages(
        [
            {"type": "item_reference", "id": "msg_x"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot."}]},
        ]
    )
    assert found.references == ["msg_x"]
    assert found.messages == [{"role": "assistant", "content": None, "refusal": "I cannot."}]


@pytest.mark.parametrize(
    "item",
    [
        {"type": "web_search_call", "id": "ws_1"},
        {"type": "function_call", "name": "f"},
        {"type": "function_call_output", "output": "x"},
        {"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]},
        {"role": "assistant", "content": [{"type": "input_image", "image_url": "https://x"}]},
        {"role": "tool", "content": "x"},
    ],
)
def test_what_is_not_taken_is_a_400_naming_it(item: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        input_messages([item])


def test_stored_messages_as_items_with_stable_ids() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    views = [
        view(1, "user", content="Hi", status="ok"),
        view(2, "assistant", content="Let me check.", tool_calls=[call], status="ok"),
        view(3, "tool", content="sunny", tool_call_id="call_1", status="ok"),
        view(4, "assistant", content="Sunny.", status="ok"),
    ]
    items = items_of(views)
    assert [(i["type"], i["id"]) for i in items] == [
        ("message", item_id("msg", CONVERSATION, 1)),
        ("message", item_id("msg", CONVERSATION, 2)),
        ("function_call", item_id("fc", CONVERSATION, 2, 0)),
        ("function_call_output", item_id("fco", CONVERSATION, 3)),
        ("message", item_id("msg", CONVERSATION, 4)),
    ]
    assert items[0]["content"] == [{"type": "input_text", "text": "Hi"}]
    assert items[2]["call_id"] == "call_1"
    assert items[3]["call_id"] == "call_1"
    assert items[4]["content"][0]["type"] == "output_text"
    # the same messages give the same ids; an item is found again by its id
    assert items_of(views) == items
    assert pick_item(views[1], item_id("fc", CONVERSATION, 2, 0)) == items[2]
    assert pick_item(views[1], item_id("fc", CONVERSATION, 2, 5)) is None


def test_ids_parse_back_and_foreign_ids_do_not() -> None:
    rid = response_id(CONVERSATION, 12)
    assert parse_response_id(rid) == (CONVERSATION, 12)
    assert parse_item_id(item_id("fc", CONVERSATION, 12, 3)) == ("fc", CONVERSATION, 12)
    assert parse_item_id(item_id("msg", CONVERSATION, 12)) == ("msg", CONVERSATION, 12)
    for foreign in (
        "resp_abc",
        f"resp_{CONVERSATION}_0",
        "msg_abc",
        f"fc_{CONVERSATION}_2",
        f"msg_{CONVERSATION}_2_1",
    ):
        assert parse_response_id(foreign) is None
        assert parse_item_id(foreign) is None
