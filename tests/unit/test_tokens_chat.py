"""TOK-4: chat-format counts (per-message overhead, name, reply priming, tool calls and results)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chat_core.engine import tokens
from chat_core.errors import InvalidInput
from hypothesis import given
from hypothesis import strategies as st

# The example of OpenAI's cookbook "How to count tokens with tiktoken"; the cookbook shows the OpenAI
# API itself reporting 129 prompt tokens for gpt-3.5-turbo / gpt-4 and 124 for gpt-4o / gpt-4o-mini.
COOKBOOK_MESSAGES: list[dict[str, str]] = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate jargon "
        "into plain English.",
    },
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities for "
        "increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    },
]


def exact(text: str, encoding: str = "o200k_base") -> int:
    return tokens.count_tokens(text, encoding=encoding)


@pytest.mark.parametrize(
    ("model", "expected"), [("gpt-3.5-turbo", 129), ("gpt-4", 129), ("gpt-4o", 124), ("gpt-4o-mini", 124)]
)
def test_tok4_cookbook_example_matches_the_prompt_tokens_openai_reported(model: str, expected: int) -> None:
    # Given the cookbook's six messages (system, named examples, user)
    # When counted exactly in chat format for the model
    # Then the count is the prompt_tokens the OpenAI API reported for it
    assert tokens.count_chat_tokens(COOKBOOK_MESSAGES, model=model) == expected


def test_tok4_one_message_is_overhead_plus_role_plus_content() -> None:
    # Given a plain user message
    message = {"role": "user", "content": "hello world"}
    # When counted
    # Then it is 3 framing tokens + the role's tokens + the content's tokens
    assert tokens.count_message_tokens(message) == 3 + exact("user") + exact("hello world")


def test_tok4_name_costs_its_text_plus_one() -> None:
    # Given the same message with and without a name
    plain = {"role": "user", "content": "hi there"}
    named = {**plain, "name": "alice_smith"}
    # When both are counted
    # Then the name adds its own tokens plus tokens_per_name (1)
    difference = tokens.count_message_tokens(named) - tokens.count_message_tokens(plain)
    assert difference == exact("alice_smith") + tokens.TOKENS_PER_NAME


def test_tok4_reply_priming_is_added_once_per_prompt() -> None:
    # Given no messages, then one
    # When the prompt is counted
    # Then priming (3) is added once, not per message
    assert tokens.REPLY_PRIMING_TOKENS == 3
    assert tokens.count_chat_tokens([]) == 3
    message = {"role": "user", "content": "hi"}
    assert tokens.count_chat_tokens([message, message]) == 2 * tokens.count_message_tokens(message) + 3


def test_tok4_assistant_tool_calls_count_name_arguments_and_overhead() -> None:
    # Given an assistant message that only calls two tools (content None)
    arguments = json.dumps({"city": "Paris", "unit": "celsius"})
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        ],
    }
    # When counted
    # Then each call is its function name + arguments + TOKENS_PER_TOOL_CALL
    calls = (exact("get_weather") + exact(arguments) + 3) + (exact("get_time") + exact("{}") + 3)
    assert tokens.count_message_tokens(message) == 3 + exact("assistant") + calls


def test_tok4_tool_result_is_its_content_plus_the_message_overhead() -> None:
    # Given the tool's answer to call_1
    result = {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21, "sky": "clear"}'}
    # When counted
    # Then it is the framing + role + content; the call id is not counted
    assert tokens.count_message_tokens(result) == 3 + exact("tool") + exact('{"temp": 21, "sky": "clear"}')


def test_tok4_parsed_arguments_count_as_compact_json() -> None:
    # Given a client that passes the arguments already parsed
    parsed = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1, "b": "é"}}}],
    }
    text = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": '{"a":1,"b":"é"}'}}]}
    # When both are counted
    # Then they cost the same as the JSON text the model sees
    assert tokens.count_message_tokens(parsed) == tokens.count_message_tokens(text)


def test_tok4_legacy_function_call_counts_like_one_tool_call() -> None:
    legacy = {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}}
    modern = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}],
    }
    assert tokens.count_message_tokens(legacy) == tokens.count_message_tokens(modern)


def test_tok4_bookkeeping_keys_are_not_counted() -> None:
    # Given a stored message carrying bookkeeping keys never sent to the model
    bare = {"role": "user", "content": "what is the weather?"}
    stored = {**bare, "tokens": 12, "pinned": True, "message_id": "m-123456789", "seq": 42}
    # When counted
    # Then only the OpenAI keys count (and the stored count is not trusted: this computes it)
    assert tokens.count_message_tokens(stored) == tokens.count_message_tokens(bare)


def test_tok4_content_parts_count_text_and_a_flat_cost_per_image() -> None:
    # Given OpenAI content parts: two texts and an image
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "text", "text": "Answer briefly."},
        ],
    }
    # When counted
    # Then text parts count as text and the image as NON_TEXT_PART_TOKENS (85)
    expected = 3 + exact("user") + exact("What is in this picture?") + exact("Answer briefly.") + 85
    assert tokens.count_message_tokens(message) == expected


def test_tok4_estimate_applies_tok1_to_every_text_part() -> None:
    # Given a named message with a tool call
    message = {
        "role": "assistant",
        "name": "bot",
        "content": "Looking that up",
        "tool_calls": [{"function": {"name": "search", "arguments": '{"q": "chat history"}'}}],
    }
    est = tokens.estimate_message_tokens
    # When estimated
    # Then every text part is TOK-1 estimated and the same overheads apply
    expected = (
        3
        + est("assistant")
        + est("Looking that up")
        + est("bot")
        + 1
        + (3 + est("search") + est('{"q": "chat history"}'))
    )
    assert tokens.count_message_tokens(message, method="estimate") == expected


def test_tok4_approx_applies_approx_tokens_with_the_models_encoding() -> None:
    message = {"role": "user", "content": "上下文管理系统负责管理对话历史消息"}
    apx = tokens.approx_tokens
    got = tokens.count_message_tokens(message, method="approx", model="gpt-4")
    assert got == 3 + apx("user", "cl100k_base") + apx("上下文管理系统负责管理对话历史消息", "cl100k_base")


def test_tok4_message_counter_is_a_reusable_count_message_tokens() -> None:
    # Given a counter made once for a model and method
    counter = tokens.message_counter("exact", model="gpt-4")
    # When used on messages
    # Then it agrees with count_message_tokens for the same settings
    for message in COOKBOOK_MESSAGES:
        assert counter(message) == tokens.count_message_tokens(message, model="gpt-4")


def test_tok4_bad_input_is_a_clear_error() -> None:
    with pytest.raises(
        InvalidInput, match="content must be a string, a list of content parts or null, got int"
    ):
        tokens.count_message_tokens({"role": "user", "content": 42})
    with pytest.raises(InvalidInput, match="tool_calls must be a list"):
        tokens.count_message_tokens({"role": "assistant", "tool_calls": "f()"})
    with pytest.raises(InvalidInput, match="a message must be a JSON object"):
        tokens.count_chat_tokens(["hello"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown counting method 'words'"):
        tokens.message_counter("words")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown encoding 'r50k_base'"):
        tokens.count_chat_tokens([], method="approx", encoding="r50k_base")


ROLES = st.sampled_from(["system", "user", "assistant", "tool"])
TEXT = st.text(max_size=80)
TOOL_CALLS = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.just("call_x"),
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": TEXT, "arguments": TEXT}),
        }
    ),
    max_size=2,
)
MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"role": ROLES, "content": st.one_of(st.none(), TEXT)},
        optional={"name": TEXT, "tool_calls": TOOL_CALLS, "tool_call_id": TEXT, "tokens": st.integers(0, 99)},
    ),
    max_size=6,
)


@given(messages=MESSAGES, method=st.sampled_from(["estimate", "approx", "exact"]))
def test_tok4_prompt_is_the_sum_of_its_messages_plus_priming(
    messages: list[dict[str, Any]], method: str
) -> None:
    # Given any list of messages
    # When the prompt and each message are counted with the same method
    total = tokens.count_chat_tokens(messages, method=method)  # type: ignore[arg-type]
    each = [tokens.count_message_tokens(m, method=method) for m in messages]  # type: ignore[arg-type]
    # Then the prompt is their sum plus reply priming, and each message is at least its framing
    assert total == sum(each) + tokens.REPLY_PRIMING_TOKENS
    assert all(count >= tokens.TOKENS_PER_MESSAGE for count in each)
