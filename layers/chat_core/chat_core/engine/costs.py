"""COST-1: what a model call cost, in integer micro-dollars, from a price table per model.

Prices are per 1M tokens (so a price in dollars per 1M tokens is also micro-dollars per token): input,
cached input (tokens the provider served from its prompt cache; the input price when the table has
none) and output. Reasoning tokens are output tokens: OpenAI counts them inside `completion_tokens`; a
provider that reports more reasoning tokens than completion tokens is taken to report them apart, and
they are added. A model the table does not price costs None ("unknown"), never a made-up zero.

The built-in table (`prices.json` beside this module, dated) is overlaid by a deployment's own
(`PRICES` or the SSM parameter `PRICES_PARAMETER`, see `chat.prices`): an override names a model, or
a prefix of a family, with the same three numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from chat_core.errors import InvalidInput

_PRICES_FILE: Final = Path(__file__).with_name("prices.json")
_PRICE_KEYS: Final = ("input", "cached_input", "output")
#: What may follow a table name in a variant's name ("gpt-4o-2024-08-06", "deepseek-chat:latest").
_BOUNDARIES: Final = frozenset("-:@_/. ")
_MILLION: Final = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    """Dollars per 1M tokens (= micro-dollars per token)."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None

    def to_dict(self) -> dict[str, float]:
        out = {"input": float(self.input), "output": float(self.output)}
        if self.cached_input is not None:
            out["cached_input"] = float(self.cached_input)
        return out


@dataclass(frozen=True)
class TokenUse:
    """The tokens one model call used, as billed: `cached` is part of `prompt`, `reasoning` part of
    `completion` (OpenAI's accounting)."""

    prompt: int = 0
    completion: int = 0
    cached: int = 0
    reasoning: int = 0

    @classmethod
    def from_usage(cls, prompt: int, completion: int, details: Mapping[str, Any] | None = None) -> TokenUse:
        """From a Chat Completions `usage` (its numbers and its `*_details` breakdowns)."""
        details = details or {}
        prompt_details = details.get("prompt_tokens_details") or {}
        completion_details = details.get("completion_tokens_details") or {}
        return cls(
            prompt=max(0, int(prompt)),
            completion=max(0, int(completion)),
            cached=_count(prompt_details, "cached_tokens"),
            reasoning=_count(completion_details, "reasoning_tokens"),
        )


