"""A conversation's window policy and the exact counts stored with each message (TOK-5, WIN-2)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from chat_core.engine import tokens
from chat_core.engine.window import SEED_003_POLICY, WindowPolicy
from chat_core.store.records import MessageRecord

#: The most messages a conversation's own window policy may ask for (each one a Query item to read).
MAX_POLICY_MESSAGES = 200
#: API-24: a budget-only policy (tokens or characters, no `max_messages`) first reads as many messages as
#: its budget would hold at this many tokens a message (4 characters a token), with a quarter more
#: for a window recounted with another tokenizer; only a conversation of shorter messages reads again.
READ_TOKENS_PER_MESSAGE = 20
READ_MARGIN = 1.25


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


def _budget(stored: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The (tokens, characters) a budget-only policy reads for, with the margin; (None, None) otherwise."""
    if stored.get("max_messages") is not None:
        return None, None
    tokens_cap, chars_cap = stored.get("max_tokens"), stored.get("max_chars")
    return (
        None if tokens_cap is None else math.ceil(int(tokens_cap) * READ_MARGIN),
        None if chars_cap is None else math.ceil(int(chars_cap) * READ_MARGIN),
    )


def first_reach(stored: Mapping[str, Any] | None) -> int:
    """API-24: how many newest messages the first read takes: `history_reach`, except that a budget-only
    policy reads what its budget would hold at READ_TOKENS_PER_MESSAGE (`short_of_budget` says when
    that fell short). Reads cost what the window can use: a 2,000-token window does not parse 200
    messages of a long conversation."""
    reach = history_reach(stored)
    if stored is None or not has_limits(stored):
        return reach
    tokens_cap, chars_cap = _budget(stored)
    if tokens_cap is None and chars_cap is None:
        return reach
    wanted = max(
        math.ceil((tokens_cap or 0) / READ_TOKENS_PER_MESSAGE),
        math.ceil((chars_cap or 0) / (4 * READ_TOKENS_PER_MESSAGE)),
    )
    return max(int(SEED_003_POLICY.max_messages or 10), min(reach, wanted))


def short_of_budget(stored: Mapping[str, Any] | None, messages: Sequence[MessageRecord]) -> bool:
    """Whether `messages` (live ones, newest last) hold less than a budget-only policy's budget (with the
    margin), so older messages could still fit the window."""
    if stored is None or not has_limits(stored):
        return False
    tokens_cap, chars_cap = _budget(stored)
    if tokens_cap is not None and sum(m.tokens for m in messages) < tokens_cap:
        return True
    return chars_cap is not None and sum(len(m.content or "") for m in messages) < chars_cap
