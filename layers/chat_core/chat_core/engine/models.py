"""Model context config (WIN-4): context and output limits per model, config overrides, prompt budget."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: Share of the context kept free for the reply when no output size is configured (seed 001: ~20%).
DEFAULT_RESERVE_RATIO = 0.2


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """A model's hard limits: the whole context window and the longest reply it can produce."""

    context_length: int
    max_output_tokens: int


#: Limits of models the service is commonly pointed at, by name prefix (a dated or tagged variant such
#: as "gpt-4o-2024-08-06" or "llama3.1:8b" matches its prefix; the longest prefix wins).
BUILTIN_LIMITS: Mapping[str, ModelLimits] = {
    # OpenAI
    "gpt-4o": ModelLimits(128_000, 16_384),
    "gpt-4o-mini": ModelLimits(128_000, 16_384),
    "chatgpt-4o": ModelLimits(128_000, 16_384),
    "gpt-4.1": ModelLimits(1_047_576, 32_768),
    "gpt-4.1-mini": ModelLimits(1_047_576, 32_768),
    "gpt-4.1-nano": ModelLimits(1_047_576, 32_768),
    "gpt-4.5": ModelLimits(128_000, 16_384),
    "gpt-4-turbo": ModelLimits(128_000, 4_096),
    "gpt-4-1106": ModelLimits(128_000, 4_096),
    "gpt-4-0125": ModelLimits(128_000, 4_096),
    "gpt-4-32k": ModelLimits(32_768, 4_096),
    "gpt-4": ModelLimits(8_192, 4_096),
    "gpt-3.5-turbo": ModelLimits(16_385, 4_096),
    "gpt-3.5-turbo-instruct": ModelLimits(4_096, 4_096),
    "o1": ModelLimits(200_000, 100_000),
    "o1-mini": ModelLimits(128_000, 65_536),
    "o1-preview": ModelLimits(128_000, 32_768),
    "o3": ModelLimits(200_000, 100_000),
    "o3-mini": ModelLimits(200_000, 100_000),
    "o4-mini": ModelLimits(200_000, 100_000),
    "gpt-5": ModelLimits(400_000, 128_000),
    "gpt-5-mini": ModelLimits(400_000, 128_000),
    "gpt-5-nano": ModelLimits(400_000, 128_000),
    "gpt-5-chat": ModelLimits(128_000, 16_384),
    # DeepSeek
    "deepseek": ModelLimits(128_000, 8_192),
    "deepseek-chat": ModelLimits(128_000, 8_192),
    "deepseek-reasoner": ModelLimits(128_000, 65_536),
    # Anthropic
    "claude": ModelLimits(200_000, 4_096),
    "claude-3-5-sonnet": ModelLimits(200_000, 8_192),
    "claude-3-5-haiku": ModelLimits(200_000, 8_192),
    "claude-3-7-sonnet": ModelLimits(200_000, 64_000),
    "claude-sonnet-4": ModelLimits(200_000, 64_000),
    "claude-opus-4": ModelLimits(200_000, 32_000),
    "claude-haiku-4": ModelLimits(200_000, 64_000),
    # Meta Llama
    "llama": ModelLimits(8_192, 4_096),
    "llama-2": ModelLimits(4_096, 4_096),
    "llama2": ModelLimits(4_096, 4_096),
    "llama-3": ModelLimits(8_192, 4_096),
    "llama3": ModelLimits(8_192, 4_096),
    "llama-3.1": ModelLimits(131_072, 8_192),
    "llama3.1": ModelLimits(131_072, 8_192),
    "llama-3.2": ModelLimits(131_072, 8_192),
    "llama3.2": ModelLimits(131_072, 8_192),
    "llama-3.3": ModelLimits(131_072, 8_192),
    "llama3.3": ModelLimits(131_072, 8_192),
    "meta-llama-3": ModelLimits(8_192, 4_096),
    "meta-llama-3.1": ModelLimits(131_072, 8_192),
    "llama-4": ModelLimits(1_048_576, 16_384),
    "llama4": ModelLimits(1_048_576, 16_384),
    # Alibaba Qwen
    "qwen": ModelLimits(32_768, 8_192),
    "qwen2": ModelLimits(32_768, 8_192),
    "qwen2.5": ModelLimits(32_768, 8_192),
    "qwen3": ModelLimits(32_768, 8_192),
    "qwen-turbo": ModelLimits(1_000_000, 8_192),
    "qwen-plus": ModelLimits(131_072, 8_192),
    "qwen-max": ModelLimits(32_768, 8_192),
    "qwen-long": ModelLimits(10_000_000, 8_192),
}

#: Limits assumed for a model nobody described: small enough to be safe on most deployments.
DEFAULT_LIMITS = ModelLimits(8_192, 2_048)

# What may follow a table prefix in a variant's name ("gpt-4o-2024-08-06", "llama3.1:8b").
_BOUNDARIES = frozenset("-:@_/. ")

_ALIASES = {
    "contextLength": "context_length",
    "context_window": "context_length",
    "contextWindow": "context_length",
    "maxTokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "maxOutputTokens": "max_output_tokens",
    "reserveRatio": "reserve_ratio",
}
_KEYS = frozenset({"context_length", "max_tokens", "max_output_tokens", "reserve_ratio"})


def _normalise(model: str) -> str:
    # "openai/gpt-4o", "meta-llama/Llama-3.1-8B-Instruct": the provider path is not part of the name.
    return model.strip().lower().rsplit("/", 1)[-1]


