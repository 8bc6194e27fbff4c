"""WIN-1 / seed 000: build_llm_messages assembles [system, *history, current] under TOK-1 estimates."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from chat_core.engine.tokens import estimate_message_tokens
from chat_core.engine.window import build_llm_messages


def test_seed000_s1_standard_multiturn_assembly() -> None:
    # Given a system prompt, two history messages, a question and a large budget
    history = [{"role": "user", "content": "介绍林默"}, {"role": "assistant", "content": "林默是28岁侦探"}]

    # When the messages are built
    result = build_llm_messages(
        system_prompt="<identity>AI</identity>",
        history=history,
        current_user_message="他的性格？",
        max_token_budget=10000,
    )

    # Then all four come back in order, as plain role/content dicts
    assert result == [
        {"role": "system", "content": "<identity>AI</identity>"},
        {"role": "user", "content": "介绍林默"},
        {"role": "assistant", "content": "林默是28岁侦探"},
        {"role": "user", "content": "他的性格？"},
    ]


def test_seed000_s2_over_budget_trims_the_oldest_history() -> None:
    # Given four 1-token history messages, system "S" and current "E" (1 token each) and a budget of 4
    history = [
        {"role": "user", "content": "AAAA"},
        {"role": "assistant", "content": "BBBB"},
        {"role": "user", "content": "CCCC"},
        {"role": "assistant", "content": "DDDD"},
    ]

    # When the messages are built
    result = build_llm_messages(
        system_prompt="S", history=history, current_user_message="E", max_token_budget=4
    )

    # Then system and current take 2 tokens, the 2 left go to the newest history, the oldest are cut
    assert result == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "CCCC"},
        {"role": "assistant", "content": "DDDD"},
        {"role": "user", "content": "E"},
    ]
    assert sum(estimate_message_tokens(m["content"]) for m in result) <= 4


def test_seed000_s3_empty_history() -> None:
    # Given no history
    # When the messages are built
    result = build_llm_messages(
        system_prompt="system text", history=[], current_user_message="你好", max_token_budget=10000
    )

    # Then only system and the current message come back
    assert result == [{"role": "system", "content": "system text"}, {"role": "user", "content": "你好"}]


def test_seed000_s4_system_and_current_forced_when_budget_is_short() -> None:
    # Given a 100-token system prompt, a 50-token question, 10 history messages of 4 tokens, budget 160
    system_prompt = "s" * 400
    current = "c" * 200
    history = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"h{i:02d}" + "x" * 13} for i in range(10)
    ]
    assert estimate_message_tokens(system_prompt) == 100
    assert estimate_message_tokens(current) == 50
    assert all(estimate_message_tokens(m["content"]) == 4 for m in history)

    # When the messages are built
    result = build_llm_messages(
        system_prompt=system_prompt, history=history, current_user_message=current, max_token_budget=160
    )

    # Then system and current are kept, and only the two newest history messages fit the 10 tokens left
    assert result[0] == {"role": "system", "content": system_prompt}
    assert result[1:-1] == history[-2:]
    assert result[-1] == {"role": "user", "content": current}


def test_win1_system_and_current_alone_over_budget_drop_all_history() -> None:
    # Given system + current that alone exceed the budget
    history = [{"role": "user", "content": "old"}]

    # When the messages are built
    result = build_llm_messages(
        system_prompt="s" * 40, history=history, current_user_message="c" * 40, max_token_budget=5
    )

    # Then both are still sent and all history is cut
    assert [m["role"] for m in result] == ["system", "user"]
    assert result[1]["content"] == "c" * 40


def test_win1_keeps_the_newest_contiguous_run_even_if_an_older_message_would_fit() -> None:
    # Given a big message between small ones
    history = [
        {"role": "user", "content": "tiny"},
        {"role": "assistant", "content": "B" * 400},
        {"role": "user", "content": "newest"},
    ]

    # When the budget fits the newest and the tiny one but not the big one
    result = build_llm_messages(
        system_prompt="S", history=history, current_user_message="E", max_token_budget=10
    )

    # Then the walk stops at the big message: the older tiny one is not sent either
    assert [m["content"] for m in result] == ["S", "newest", "E"]


def test_win1_uses_tok1_on_content_and_ignores_stored_counts() -> None:
    # Given a history message carrying a stored count that disagrees with TOK-1
    history = [{"role": "user", "content": "AAAA", "tokens": 999, "message_id": "m1"}]

    # When the budget fits its TOK-1 estimate (1 token)
    result = build_llm_messages(
        system_prompt="S", history=history, current_user_message="E", max_token_budget=3
    )

    # Then it is kept, and bookkeeping keys are not sent
    assert result[1] == {"role": "user", "content": "AAAA"}


def test_win1_negative_budget_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        build_llm_messages(system_prompt="S", history=[], current_user_message="E", max_token_budget=-1)


class _CountingHistory(Sequence[dict[str, Any]]):
    """A long history that records how many messages the builder reads."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.reads = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        self.reads += 1
        return {"role": "user", "content": "AAAA"}

    def __reversed__(self) -> Iterator[dict[str, Any]]:
        for _ in range(self.n):
            self.reads += 1
            yield {"role": "user", "content": "AAAA"}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        raise AssertionError("the builder must not walk the history from its oldest end")


def test_win1_cost_grows_with_messages_kept_not_history_length() -> None:
    # Given a 100,000-message history and a budget that fits 5 of them
    history = _CountingHistory(100_000)

    # When the messages are built
    result = build_llm_messages(
        system_prompt="S", history=history, current_user_message="E", max_token_budget=7
    )

    # Then 5 are kept and only those plus the one that stopped the walk were read
    assert len(result) == 7
    assert history.reads <= 5 + 1 + 5
