"""A conversation's window policy and the exact counts stored with each message (TOK-5, WIN-2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chat_core.engine import tokens
from chat_core.engine.window import SEED_003_POLICY, WindowPolicy

#: The most messages a conversation's own window policy may ask for (each one a Query item to read).
MAX_POLICY_MESSAGES = 200


def count_message(message: Mapping[str, Any], model: str) -> int:
    """TOK-5: the exact chat-format count of one message, computed once at write time."""

    return int(tokens.count_message_tokens(message, method="exact", model=model))


def counted_with(model: str) -> str:
    """TOK-5: the tokenizer count_message() counts `model`'s messages with, stored beside the count."""

    return tokens.encoding_for_model(model)


#: The keys of a stored policy that limit the window (`recall` alone keeps the WIN-2 default).
LIMITS = ("max_messages", "max_chars", "max_tokens")


def has_limits(stored: Mapping[str, Any] | None) -> bool:
    return stored is not None and any(stored.get(name) is not None for name in LIMITS)


def window_policy(stored: Mapping[str, Any] | None, model: str) -> WindowPolicy:
    """The conversation's window policy: WIN-2 by default, else its own within the model's context."""

    if stored is None or not has_limits(stored):
        return SEED_003_POLICY
    method = stored.get("method", "exact")
    return WindowPolicy.for_model(
        model,
        name="conversation",
        max_messages=stored.get("max_messages"),
        max_chars=stored.get("max_chars"),
        max_tokens=stored.get("max_tokens"),
        method=method,
        honor_pinned=False,
        # Stored counts are exact chat-format counts (TOK-5); reuse them only when counting exactly.
        reuse_stored_tokens=method == "exact",
    )


def history_reach(stored: Mapping[str, Any] | None) -> int:
    """How many newest messages the window can ever use, i.e. the Query's Limit minus the meta item."""

    if stored is None or not has_limits(stored):
        return int(SEED_003_POLICY.max_messages or 10)
    return int(stored.get("max_messages") or MAX_POLICY_MESSAGES)