def _match(name: str, table: Mapping[str, Any]) -> str | None:
    best: str | None = None
    for prefix in table:
        key = _normalise(prefix)
        if (name == key or (name.startswith(key) and name[len(key)] in _BOUNDARIES)) and (
            best is None or len(key) > len(_normalise(best))
        ):
            best = prefix
    return best


@lru_cache(maxsize=256)
def lookup_limits(model: str | None) -> tuple[str | None, ModelLimits | None]:
    """The built-in entry for `model` (longest matching prefix) and its limits, or (None, None)."""
    if not model:
        return None, None
    key = _match(_normalise(model), BUILTIN_LIMITS)
    return (key, BUILTIN_LIMITS[key]) if key is not None else (None, None)


def _positive_int(source: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"model config {source}{key} must be a positive integer, got {value!r}")
    return value


def _flatten(overrides: Mapping[str, Any], model: str | None) -> dict[str, Any]:
    """Config keys for `model`: top-level keys, then the best "models" entry on top (aliases resolved)."""
    merged: dict[str, Any] = {}
    layers: list[tuple[str, Mapping[str, Any]]] = [("", overrides)]
    per_model = overrides.get("models")
    if per_model is not None:
        if not isinstance(per_model, Mapping):
            raise ValueError(
                f"model config 'models' must be a mapping of model name to config, got {per_model!r}"
            )
        if model:
            key = _match(_normalise(model), {str(k): v for k, v in per_model.items()})
            if key is not None:
                entry = per_model[key]
                if not isinstance(entry, Mapping):
                    raise ValueError(f"model config models[{key!r}] must be a mapping, got {entry!r}")
                layers.append((f"models[{key!r}].", entry))
    for source, layer in layers:
        for raw_key, value in layer.items():
            if raw_key == "models" and not source:
                continue
            key = _ALIASES.get(raw_key, raw_key)
            if key not in _KEYS:
                continue  # other settings of the same config block (temperature, ...) are not ours
            if key == "reserve_ratio":
                if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
                    raise ValueError(
                        f"model config {source}{raw_key} must be a number in [0, 1), got {value!r}"
                    )
                merged[key] = float(value)
            else:
                merged[key] = _positive_int(source, raw_key, value)
    return merged


@dataclass(frozen=True, slots=True)
class ModelContext:
    """The context config of one model after the built-in table, the overrides and the clamps."""

    model: str
    context_length: int
    #: The model's hard limit on a reply.
    max_output_tokens: int
    #: The configured reply size (`max_tokens`), clamped to the hard limits; None when not configured.
    max_tokens: int | None
    reserve_ratio: float
    #: "builtin:<prefix>", "config" (context length from the overrides) or "default" (unknown model).
    source: str
    #: True when a configured `max_tokens` was above the model's hard limit and was lowered.
    clamped: bool = False

    @property
    def reserve_tokens(self) -> int:
        """Reply reserve: the configured `max_tokens`, else `reserve_ratio` of the context."""
        if self.max_tokens is not None:
            return self.max_tokens
        return min(self.context_length - 1, math.ceil(self.context_length * self.reserve_ratio))

    @property
    def prompt_budget(self) -> int:
        """Tokens the prompt may use: context length minus the reserve for the reply."""
        return self.context_length - self.reserve_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "context_length": self.context_length,
            "max_output_tokens": self.max_output_tokens,
            "max_tokens": self.max_tokens,
            "reserve_tokens": self.reserve_tokens,
            "prompt_budget": self.prompt_budget,
            "source": self.source,
            "clamped": self.clamped,
        }


def model_context(model: str | None, overrides: Mapping[str, Any] | None = None) -> ModelContext:
    """WIN-4: the context config of `model`.

    `overrides` is a config mapping: `context_length` (alias `contextLength`), `max_tokens` (the reply
    size to reserve; aliases `maxTokens`, `max_completion_tokens`), `max_output_tokens` (the model's hard
    reply limit) and `reserve_ratio`, at the top level and/or per model under `"models": {name: {...}}`
    (matched like the built-in table; the per-model entry wins). A configured `max_tokens` never
    exceeds the model's hard limits; an unknown model gets `DEFAULT_LIMITS`.
    """
    name = (model or "").strip() or "unknown"
    key, limits = lookup_limits(model)
    config = _flatten(overrides or {}, model)
    if limits is not None:
        source = f"builtin:{key}"
    else:
        limits, source = DEFAULT_LIMITS, "default"
    context_length = limits.context_length
    if "context_length" in config:
        context_length, source = config["context_length"], "config"
    if context_length < 2:
        raise ValueError(f"model config context_length must be at least 2, got {context_length}")
    max_output = min(config.get("max_output_tokens", limits.max_output_tokens), context_length - 1)
    max_tokens: int | None = config.get("max_tokens")
    clamped = False
    if max_tokens is not None and max_tokens > max_output:
        max_tokens, clamped = max_output, True
    return ModelContext(
        model=name,
        context_length=context_length,
        max_output_tokens=max_output,
        max_tokens=max_tokens,
        reserve_ratio=config.get("reserve_ratio", DEFAULT_RESERVE_RATIO),
        source=source,
        clamped=clamped,
    )


def prompt_token_budget(model: str | None, overrides: Mapping[str, Any] | None = None) -> int:
    """Tokens a prompt for `model` may use: context_length - reserve (configured max_tokens, else 20%)."""
    return model_context(model, overrides).prompt_budget
