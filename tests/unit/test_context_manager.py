"""WIN-5 / seed 001: MessageContextManager — add, get, clear, locked system prompt, strategies, state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from chat_core.engine.context import MessageContextManager
from chat_core.engine.tokens import count_message_tokens
from chat_core.engine.window import TOKEN_BUDGET
from chat_core.errors import InvalidInput


def manager(**changes: Any) -> MessageContextManager:
    """A 100-token context (125 minus the 20% reply reserve), 4 ASCII characters = 1 token."""
    options: dict[str, Any] = {"context_length": 125, "method": "estimate", "chat_format": False}
    options.update(changes)
    return MessageContextManager(**options)


def msg(role: str, tokens: int, mid: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": mid.ljust(4 * tokens, "."), "message_id": mid, **extra}


def contents(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m["content"]).rstrip(".") for m in messages]


def test_seed001_add_appends_counts_and_checks_the_limit() -> None:
    # Given an empty context
    ctx = manager()

    # When a message is added
    added = ctx.add(msg("user", 10, "u1"))

    # Then it is at the end, counted, and within the limit (nothing trimmed, no warning)
    assert contents(ctx.get_context()) == ["u1"]
    assert added.tokens == 10
    assert ctx.state().tokens_used == 10
    assert added.dropped == []
    assert added.warning is None


def test_seed001_get_context_returns_messages_within_limit_in_order() -> None:
    # Given more messages than the limit holds
    ctx = manager()
    for i in range(12):
        ctx.add(msg("user" if i % 2 == 0 else "assistant", 10, f"m{i}"))

    # When the context is requested
    messages = ctx.get_context()

    # Then the newest that fit are returned, oldest first
    assert contents(messages) == [f"m{i}" for i in range(2, 12)]
    assert all(set(m) == {"role", "content"} for m in messages)


def test_seed001_clear_removes_history_and_resets_counts() -> None:
    # Given a context with a system prompt and messages
    ctx = manager(system_prompt="S" * 40)
    ctx.add(msg("user", 10, "u1"))
    ctx.add(msg("assistant", 10, "a1"))

    # When it is cleared
    ctx.clear()

    # Then only the locked system prompt is left and the counts are back to it
    assert ctx.get_context() == [{"role": "system", "content": "S" * 40}]
    state = ctx.state()
    assert state.tokens_used == 10
    assert state.by_role == {"system": 1, "user": 0, "assistant": 0, "tool": 0}


def test_seed001_clear_without_system_prompt_resets_to_zero() -> None:
    ctx = manager()
    ctx.add(msg("user", 10, "u1"))
    ctx.clear()
    assert ctx.state().tokens_used == 0
    assert ctx.state().message_count == 0
    assert ctx.get_context() == []


def test_seed001_system_prompt_kept_and_not_part_of_the_trimmable_set() -> None:
    # Given a 30-token system prompt and a history that overflows the 70 tokens left
    ctx = manager(system_prompt="S" * 120)
    for i in range(10):
        ctx.add(msg("user", 10, f"m{i}"))

    # When the context is read
    messages = ctx.get_context()

    # Then the system prompt is first and the history fits in what it leaves
    assert messages[0] == {"role": "system", "content": "S" * 120}
    assert contents(messages[1:]) == [f"m{i}" for i in range(3, 10)]
    assert ctx.state().tokens_used == 100


def test_seed001_first_system_message_added_becomes_the_locked_prompt() -> None:
    ctx = manager()
    ctx.add({"role": "system", "content": "S" * 40})
    for i in range(20):
        ctx.add(msg("user", 10, f"m{i}"))
    assert ctx.system_prompt == "S" * 40
    assert ctx.get_context()[0]["role"] == "system"


def test_seed001_incremental_update_counts_only_the_new_message() -> None:
    # Given a counter that records every message it counts
    seen: list[Mapping[str, Any]] = []

    def counter(message: Mapping[str, Any]) -> int:
        seen.append(message)
        return 5

    ctx = manager(counter=counter)
    for i in range(5):
        ctx.add(msg("user", 1, f"m{i}"))
    seen.clear()

    # When one more message is added
    new = msg("assistant", 1, "new")
    ctx.add(new)

    # Then only that message was counted, and the total grew by its count
    assert seen == [new]
    assert ctx.state().tokens_used == 30


def test_tok5_manager_reuses_a_stored_count() -> None:
    ctx = manager()
    ctx.add({"role": "user", "content": "x", "tokens": 42})
    assert ctx.state().tokens_used == 42


def test_seed001_fifo_trimming_removes_oldest_non_system() -> None:
    # Given a full context with a system prompt
    ctx = manager(system_prompt="S" * 40)
    for i in range(9):
        ctx.add(msg("user", 10, f"m{i}"))
    assert ctx.state().tokens_used == 100

    # When one more message is added
    added = ctx.add(msg("assistant", 10, "m9"))

    # Then the oldest non-system message is removed until the total is within the limit
    assert [(d.ref, d.reason) for d in added.dropped] == [("m0", TOKEN_BUDGET)]
    assert added.dropped_messages == [{"role": "user", "content": "m0".ljust(40, ".")}]
    assert contents(ctx.get_context()) == ["S" * 40] + [f"m{i}" for i in range(1, 10)]
    assert ctx.state().tokens_used == 100


def test_seed001_fifo_forgets_trimmed_messages() -> None:
    ctx = manager()
    for i in range(30):
        ctx.add(msg("user", 10, f"m{i}"))
    assert contents(ctx.history()) == [f"m{i}" for i in range(20, 30)]


def test_seed001_important_messages_kept_user_or_system_marked() -> None:
    # Given a user-marked important message and a later system note, then a long conversation
    ctx = manager(system_prompt="S" * 40)
    ctx.add(msg("user", 10, "keep-me", important=True))
    ctx.add(msg("user", 10, "old"))
    ctx.add({"role": "system", "content": "note".ljust(40, ".")})
    for i in range(10):
        ctx.add(msg("user", 10, f"m{i}"))

    # When the context is read after many trims
    messages = ctx.get_context()

    # Then both marked messages are still there, in their places, and the rest is the newest run
    assert contents(messages) == ["S" * 40, "keep-me", "note", "m3", "m4", "m5", "m6", "m7", "m8", "m9"]
    assert ctx.state().tokens_used == 100


def test_seed001_sliding_window_keeps_the_most_recent_n_set_by_the_token_limit() -> None:
    # Given a sliding-window context and messages of different sizes
    ctx = manager(strategy="sliding_window")
    sizes = [30, 10, 40, 20, 20, 30]
    for i, size in enumerate(sizes):
        ctx.add(msg("user", size, f"m{i}"))

    # When the context is read
    messages = ctx.get_context()

    # Then it is the most recent messages whose tokens fit (N = 3 here), and all history is still held
    assert contents(messages) == ["m3", "m4", "m5"]
    assert contents(ctx.history()) == [f"m{i}" for i in range(6)]


def test_seed001_sliding_window_with_a_message_cap() -> None:
    ctx = manager(strategy="sliding_window", max_messages=2, system_prompt="S" * 4)
    for i in range(5):
        ctx.add(msg("user", 1, f"m{i}"))
    assert contents(ctx.get_context()) == ["SSSS", "m3", "m4"]


def test_seed001_newest_user_message_never_lost() -> None:
    # Given a full context
    ctx = manager()
    for i in range(10):
        ctx.add(msg("assistant", 10, f"a{i}"))

    # When the user asks something
    ctx.add(msg("user", 20, "question"))

    # Then the question is the last message of the context
    assert ctx.get_context()[-1]["content"].startswith("question")


def call(mid: str, *ids: str, tokens: int = 10, **extra: Any) -> dict[str, Any]:
    calls = [{"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids]
    return {
        "role": "assistant",
        "content": mid.ljust(4 * tokens, "."),
        "tool_calls": calls,
        "message_id": mid,
        **extra,
    }


def result(mid: str, call_id: str, tokens: int = 10) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": mid.ljust(4 * tokens, "."), "message_id": mid}


def test_seed001_tool_call_and_result_dropped_as_a_pair() -> None:
    # Given a call and its result at the old end of a full context
    ctx = manager()
    ctx.add(call("a0", "c1"))
    ctx.add(result("t0", "c1"))
    for i in range(8):
        ctx.add(msg("user", 10, f"m{i}"))

    # When one more message needs 10 tokens
    added = ctx.add(msg("user", 10, "m8"))

    # Then call and result go together (20 tokens freed, not 10) and no result is orphaned
    assert [d.ref for d in added.dropped] == ["a0", "t0"]
    assert contents(ctx.get_context()) == [f"m{i}" for i in range(9)]


def test_seed001_tool_call_and_result_kept_as_a_pair() -> None:
    ctx = manager()
    ctx.add(msg("user", 10, "u0"))
    ctx.add(call("a0", "c1", "c2"))
    ctx.add(result("t1", "c1"))
    ctx.add(result("t2", "c2"))
    messages = ctx.get_context()
    assert contents(messages) == ["u0", "a0", "t1", "t2"]
    assert messages[1]["tool_calls"][1]["id"] == "c2"
    assert messages[3]["tool_call_id"] == "c2"


def test_seed001_a_call_still_waiting_for_results_is_held_back() -> None:
    # Given a call whose second result has not arrived
    ctx = manager()
    ctx.add(msg("user", 10, "u0"))
    ctx.add(call("a0", "c1", "c2"))
    ctx.add(result("t1", "c1"))

    # When the context is read
    # Then the incomplete group is not sent (the model would reject it), but is still held
    assert contents(ctx.get_context()) == ["u0"]
    assert ctx.state().by_role["tool"] == 1


def test_seed001_orphan_tool_result_is_refused() -> None:
    ctx = manager()
    ctx.add(msg("user", 1, "u0"))
    with pytest.raises(InvalidInput, match="answers no open tool call"):
        ctx.add(result("t0", "nope"))
    assert ctx.state().message_count == 1


def test_seed001_new_turn_before_all_results_is_refused() -> None:
    ctx = manager()
    ctx.add(call("a0", "c1"))
    with pytest.raises(InvalidInput, match="still wait"):
        ctx.add(msg("user", 1, "u1"))


def test_seed001_message_larger_than_the_context_is_refused_and_nothing_changes() -> None:
    # Given a context holding two messages
    ctx = manager(system_prompt="S" * 40)
    ctx.add(msg("user", 10, "u0"))
    ctx.add(msg("assistant", 10, "a0"))

    # When a message larger than the whole limit is added
    with pytest.raises(InvalidInput, match="over the limit of 100"):
        ctx.add(msg("user", 95, "huge"))

    # Then it is refused and nothing was trimmed
    assert contents(ctx.get_context()) == ["S" * 40, "u0", "a0"]


def test_seed001_token_usage_statistics() -> None:
    ctx = manager(system_prompt="S" * 40)
    ctx.add(msg("user", 20, "u0"))
    state = ctx.state()
    assert (state.tokens_used, state.tokens_remaining, state.tokens_limit) == (30, 70, 100)
    assert state.context_length == 125
    assert state.reserve_tokens == 25


def test_seed001_message_count_by_role() -> None:
    ctx = manager(system_prompt="S" * 4)
    ctx.add(msg("user", 1, "u0"))
    ctx.add(call("a0", "c1", tokens=1))
    ctx.add(result("t0", "c1", tokens=1))
    ctx.add(msg("assistant", 1, "a1"))
    state = ctx.state()
    assert state.by_role == {"system": 1, "user": 1, "assistant": 2, "tool": 1}
    assert state.message_count == 5 == len(ctx)


def test_seed001_can_add_estimates_capacity_before_adding() -> None:
    # Given a context with 85 of 100 tokens used
    ctx = manager()
    ctx.add(msg("user", 85, "u0"))

    # Then a 15-token message fits and a 16-token one would need trimming
    assert ctx.can_add(msg("user", 15, "ok"))
    assert not ctx.can_add(msg("user", 16, "no"))


def test_seed001_near_limit_warning_at_the_configured_threshold() -> None:
    # Given a warning threshold of 80%
    ctx = manager(warn_threshold=0.8)

    # When usage goes from 79 to 80 tokens
    first = ctx.add(msg("user", 79, "u0"))
    second = ctx.add(msg("user", 1, "u1"))

    # Then the warning appears at 80%
    assert first.warning is None
    assert second.warning is not None
    assert "80 of 100" in second.warning
    assert ctx.state().near_limit


def test_seed001_model_default_limit_used_by_the_manager() -> None:
    ctx = MessageContextManager(model="gpt-4", method="estimate", chat_format=False)
    assert ctx.limit == 8_192 - 1_639


@pytest.mark.parametrize("key", ["context_length", "contextLength"])
def test_seed001_manager_accepts_ts_config(key: str) -> None:
    ctx = MessageContextManager(config={key: 1_000, "max_tokens": 300}, method="estimate", chat_format=False)
    assert ctx.limit == 700


def test_seed001_manager_max_tokens_clamped_to_model_hard_limit() -> None:
    ctx = MessageContextManager(model="gpt-4", max_tokens=50_000, method="estimate", chat_format=False)
    assert ctx.model_context.clamped
    assert ctx.limit == 8_192 - 4_096


def test_seed001_summary_counted_and_placed_after_system() -> None:
    ctx = manager(system_prompt="S" * 40)
    for i in range(9):
        ctx.add(msg("user", 10, f"m{i}"))

    # When a 20-token summary of older history is set
    dropped = ctx.set_summary("summary".ljust(80, "."))

    # Then it follows the system prompt and the two oldest messages made room for it
    assert [d.ref for d in dropped] == ["m0", "m1"]
    assert contents(ctx.get_context())[:3] == ["S" * 40, "summary", "m2"]
    assert ctx.state().tokens_used == 100


@pytest.mark.parametrize(
    ("changes", "match"),
    [({"strategy": "lifo"}, "strategy"), ({"warn_threshold": 0}, "warn_threshold")],
)
def test_win5_bad_manager_options_are_clear_errors(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        manager(**changes)


def test_win5_bad_message_is_a_clear_error() -> None:
    ctx = manager()
    with pytest.raises(InvalidInput, match="role"):
        ctx.add({"role": "robot", "content": "hi"})
    with pytest.raises(InvalidInput, match="content"):
        ctx.add({"role": "user", "content": 42})


def test_seed001_tool_call_counting_counts_tool_name_and_arguments() -> None:
    # Given the default manager (exact chat-format counts for the model)
    ctx = MessageContextManager(model="gpt-4o")
    bare = {"role": "assistant", "content": None}
    with_call = call("a0", "c1", tokens=0)
    with_call["content"] = None
    with_call["tool_calls"][0]["function"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}

    # When a tool call and its result are added
    call_tokens = ctx.add(with_call).tokens
    result_tokens = ctx.add(result("t0", "c1", tokens=5)).tokens

    # Then the call costs more than a bare assistant turn (name + arguments) and both match TOK-4
    assert call_tokens > count_message_tokens(bare, model="gpt-4o")
    assert call_tokens == count_message_tokens(with_call, model="gpt-4o")
    assert result_tokens == count_message_tokens(result("t0", "c1", tokens=5), model="gpt-4o")
    assert ctx.state().tokens_used == ctx.window().stats.tokens_used
