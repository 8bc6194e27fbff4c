"""A Responses answer's own settings (RSP-2): the settings its create call answered, kept on the answer,
and the `instructions` that apply to its turn only.

The settings are kept on the item the post writes anyway, the answer's assistant message (no extra
write): only those the request set (a response made with none keeps nothing, so its item is exactly a
post's), as compact JSON, zlib-compressed once they pass `COMPRESS_FROM` bytes (tool definitions and
long instructions shrink several times). A response that continues one with the same settings (an
agent sends its instructions and tools every turn) keeps only a reference to the answer that holds
them, `=<seq>:<digest>`, in the same conversation; reading it back costs one GetItem more. When the
answer and its settings would not fit one item together, the largest settings are left out and named
under `omitted`; the answer is always kept.

`instructions` are sent to the model as a system message for the one turn they came with, before the
conversation's own system prompt (set through our routes, or by `system` / `developer` input items); a
later response that does not send them again does not carry them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from chat_core.chat.policy import count_message
from chat_core.observability import logger
from chat_core.store import sizes
from chat_core.store.records import ConversationRecord, MessageRecord

#: Kept as plain JSON up to this many bytes; compressed above it.
COMPRESS_FROM: Final = 512
_COMPRESSED: Final = "z:"
_REFERENCE: Final = re.compile(r"=(\d+):([0-9a-f]{12})")


def _digest(stored: str) -> str:
    return hashlib.sha256(stored.encode("utf-8")).hexdigest()[:12]


def shared(
    settings: Mapping[str, Any] | None, previous: MessageRecord | None
) -> Mapping[str, Any] | str | None:
    """The settings to keep on an answer that continues `previous`: a reference to the answer holding
    the same ones, when `previous` holds or names them; else the settings."""
    stored = encode(settings or {})
    if stored is None or previous is None or not previous.settings:
        return settings
    found = _REFERENCE.fullmatch(previous.settings)
    if found is not None:
        return previous.settings if found.group(2) == _digest(stored) else settings
    return f"={previous.seq}:{_digest(stored)}" if previous.settings == stored else settings


def reference(value: str | None) -> int | None:
    """The seq of the answer whose settings a stored reference names; None when `value` is not one."""
    found = _REFERENCE.fullmatch(value or "")
    return int(found.group(1)) if found is not None else None


def encode(settings: Mapping[str, Any]) -> str | None:
    """The stored form of `settings` (None when there are none)."""
    if not settings:
        return None
    text = json.dumps(settings, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    raw = text.encode("utf-8")
    if len(raw) <= COMPRESS_FROM:
        return text
    packed = _COMPRESSED + base64.b64encode(zlib.compress(raw, 9)).decode("ascii")
    return packed if len(packed) < len(raw) else text


def decode(value: str | None) -> dict[str, Any]:
    """The settings of a stored answer ({} when it keeps none)."""
    if not value or reference(value) is not None:
        return {}
    if value.startswith(_COMPRESSED):
        value = zlib.decompress(base64.b64decode(value[len(_COMPRESSED) :])).decode("utf-8")
    decoded = json.loads(value)
    return dict(decoded) if isinstance(decoded, Mapping) else {}


def attach(reply: MessageRecord, settings: Mapping[str, Any] | str | None) -> MessageRecord:
    """The answer with its settings (or a reference, see `shared`) kept on it, the largest left out
    while the item would not fit."""
    if not settings:
        return reply
    if isinstance(settings, str):
        return replace(reply, settings=settings)
    kept = dict(settings)
    omitted: list[str] = []
    while kept:
        shown = {**kept, "omitted": sorted(omitted)} if omitted else kept
        candidate = replace(reply, settings=encode(shown))
        if sizes.model_bytes(candidate) <= sizes.ITEM_BUDGET_BYTES:
            if omitted:
                logger.warning("response settings left out to fit the answer's item", omitted=omitted)
            return candidate
        largest = max(kept, key=lambda name: len(json.dumps(kept[name], ensure_ascii=False)))
        omitted.append(largest)
        kept.pop(largest)
    return replace(reply, settings=encode({"omitted": sorted(omitted)}))


def for_turn(conversation: ConversationRecord, instructions: str | None, model: str) -> ConversationRecord:
    """The conversation as one turn's window sees it: `instructions` before its own system prompt (the
    stored conversation is unchanged)."""
    if not instructions:
        return conversation
    prompt = "\n\n".join(p for p in (instructions, conversation.system_prompt) if p)
    tokens = count_message({"role": "system", "content": prompt}, model)
    return replace(conversation, system_prompt=prompt, system_tokens=tokens)
