"""WIN-3: the one selection engine — caps, token budget, reserve, pinned, tool groups, summary, stats."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from chat_core.engine.tokens import count_chat_tokens
from chat_core.engine.window import (
    INCOMPLETE_TOOL_CALL,
    MAX_MESSAGES,
    ORPHAN_TOOL_RESULT,
    TOKEN_BUDGET,
    WindowPolicy,
    select_window,
)

SYSTEM = {"role": "system", "content": "S" * 4}  # 1 token under the content estimate
CURRENT = {"role": "user", "content": "Q" * 4}  # 1 token


def policy(**changes: Any) -> WindowPolicy:
    """Content-only TOK-1 counting, so sizes in tests are easy to read: 4 ASCII characters = 1 token."""
    return WindowPolicy(method="estimate", chat_format=False, **changes)


def msg(role: str, tokens: int, mid: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": mid.ljust(4 * tokens, "."), "message_id": mid, **extra}


def call(mid: str, *ids: str, tokens: int = 1, **extra: Any) -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids]
    content = mid.ljust(4 * tokens, ".")
    return {"role": "assistant", "content": content, "tool_calls": calls, "message_id": mid, **extra}


def result(mid: str, call_id: str, tokens: int = 1) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": mid.ljust(4 * tokens, "."), "message_id": mid}


def ids(messages: list[dict[str, Any]], history: list[dict[str, Any]]) -> list[str]:
    by_content = {h["content"]: h["message_id"] for h in history}
    return [by_content.get(m["content"], m["role"]) for m in messages]


def test_win3_tool_group_kept_whole_when_it_fits() -> None:
    # Given a call answered by two results, then a user message
    history = [
        msg("user", 1, "u1"),
        call("a1", "c1", "c2"),
        result("t1", "c1"),
        result("t2", "c2"),
        msg("user", 1, "u2"),
    ]

    # When the budget fits everything
    out = select_window(history=history, policy=policy(max_tokens=100), system=SYSTEM, current=CURRENT)

    # Then the group is sent whole, in order, with its tool keys
    assert ids(out.messages, history) == ["system", "u1", "a1", "t1", "t2", "u2", "user"]
    assert out.messages[2]["tool_calls"][0]["id"] == "c1"
    assert out.messages[3]["tool_call_id"] == "c1"


def test_win3_tool_group_dropped_whole_when_the_budget_ends_inside_it() -> None:
    # Given a 3-message tool group (3 tokens) followed by a 1-token message
    history = [
        msg("user", 1, "u1"),
        call("a1", "c1", "c2"),
        result("t1", "c1"),
        result("t2", "c2"),
        msg("user", 1, "u2"),
    ]

    # When the budget leaves room for the newest message and 2 more tokens (the results alone would fit)
    out = select_window(history=history, policy=policy(max_tokens=5), system=SYSTEM, current=CURRENT)

    # Then no result is sent without its call: the whole group and everything older are dropped
    assert ids(out.messages, history) == ["system", "u2", "user"]
    assert [(d.ref, d.reason) for d in out.stats.dropped] == [
        ("u1", TOKEN_BUDGET),
        ("a1", TOKEN_BUDGET),
        ("t1", TOKEN_BUDGET),
        ("t2", TOKEN_BUDGET),
    ]


def test_win3_orphan_tool_result_is_never_sent() -> None:
    # Given a tool result whose call is not in the history (e.g. cut off by the storage query)
    history = [result("t0", "gone"), msg("assistant", 1, "a1"), msg("user", 1, "u1")]

    # When the window is built with plenty of budget
    out = select_window(history=history, policy=policy(max_tokens=100), system=SYSTEM, current=CURRENT)

    # Then the orphan is dropped for that reason and the rest is kept
    assert ids(out.messages, history) == ["system", "a1", "u1", "user"]
    assert [(d.ref, d.reason) for d in out.stats.dropped] == [("t0", ORPHAN_TOOL_RESULT)]


def test_win3_call_without_all_its_results_is_never_sent() -> None:
    # Given a call for two tools with only one result, between ordinary messages
    history = [msg("user", 1, "u0"), call("a1", "c1", "c2"), result("t1", "c1"), msg("user", 1, "u1")]

    # When the window is built
    out = select_window(history=history, policy=policy(max_tokens=100), system=SYSTEM, current=CURRENT)

    # Then the incomplete group is dropped and the walk goes on to older messages
    assert ids(out.messages, history) == ["system", "u0", "u1", "user"]
    assert sorted((d.ref, d.reason) for d in out.stats.dropped) == [
        ("a1", INCOMPLETE_TOOL_CALL),
        ("t1", INCOMPLETE_TOOL_CALL),
    ]


def test_seed001_important_message_kept_when_older_history_is_trimmed() -> None:
    # Given an old pinned message and a long tail of newer messages
    history = [msg("user", 1, "p0", pinned=True), *[msg("user", 1, f"h{i}") for i in range(1, 10)]]

    # When the budget fits the pinned message and only 3 others
    out = select_window(history=history, policy=policy(max_tokens=2 + 4), system=SYSTEM, current=CURRENT)

    # Then the pinned one is kept first and sent in its chronological place, then the newest run
    assert ids(out.messages, history) == ["system", "p0", "h7", "h8", "h9", "user"]
    assert "pinned" not in out.messages[1]


def test_win3_pinned_argument_goes_before_history_and_counts() -> None:
    # Given a pinned fact passed beside the history
    fact = {"role": "user", "content": "F" * 8}  # 2 tokens
    history = [msg("user", 1, f"h{i}") for i in range(5)]

    # When the budget fits system, current, the fact and two history messages
    out = select_window(
        history=history, policy=policy(max_tokens=6), system=SYSTEM, current=CURRENT, pinned=[fact]
    )

    # Then the fact follows the system message and the two newest history messages follow it
    assert [m["content"] for m in out.messages] == ["SSSS", "FFFFFFFF", "h3..", "h4..", "QQQQ"]
    assert out.stats.tokens_used == 6


def test_win3_pinned_tool_call_brings_its_results() -> None:
    # Given an old pinned call with its result, and newer history
    history = [
        call("a0", "c1", pinned=True),
        result("t0", "c1"),
        *[msg("user", 1, f"h{i}") for i in range(1, 6)],
    ]

    # When the budget fits the group and two more messages
    out = select_window(history=history, policy=policy(max_tokens=2 + 2 + 2), system=SYSTEM, current=CURRENT)

    # Then the call and its result are kept together
    assert ids(out.messages, history) == ["system", "a0", "t0", "h4", "h5", "user"]


def test_win3_summary_follows_system_and_counts_in_the_budget() -> None:
    # Given a summary of dropped history (2 tokens) and 5 history messages
    history = [msg("user", 1, f"h{i}") for i in range(5)]

    # When the budget fits system, current, summary and one message
    out = select_window(
        history=history, policy=policy(max_tokens=5), system=SYSTEM, current=CURRENT, summary="summary!"
    )

    # Then the summary is a system message right after the system prompt
    assert out.messages[1] == {"role": "system", "content": "summary!"}
    assert ids(out.messages[2:], history) == ["h4", "user"]
    assert out.stats.tokens_used == 5


def test_win3_summary_dropped_when_no_room() -> None:
    out = select_window(
        history=[], policy=policy(max_tokens=2), system=SYSTEM, current=CURRENT, summary="a long summary"
    )
    assert [m["content"] for m in out.messages] == ["SSSS", "QQQQ"]
    assert [(d.ref, d.reason) for d in out.stats.dropped] == [("summary", TOKEN_BUDGET)]


def test_tok5_stored_count_is_reused_never_recomputed() -> None:
    # Given a counter that records what it is asked to count, and history with stored counts
    counted: list[Mapping[str, Any]] = []

    def counter(message: Mapping[str, Any]) -> int:
        counted.append(message)
        return 1

    history = [
        {"role": "user", "content": "x", "tokens": 3},
        {"role": "assistant", "content": "y", "tokens": 4},
    ]

    # When the window is built
    out = select_window(
        history=history, policy=WindowPolicy(counter=counter, max_tokens=100), system=SYSTEM, current=CURRENT
    )

    # Then the stored counts are used as they are and only system and current are counted
    assert out.stats.tokens_used == 3 + 4 + 1 + 1
    assert counted == [SYSTEM, CURRENT]


def test_win3_output_reserve_defaults_to_20_percent_of_context_length() -> None:
    # Given a policy derived from a 1000-token context
    p = policy(context_length=1000)

    # Then 200 tokens are reserved for the reply and the prompt budget is 800
    assert p.reserve == 200
    assert p.token_budget == 800
    assert policy(context_length=1000, reserve_tokens=300).token_budget == 700
    assert policy(context_length=1000, max_tokens=500).token_budget == 500


def test_win4_policy_for_a_model_uses_its_context_and_reserve() -> None:
    p = WindowPolicy.for_model("gpt-4")
    assert p.context_length == 8192
    assert p.token_budget == 8192 - 1639
    assert WindowPolicy.for_model("gpt-4", overrides={"max_tokens": 1000}).token_budget == 7192


def test_win3_message_cap_and_current_not_counted_when_asked() -> None:
    history = [msg("user", 1, f"h{i}") for i in range(5)]
    out = select_window(
        history=history,
        policy=policy(max_messages=2, caps_count_current=False),
        system=SYSTEM,
        current=CURRENT,
    )
    assert ids(out.messages, history) == ["system", "h3", "h4", "user"]
    assert {d.reason for d in out.stats.dropped} == {MAX_MESSAGES}


def test_win3_stats_report_used_remaining_kept_and_dropped_by_index_without_ids() -> None:
    # Given history without message ids
    history = [{"role": "user", "content": "x" * 8}, {"role": "assistant", "content": "y" * 8}]

    # When only the newest fits
    out = select_window(history=history, policy=policy(max_tokens=5), system=SYSTEM, current=CURRENT)

    # Then stats name the dropped message by its index and are JSON-ready
    stats = out.stats.to_dict()
    assert stats["tokens_used"] == 4
    assert stats["tokens_remaining"] == 1
    assert stats["kept"] == 3
    assert stats["dropped"] == [{"ref": 0, "reason": TOKEN_BUDGET}]
    json.dumps(stats)


def test_win3_over_budget_flag_when_system_and_current_alone_exceed() -> None:
    out = select_window(
        history=[msg("user", 1, "h")], policy=policy(max_tokens=1), system=SYSTEM, current=CURRENT
    )
    assert out.stats.over_budget
    assert out.stats.tokens_remaining == 0
    assert len(out.messages) == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_messages", -1), ("max_tokens", 1.5), ("reserve_ratio", 1.0), ("method", "bytes")],
)
def test_win3_invalid_policy_is_a_clear_error(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        WindowPolicy(**{field: value})


def test_tok4_window_tokens_match_the_chat_format_count_of_what_is_sent() -> None:
    # Given a model-derived policy counting exactly in chat format, and a history with a tool call
    history = [
        {"role": "user", "content": "What's the weather in Paris?"},
        call("a1", "c1"),
        result("t1", "c1"),
        {"role": "assistant", "content": "It is sunny in Paris.", "name": "helper"},
    ]
    policy = WindowPolicy.for_model("gpt-4o", honor_pinned=False)

    # When the window is built
    out = select_window(history=history, policy=policy, system=SYSTEM, current=CURRENT)

    # Then its token figure is exactly the chat-format count of the messages sent (reply priming included)
    assert len(out.messages) == 6
    assert out.stats.tokens_used == count_chat_tokens(out.messages, method="exact", model="gpt-4o")


def test_win3_result_separated_from_its_call_by_a_pinned_message_is_not_sent() -> None:
    # Given a malformed history where a pinned message sits between a call and its result
    history = [call("a1", "c1"), msg("user", 1, "p1", pinned=True), result("t1", "c1")]

    # When the window is built
    out = select_window(history=history, policy=policy(max_tokens=100), system=SYSTEM, current=CURRENT)

    # Then the sent messages never show a result away from its call
    assert ids(out.messages, history) == ["system", "p1", "user"]
    assert sorted((d.ref, d.reason) for d in out.stats.dropped) == [
        ("a1", INCOMPLETE_TOOL_CALL),
        ("t1", ORPHAN_TOOL_RESULT),
    ]
