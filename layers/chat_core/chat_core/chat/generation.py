"""What a turn sends the model besides its messages (API-11, API-12): the conversation's defaults with the
post's own settings on top, checked, the reply size lowered to the model's limit, the tools counted."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from chat_core.engine import tokens
from chat_core.engine.models import model_context
from chat_core.errors import InvalidSettings

#: The whole `tools` list, as JSON (UTF-8): a conversation's defaults are on its item, which every post
#: rewrites, so they stay far below DynamoDB's 400 KB.
MAX_TOOLS_BYTES: Final = 64 * 1024
#: The two names of the reply size; a post's own one replaces a default given under the other name.
REPLY_SIZE_KEYS: Final = ("max_completion_tokens", "max_tokens")


@dataclass(frozen=True)
class TurnSettings:
    """The settings of one turn.

    `options` is what the request to the model carries besides `model` and `messages`, as the caller
    gave it except the reply size; `reply_tokens` is that size after the clamp (kept free in the window),
    `requested_reply_tokens` what was asked, `tool_tokens` what the tool definitions cost (TOK-8).
    """

    options: dict[str, Any] = field(default_factory=dict)
    reply_tokens: int | None = None
    requested_reply_tokens: int | None = None
    tool_tokens: int = 0

    @property
    def clamped(self) -> bool:
        return self.requested_reply_tokens != self.reply_tokens

    def window_stats(self) -> dict[str, Any]:
        """What the window route reports of these settings."""
        return {
            "tool_tokens": self.tool_tokens,
            "reply_tokens": self.reply_tokens,
            "reply_tokens_clamped": self.clamped,
        }


NO_SETTINGS: Final = TurnSettings()


def merge(defaults: Mapping[str, Any] | None, own: Mapping[str, Any] | None) -> dict[str, Any]:
    """API-12: the conversation's defaults with the post's fields on top, key by key; a post's explicit
    null leaves that default out of the turn."""
    merged = dict(defaults or {})
    for key, value in (own or {}).items():
        if key in REPLY_SIZE_KEYS:
            for other in REPLY_SIZE_KEYS:
                merged.pop(other, None)
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def check(settings: Mapping[str, Any]) -> None:
    """API-11: the settings a model would refuse together, refused here first (422 naming the field)."""
    tools = settings.get("tools") or []
    if tools:
        size = len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        if size > MAX_TOOLS_BYTES:
            raise InvalidSettings(
                f"tools take {size} bytes as JSON; at most {MAX_TOOLS_BYTES} are accepted", field="tools"
            )
        names = [tool["function"]["name"] for tool in tools]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise InvalidSettings(f"tools define {', '.join(duplicates)} more than once", field="tools")
    choice = settings.get("tool_choice")
    if choice is not None and not tools:
        raise InvalidSettings("tool_choice is only allowed with tools", field="tool_choice")
    if settings.get("parallel_tool_calls") is not None and not tools:
        raise InvalidSettings("parallel_tool_calls is only allowed with tools", field="parallel_tool_calls")
    if isinstance(choice, Mapping):
        wanted = choice["function"]["name"]
        if wanted not in {tool["function"]["name"] for tool in tools}:
            raise InvalidSettings(
                f"tool_choice names {wanted!r}, which tools do not define", field="tool_choice"
            )


def turn_settings(
    defaults: Mapping[str, Any] | None, own: Mapping[str, Any] | None, model: str
) -> TurnSettings:
    """The settings one turn sends `model` (checked; raises InvalidSettings or PayloadTooLarge)."""
    options = merge(defaults, own)
    if not options:
        return NO_SETTINGS
    check(options)
    requested = reply = None
    for key in REPLY_SIZE_KEYS:
        if key in options:
            requested = int(options[key])
            # WIN-4: never above what the model can produce (nor its context).
            reply = min(requested, model_context(model).max_output_tokens)
            options[key] = reply
    return TurnSettings(
        options=options,
        reply_tokens=reply,
        requested_reply_tokens=requested,
        tool_tokens=int(tokens.count_tool_tokens(options.get("tools"), model)),
    )