def _count(details: Any, key: str) -> int:
    value = details.get(key) if isinstance(details, Mapping) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _decimal(model: str, key: str, value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidInput(f"price of {model!r}: {key} must be a number (dollars per 1M tokens)")
    try:
        number = Decimal(str(value))
    except InvalidOperation as exc:
        raise InvalidInput(f"price of {model!r}: {key} must be a number, got {value!r}") from exc
    if not number.is_finite() or number < 0:
        raise InvalidInput(f"price of {model!r}: {key} must be zero or more, got {value!r}")
    return number


def parse_prices(table: Any, *, source: str = "prices") -> dict[str, Price]:
    """A price table `{"model": {"input": 2.5, "cached_input": 1.25, "output": 10}}` (dollars per 1M
    tokens); a `{"models": {...}}` wrapper is accepted. InvalidInput names what is wrong."""
    if isinstance(table, Mapping) and isinstance(table.get("models"), Mapping):
        table = table["models"]
    if not isinstance(table, Mapping):
        raise InvalidInput(f"{source} must be a JSON object of model name -> prices")
    prices: dict[str, Price] = {}
    for model, entry in table.items():
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput(f"{source}: model names must be non-empty strings")
        if not isinstance(entry, Mapping) or "input" not in entry or "output" not in entry:
            raise InvalidInput(f"{source}: the price of {model!r} needs input and output (per 1M tokens)")
        unknown = sorted(set(entry) - set(_PRICE_KEYS))
        if unknown:
            raise InvalidInput(f"{source}: the price of {model!r} has unknown keys {unknown}")
        cached = entry.get("cached_input")
        prices[model.strip().lower()] = Price(
            input=_decimal(model, "input", entry["input"]),
            output=_decimal(model, "output", entry["output"]),
            cached_input=None if cached is None else _decimal(model, "cached_input", cached),
        )
    return prices


@lru_cache(maxsize=1)
def builtin_table() -> tuple[str, dict[str, Price]]:
    """The shipped table: (its date, prices by model name)."""
    data = json.loads(_PRICES_FILE.read_text(encoding="utf-8"))
    return str(data["as_of"]), parse_prices(data["models"], source=str(_PRICES_FILE.name))


def _normalise(model: str) -> str:
    # "openai/gpt-4o" is priced as "gpt-4o": the provider path is not part of the name.
    return model.strip().lower().rsplit("/", 1)[-1]


def find_price(model: str | None, table: Mapping[str, Price]) -> tuple[str, Price] | None:
    """The entry for `model`: its exact name, else the longest table name it extends at a boundary
    ("gpt-4o-2024-08-06" -> "gpt-4o"; "gpt-4o-mini" has its own entry, which wins)."""
    if not model:
        return None
    for name in (model.strip().lower(), _normalise(model)):
        if name in table:
            return name, table[name]
    name = _normalise(model)
    best: str | None = None
    for key in table:
        plain = _normalise(key)
        if (
            name.startswith(plain)
            and len(name) > len(plain)
            and name[len(plain)] in _BOUNDARIES
            and (best is None or len(plain) > len(_normalise(best)))
        ):
            best = key
    return (best, table[best]) if best is not None else None


def cost_micros(use: TokenUse, price: Price) -> int:
    """The cost of `use` at `price`, in micro-dollars, rounded half up once (not per part)."""
    cached = min(use.cached, use.prompt)
    output = use.completion + (use.reasoning if use.reasoning > use.completion else 0)
    cached_price = price.cached_input if price.cached_input is not None else price.input
    total = (use.prompt - cached) * price.input + cached * cached_price + output * price.output
    return int(total.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def micros_to_dollars(micros: int) -> str:
    """Micro-dollars as a dollar amount for people ("$0.000123")."""
    return f"${Decimal(micros) / _MILLION:.6f}"


#: How a cost was found: from the provider's usage, from the local count (the provider reported no
#: usage), or not at all (no price for the model).
CostStatus = str
REPORTED: Final = "reported"
ESTIMATED: Final = "estimated"
UNKNOWN: Final = "unknown"


@dataclass(frozen=True)
class Charge:
    """One model call as the usage records keep it: its model, tokens, cost and how the cost was found."""

    model: str
    use: TokenUse
    cost_micros: int | None
    status: CostStatus

    @property
    def total_tokens(self) -> int:
        return self.use.prompt + self.use.completion

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": self.use.prompt,
            "completion": self.use.completion,
            "cached": self.use.cached,
            "reasoning": self.use.reasoning,
            "cost_micros": self.cost_micros,
            "status": self.status,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Charge:
        cost = data.get("cost_micros")
        return cls(
            model=str(data.get("model") or ""),
            use=TokenUse(
                prompt=int(data.get("prompt") or 0),
                completion=int(data.get("completion") or 0),
                cached=int(data.get("cached") or 0),
                reasoning=int(data.get("reasoning") or 0),
            ),
            cost_micros=None if cost is None else int(cost),
            status=str(data.get("status") or UNKNOWN),
        )


def charge_for(model: str, use: TokenUse, table: Mapping[str, Price], *, estimated: bool = False) -> Charge:
    """The charge of one call of `model` with `use`; `estimated` when `use` is the local count."""
    found = find_price(model, table)
    if found is None:
        return Charge(model, use, None, UNKNOWN)
    return Charge(model, use, cost_micros(use, found[1]), ESTIMATED if estimated else REPORTED)
