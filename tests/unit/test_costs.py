"""COST-1: what a model call costs, exactly, from the built-in price table (pure, no I/O)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from chat_core.engine import costs
from chat_core.engine.costs import ESTIMATED, REPORTED, UNKNOWN, TokenUse
from chat_core.errors import InvalidInput

TABLE = costs.builtin_table()[1]


def _usage(prompt: int, completion: int, cached: int = 0, reasoning: int = 0) -> TokenUse:
    details = {
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    return TokenUse.from_usage(prompt, completion, details)


@pytest.mark.parametrize(
    ("model", "use", "micros"),
    [
        # gpt-4o: $2.50 in, $1.25 cached, $10 out per 1M tokens = micro-dollars per token
        ("gpt-4o", _usage(1000, 500), 1000 * 2.5 + 500 * 10),
        # cached tokens are part of prompt_tokens; reasoning tokens are part of completion_tokens
        ("gpt-4o", _usage(2000, 300, cached=1536, reasoning=200), 464 * 2.5 + 1536 * 1.25 + 300 * 10),
        # a dated variant and a provider path are priced as their family
        ("gpt-4o-2024-08-06", _usage(1000, 0), 2500),
        ("openai/gpt-4o", _usage(0, 100), 1000),
        # the longer name wins: gpt-4o-mini is not priced as gpt-4o
        ("gpt-4o-mini", _usage(1_000_000, 1_000_000), 150_000 + 600_000),
        # rounded half up once, over the whole call: 10 x 0.15 = 1.5 -> 2; 1 x 0.15 + 1 x 0.6 = 0.75 -> 1
        ("gpt-4o-mini", _usage(10, 0), 2),
        ("gpt-4o-mini", _usage(1, 1), 1),
        ("gpt-5-nano", _usage(3, 0), 0),
        # more reasoning than completion tokens: reported apart, so added to the output
        ("o3", _usage(100, 10, reasoning=50), 100 * 2 + 60 * 8),
        # a model without a cached price pays the input price for cached tokens
        ("gpt-4", _usage(1000, 10, cached=100), 1000 * 30 + 10 * 60),
        # a cached count over the prompt (a provider's slip) never makes the cost negative
        ("gpt-4o", _usage(100, 0, cached=500), 100 * 1.25),
        (
            "deepseek-reasoner",
            _usage(10_000, 2_000, cached=4_000, reasoning=1_500),
            6000 * 0.55 + 4000 * 0.14 + 2000 * 2.19,
        ),
        ("claude-sonnet-4-20250514", _usage(1000, 1000), 3000 + 15000),
    ],
)
def test_cost_is_exact_for_a_table_of_usages(model: str, use: TokenUse, micros: float) -> None:
    """COST-1: integer micro-dollars from the provider's usage, cached and reasoning details included."""
    # Given a usage as a provider reports it, for a priced model
    # When it is charged
    charge = costs.charge_for(model, use, TABLE)
    # Then the cost is the exact sum, rounded half up once
    expected = int(Decimal(str(micros)).quantize(Decimal(1), rounding="ROUND_HALF_UP"))
    assert (charge.cost_micros, charge.status) == (expected, REPORTED)


@pytest.mark.parametrize("model", ["llama3.1:8b", "my-finetune", "gpt", "o", ""])
def test_a_model_without_a_price_costs_unknown_not_zero(model: str) -> None:
    """COST-1: unknown models cost "unknown" (None), never a made-up zero."""
    charge = costs.charge_for(model, _usage(1000, 1000), TABLE)
    assert (charge.cost_micros, charge.status) == (None, UNKNOWN)


def test_an_estimate_is_marked_estimated() -> None:
    """COST-2: a cost from the local count says so."""
    charge = costs.charge_for("gpt-4o", _usage(100, 100), TABLE, estimated=True)
    assert (charge.cost_micros, charge.status) == (1250, ESTIMATED)


def test_overrides_replace_and_add_prices() -> None:
    """COST-1: a deployment's table names models (or families) with the same three numbers."""
    table = {
        **TABLE,
        **costs.parse_prices({"gpt-4o": {"input": 1, "output": 2}, "llama3.1": {"input": 0, "output": 0}}),
    }
    assert costs.charge_for("gpt-4o", _usage(1000, 1000), table).cost_micros == 3000
    assert costs.charge_for("llama3.1:8b", _usage(1000, 1000), table).cost_micros == 0
    assert costs.charge_for("gpt-4o-mini", _usage(1000, 0), table).cost_micros == 150


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ([1, 2], "JSON object"),
        ({"gpt-4o": {"input": 1}}, "needs input and output"),
        ({"gpt-4o": {"input": -1, "output": 1}}, "zero or more"),
        ({"gpt-4o": {"input": "cheap", "output": 1}}, "must be a number"),
        ({"gpt-4o": {"input": 1, "output": 1, "per": "1K"}}, "unknown keys"),
        ({"gpt-4o": {"input": True, "output": 1}}, "must be a number"),
    ],
)
def test_a_bad_price_table_is_refused_naming_the_problem(table: object, says: str) -> None:
    """COST-1: a price table that cannot be read says what is wrong."""
    with pytest.raises(InvalidInput, match=says):
        costs.parse_prices(table)


def test_the_builtin_table_is_dated_and_prices_the_documented_models() -> None:
    """COST-1: the shipped table has a date and prices the models the docs name (docs/library.md)."""
    as_of, table = costs.builtin_table()
    assert datetime.date.fromisoformat(as_of).year >= 2025
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4", "gpt-4-turbo", "gpt-3.5-turbo"):
        assert costs.find_price(model, table) is not None, model
