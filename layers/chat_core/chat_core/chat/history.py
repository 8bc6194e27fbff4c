"""Writing history without the model (API-18): append messages as given, delete one message.

Agent frameworks keep their own loop and only need durable memory: they append what happened (user
input, the model's answer with its usage, tool calls and results) and pop the last item. Imports append
a conversation recorded elsewhere. Both are turns of their own in the turn log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.chat import attachments, prices
from chat_core.chat.assembly import read_history
from chat_core.chat.commands import AppendMessages
from chat_core.chat.once import once
from chat_core.chat.policy import count_message, counted_with
from chat_core.chat.rules import (
    check_content,
    check_id,
    check_parts,
    conversation_of,
    now_iso,
    pending_calls,
)
from chat_core.chat.views import message_view
from chat_core.engine import tool_pairing
from chat_core.engine.costs import Charge
from chat_core.engine.turnlog import TurnRecorder
from chat_core.engine.window import OPENAI_KEYS
from chat_core.errors import ConversationBusy, InvalidInput, PayloadTooLarge, ToolResultsPending
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as store
from chat_core.store import sizes, tree
from chat_core.store.base import contention_backoff
from chat_core.store.keys import message_id_for
from chat_core.store.ledger import reply_day
from chat_core.store.records import ConversationRecord, MessageRecord, MessageUsage

#: What one append may write in its one TransactWrite (DynamoDB takes 4 MB a transaction).
MAX_APPEND_BYTES: Final = 3 * 1024 * 1024
#: API-22: the most a message's `metadata` may take, as compact JSON.
MAX_METADATA_BYTES: Final = 64 * 1024


def _check_before_io(request: AppendMessages, settings: Settings) -> list[dict[str, Any]]:
    """Each message within a post's limits (API-3, API-15, tool caps), before any I/O; the messages as
    OpenAI-format dicts."""
    given = [dict(m) for m in request.messages]
    for index, message in enumerate(given):
        try:
            if message["role"] == "user":
                content = message["content"]
                parts = content if isinstance(content, list) else None
                check_parts(_text(content), parts, settings)
            elif message["role"] == "system":
                check_content(message["content"], settings)
        except (InvalidInput, PayloadTooLarge) as exc:
            exc.details["field"] = f"messages[{index}].content"
            raise
        if "metadata" in message:
            size = len(json.dumps(message["metadata"], ensure_ascii=False, separators=(",", ":")).encode())
            if size > MAX_METADATA_BYTES:
                raise PayloadTooLarge(
                    f"messages[{index}].metadata takes {size} bytes as JSON; "
                    f"the limit is {MAX_METADATA_BYTES}",
                    field=f"messages[{index}].metadata",
                    size=size,
                    limit=MAX_METADATA_BYTES,
                )
    tool_pairing.check_sizes([m for m in given if m["role"] in ("assistant", "tool")])
    return given


def _text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def _build(
    owner: str,
    conversation: ConversationRecord,
    given: Sequence[Mapping[str, Any]],
    names: Sequence[str | None],
    settings: Settings,
) -> list[MessageRecord]:
    """The messages (records), from `next_seq` on, counted at write (TOK-5) with the usage given."""
    model = conversation.model
    first = conversation.next_seq
    items = []
    for offset, (message, name) in enumerate(zip(given, names, strict=True)):
        seq = first + offset
        role = message["role"]
        content = message.get("content")
        parts = content if isinstance(content, list) else None
        counted = {key: message[key] for key in OPENAI_KEYS if message.get(key) is not None}
        counted.setdefault("content", None)
        if role == "assistant" and message.get("refusal") and not content:
            counted["content"] = message["refusal"]
        item = MessageRecord(
            owner=owner,
            conversation_id=conversation.conversation_id,
            seq=seq,
            message_id=message_id_for(seq),
            role=role,
            content=_text(content) if isinstance(content, list) else content,
            parts=attachments.store_parts(owner, conversation.conversation_id, parts, settings)
            if parts
            else None,
            status="ok",
            created_at=now_iso(),
            tokens=count_message(counted, model),
            tokens_encoding=counted_with(model),
            tool_calls=message.get("tool_calls"),
            tool_call_id=message.get("tool_call_id"),
            name=name,
            metadata=message.get("metadata"),
        )
        if role == "assistant":
            usage = message.get("usage")
            tokens = item.tokens
            item = replace(
                item,
                model=message.get("model") or model,
                refusal=message.get("refusal"),
                local_usage=MessageUsage(0, tokens, tokens),
            )
            if usage:
                given_total = usage.get("total_tokens")
                total = (
                    int(given_total)
                    if given_total is not None
                    else usage["prompt_tokens"] + usage["completion_tokens"]
                )
                details = {k: usage[k] for k in _DETAIL_KEYS if usage.get(k)}
                item = replace(
                    item,
                    usage=MessageUsage(usage["prompt_tokens"], usage["completion_tokens"], total),
                    usage_reported=True,
                    extras={**(item.extras or {}), **details} if details else item.extras,
                )
                item, _ = prices.cost_message(item, estimated=False, settings=settings)
            else:
                item = replace(item, usage=MessageUsage(0, tokens, tokens), usage_reported=False)
        items.append(item)
    return items


#: The usage breakdowns an appended answer may carry (cached and reasoning tokens), kept in `extras` as a
#: post keeps a model's (API-10).
_DETAIL_KEYS: Final = ("prompt_tokens_details", "completion_tokens_details")


def _charges(messages: Sequence[MessageRecord]) -> list[tuple[str, Charge]]:
    """COST-2: what appended answers with a reported usage cost, for the conversation's totals (the
    owner's usage of the day adds them from the table's stream, COST-3, or with budgets on the append's
    own transaction, COST-4)."""
    return [
        (reply_day(m), prices.charge_of(m))
        for m in messages
        if m.role == "assistant" and m.cost_status is not None
    ]


def _usage_added(messages: Sequence[MessageRecord]) -> tuple[list[int], list[int]]:
    """What appended answers add to the totals: their reported usage, and their local count."""
    reported, local = [0, 0, 0], [0, 0]
    for message in messages:
        if message.role != "assistant":
            continue
        if message.usage_reported and message.usage is not None:
            reported[0] += message.usage.prompt_tokens
            reported[1] += message.usage.completion_tokens
            reported[2] += message.usage.total_tokens
        local[1] += message.tokens
    return reported, local


def append_messages(
    owner: str, conversation_id: str, request: AppendMessages, *, idempotency_key: str | None = None
) -> dict[str, Any]:
    """POST /conversations/{id}/messages: store `messages` at the end of the active path as given, in
    one TransactWrite, with no model call; 201 with the stored messages."""
    check_id(conversation_id)
    settings = get_settings()
    given = _check_before_io(request, settings)

    def run() -> tuple[dict[str, Any], dict[str, Any]]:
        stored = _append(owner, conversation_id, given, settings)
        answer = {"conversation_id": conversation_id, "messages": [message_view(m) for m in stored]}
        return answer, {"first_seq": stored[0].seq, "last_seq": stored[-1].seq}

    def replay(record: Mapping[str, Any]) -> dict[str, Any]:
        found = store.read_messages(owner, conversation_id, int(record["first_seq"]), int(record["last_seq"]))
        return {"conversation_id": conversation_id, "messages": [message_view(m) for m in found]}

    body = {"conversation_id": conversation_id, "messages": given}
    return once("append_messages", owner, idempotency_key, body, run, replay)


def _append(
    owner: str, conversation_id: str, given: Sequence[Mapping[str, Any]], settings: Settings
) -> list[MessageRecord]:
    for attempt in range(max(1, settings.post_attempts)):
        recent = read_history(owner, conversation_id, None)
        conversation = conversation_of(recent.conversation, conversation_id)
        _, waiting = pending_calls(conversation, recent.read)
        if waiting:
            ids = ", ".join(call["id"] for call in waiting)
            raise ToolResultsPending(
                f"the model asked for tool calls {ids} in a post; post their results with POST /messages "
                "(the model answers them), or delete that answer first"
            )
        keys = ("role", "tool_calls", "tool_call_id")
        history = [{k: getattr(m, k) for k in keys} for m in recent.messages]
        names = tool_pairing.pair_appended(given, tool_pairing.open_calls(history))
        messages = _build(owner, conversation, given, names, settings)
        size = sum(sizes.model_bytes(m) for m in messages)
        if size > MAX_APPEND_BYTES:
            raise PayloadTooLarge(
                f"these messages take {size} bytes stored; one append may write at most "
                f"{MAX_APPEND_BYTES}: append them in smaller batches",
                field="messages",
                size=size,
                limit=MAX_APPEND_BYTES,
            )
        turn = conversation.turn_count + 1
        recorder = TurnRecorder.new(turn)
        for message in messages:
            recorder.history_step(
                "append",
                content=message.content,
                meta={"messageId": message.message_id, "role": message.role, "tokens": message.tokens},
            )
        shape = None
        if conversation.active_leaf is not None:
            messages = tree.link_parents(messages, conversation.active_leaf)
            shape = store.TreeWrite(
                expected_leaf=conversation.active_leaf,
                leaf=messages[-1].seq,
                links=[(conversation.active_leaf, messages[0].seq)],
            )
        try:
            store.append_messages(
                conversation,
                messages,
                messages[-1].created_at,
                events=recorder.take_events(),
                turn=turn,
                reserve_reply=False,
                reconcile=[m for m in recent.read if m.pending_totals is not None],
                tree=shape,
                added=_usage_added(messages),
                charges=_charges(messages),
                count_usage=settings.budgets_on,
            )
        except store.SequenceConflict:
            logger.info("append raced a post", conversation_id=conversation_id, attempt=attempt + 1)
            time.sleep(contention_backoff(attempt))
            continue
        metrics.add_metric(name="MessagesAppended", unit=MetricUnit.Count, value=len(messages))
        return messages
    raise ConversationBusy("too many concurrent posts to this conversation; retry the request")
