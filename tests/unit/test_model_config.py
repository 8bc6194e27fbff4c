"""WIN-4 / seed 001 context window config: built-in model limits, overrides, contextLength alias, budget."""

from __future__ import annotations

from typing import Any

import pytest
from chat_core.engine.models import DEFAULT_LIMITS, model_context, prompt_token_budget


@pytest.mark.parametrize(
    ("model", "context_length"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4-turbo-preview", 128_000),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o1", 200_000),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("gpt-5-mini", 400_000),
        ("deepseek-chat", 128_000),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("anthropic/claude-sonnet-4-5", 200_000),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("llama3.1:8b", 131_072),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768),
        ("OpenAI/GPT-4o", 128_000),
    ],
)
def test_seed001_model_default_limit_from_the_builtin_table(model: str, context_length: int) -> None:
    # Given a known model (dated, tagged, provider-prefixed or differently cased)
    # When its context config is read
    ctx = model_context(model)

    # Then the built-in context length applies
    assert ctx.context_length == context_length
    assert ctx.source.startswith("builtin:")


@pytest.mark.parametrize("model", [None, "", "my-local-finetune", "gpt-4o" + "x"])
def test_seed001_unknown_model_gets_a_sensible_default(model: str | None) -> None:
    ctx = model_context(model)
    assert (ctx.context_length, ctx.max_output_tokens) == (DEFAULT_LIMITS.context_length, 2_048)
    assert ctx.source == "default"


def test_seed001_reserve_about_20_percent_for_the_reply() -> None:
    # Given a model with a 128,000-token context and no configured reply size
    ctx = model_context("gpt-4o")

    # Then 20% is reserved for the reply and the prompt may use the rest
    assert ctx.reserve_tokens == 25_600
    assert ctx.prompt_budget == 102_400
    assert prompt_token_budget("gpt-4o") == 102_400


@pytest.mark.parametrize("key", ["context_length", "contextLength"])
def test_seed001_contextlength_config_compatible(key: str) -> None:
    # Given a TS-style config naming the context length either way
    ctx = model_context("my-model", {key: 32_000})

    # Then it is used as the model's context length
    assert ctx.context_length == 32_000
    assert ctx.source == "config"
    assert ctx.prompt_budget == 25_600


def test_seed001_custom_max_tokens_used_as_the_reply_reserve() -> None:
    ctx = model_context("gpt-4o", {"max_tokens": 4_000})
    assert ctx.max_tokens == 4_000
    assert ctx.prompt_budget == 124_000
    assert not ctx.clamped


def test_seed001_custom_max_tokens_never_exceeds_the_model_hard_limit() -> None:
    # Given a configured max_tokens above gpt-4's 4,096-token reply limit
    ctx = model_context("gpt-4", {"maxTokens": 100_000})

    # Then it is lowered to the hard limit, and says so
    assert ctx.max_tokens == 4_096
    assert ctx.clamped
    assert ctx.prompt_budget == 8_192 - 4_096


def test_win4_max_tokens_never_reaches_the_whole_context() -> None:
    ctx = model_context("tiny", {"context_length": 100, "max_output_tokens": 500, "max_tokens": 500})
    assert ctx.max_tokens == 99
    assert ctx.prompt_budget == 1


def test_win4_per_model_config_entry_wins_over_top_level() -> None:
    config: dict[str, Any] = {
        "context_length": 10_000,
        "models": {"gpt-4o": {"contextLength": 64_000}, "llama3": {"context_length": 4_096}},
    }
    assert model_context("gpt-4o-2024-11-20", config).context_length == 64_000
    assert model_context("llama3:8b", config).context_length == 4_096
    assert model_context("other", config).context_length == 10_000


def test_win4_unrelated_config_keys_are_ignored() -> None:
    assert model_context("gpt-4", {"temperature": 0.2, "contextLength": 8_000}).context_length == 8_000


@pytest.mark.parametrize(
    "config",
    [
        {"context_length": 0},
        {"contextLength": "8k"},
        {"max_tokens": -5},
        {"max_tokens": True},
        {"reserve_ratio": 1.5},
        {"models": ["gpt-4o"]},
        {"models": {"gpt-4o": 5}},
    ],
)
def test_win4_bad_config_is_a_clear_error(config: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="model config"):
        model_context("gpt-4o", config)


def test_win4_reserve_ratio_configurable() -> None:
    assert model_context("x", {"context_length": 1_000, "reserveRatio": 0.5}).prompt_budget == 500
