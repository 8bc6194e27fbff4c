"""Pinning: a pinned message is kept in every window before other history (WIN-3)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from chat_core.chat.rules import check_id, not_found
from chat_core.chat.views import message_view
from chat_core.errors import ConversationBusy, MessageNotFound, PinRefused
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import get_settings
from chat_core.store import conversations as store
from chat_core.store.base import contention_backoff
from chat_core.store.records import MessageRecord

#: Pinned messages per conversation, and the text their copies on the conversation item may hold.
MAX_PINNED = 20


MAX_PINNED_BYTES = 64 * 1024


def _pin_entry(message: MessageRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "seq": message.seq,
        "message_id": message.message_id,
        "role": message.role,
        "content": message.content or "",
        "tokens": message.tokens,
    }
    if message.name:
        entry["name"] = message.name
    return entry


def _check_pinnable(message: MessageRecord) -> None:
    if message.role == "tool" or message.tool_calls:
        raise PinRefused(
            "tool calls and tool results cannot be pinned: the window keeps or drops them as a group"
        )
    if message.status != "ok":
        raise PinRefused("a failed reply cannot be pinned; it is never sent to the model")


def pin_message(owner: str, conversation_id: str, message_id: str, pinned: bool) -> dict[str, Any]:
    """PATCH /conversations/{id}/messages/{message_id}: pin or unpin a message (WIN-3), 200 with it.

    A pinned message is copied onto the conversation item, so the post's one Query still gives the window
    everything; at most MAX_PINNED messages and MAX_PINNED_BYTES of pinned text per conversation.
    """
    check_id(conversation_id)
    settings = get_settings()
    for attempt in range(max(1, settings.post_attempts)):
        conversation = store.get_conversation(owner, conversation_id)
        if conversation is None or conversation.is_deleted:
            raise not_found(conversation_id)
        message = store.find_message(owner, conversation_id, message_id)
        if message is None:
            raise MessageNotFound(f"message {message_id!r} not found in conversation {conversation_id!r}")
        entries = [e for e in conversation.pinned or [] if e.get("message_id") != message_id]
        listed = len(entries) != len(conversation.pinned or [])
        if listed == pinned and bool(message.pinned) == pinned:
            return message_view(message)  # already so: nothing to write
        if pinned:
            _check_pinnable(message)
            entries = sorted([*entries, _pin_entry(message)], key=lambda e: int(e["seq"]))
            if len(entries) > MAX_PINNED:
                raise PinRefused(
                    f"a conversation can have at most {MAX_PINNED} pinned messages; unpin one first"
                )
            # Counted as stored (JSON, escaped) on the conversation item, which must stay under 400 KB.
            size = len(json.dumps(entries))
            if size > MAX_PINNED_BYTES:
                raise PinRefused(
                    f"pinned messages would take {size} bytes stored; the limit is {MAX_PINNED_BYTES} "
                    f"per conversation"
                )
        try:
            store.set_pinned(conversation, message, pinned, entries)
        except store.PinConflict:
            time.sleep(contention_backoff(attempt))
            continue
        message = replace(message, pinned=pinned)
        logger.info("message pinned" if pinned else "message unpinned", conversation_id=conversation_id)
        metrics.add_metric(
            name="MessagesPinned" if pinned else "MessagesUnpinned", unit=MetricUnit.Count, value=1
        )
        return message_view(message)
    raise ConversationBusy("the conversation's pinned messages kept changing; retry the request")
