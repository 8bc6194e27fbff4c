"""How a post rides out contention and failures without losing or wedging anything (REL).

- `contention_backoff`: the pause between TransactWrite #1 attempts when another post took the sequence
  (defined beside the store, which uses it too).
- `cap_reply`: a model reply too large for its DynamoDB item becomes a provider failure (502, stored).
- `fit_item`: an error reply's provider record is shrunk until the item fits under DynamoDB's 400 KB.
- `close_failed_turn`: when TransactWrite #2 fails, an error reply goes into the reserved slot instead.
- `repair_abandoned`: a reserved slot a crashed post never filled is closed by the next post.

Either way the turn log ends the turn (seed 002): an error step for the error reply and `turn_end` status
error, in the same TransactWrite as the reply, and the turn's state leaves the conversation item.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.engine import turn_resume, turnlog
from chat_core.engine.text import utf8_bytes
from chat_core.engine.tool_pairing import MAX_MESSAGE_TOOL_CALLS_BYTES
from chat_core.engine.turnlog import LogEvent, Tokens, TurnRecorder, TurnState
from chat_core.errors import ProviderFailed, StoreUnavailable
from chat_core.llm.completion import MAX_RECORDED_BODY_BYTES, Completion
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import repair, sizes
from chat_core.store.base import contention_backoff as contention_backoff
from chat_core.store.keys import message_id_for
from chat_core.store.records import ConversationRecord, MessageRecord, MessageUsage

_SHRUNK_BODY_BYTES: Final = 8 * 1024
_MAX_ERROR_MESSAGE_CHARS: Final = 2000

INTERRUPTED_TURN: Final = (
    "the turn was interrupted before its reply was stored (the service stopped or could not write); "
    "the question is kept: ask again"
)
UNSTORED_REPLY: Final = "the reply could not be stored ({cause}); the question is kept: ask again"


def reply_bytes(completion: Completion) -> int:
    """What the reply adds to its item: the content and refusal (UTF-8), the tool calls and the extras
    (stored as JSON text)."""
    calls = json.dumps(completion.tool_calls) if completion.tool_calls else ""
    extras = json.dumps(completion.extras) if completion.extras else ""
    return utf8_bytes(completion.content) + utf8_bytes(completion.refusal or "") + len(calls) + len(extras)


def cap_reply(
    completion: Completion | None, failure: ProviderFailed | None, settings: Settings | None = None
) -> tuple[Completion | None, ProviderFailed | None]:
    """A reply over `max_reply_bytes` becomes a `too_large` failure: stored as an error turn (API-2)."""
    if completion is None:
        return completion, failure
    limit = (settings or get_settings()).max_reply_bytes
    size = reply_bytes(completion)
    calls = len(json.dumps(completion.tool_calls)) if completion.tool_calls else 0
    if size <= limit and calls <= MAX_MESSAGE_TOOL_CALLS_BYTES:
        return completion, failure
    # The pending calls also go on the conversation item while the turn waits: same cap as a client's.
    what, size, limit = (
        ("reply", size, limit) if size > limit else ("tool calls", calls, MAX_MESSAGE_TOOL_CALLS_BYTES)
    )
    raw = json.dumps(completion.raw, ensure_ascii=False).encode("utf-8")
    record: dict[str, Any] = {
        "status_code": 200,
        "headers": {},
        "body": raw[:MAX_RECORDED_BODY_BYTES].decode("utf-8", "ignore"),
        "truncated": True,
        "body_bytes_read": len(raw),
        "model": completion.model,
    }
    logger.warning("model reply too large to store", part=what, bytes=size, limit=limit)
    return None, ProviderFailed(
        f"the model's {what} has {size} bytes; the limit is {limit}",
        provider_response=record,
        status_code=200,
        kind="too_large",
    )


def _shrunk(record: Any) -> dict[str, Any]:
    """The provider record reduced to its status and the start of its body."""
    if not isinstance(record, dict):
        return {"truncated": True}
    body = record.get("body")
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return {
        "status_code": record.get("status_code"),
        "body": text.encode("utf-8")[:_SHRUNK_BODY_BYTES].decode("utf-8", "ignore"),
        "truncated": True,
    }


def fit_item(reply: MessageRecord) -> MessageRecord:
    """The reply with its error record shrunk until the item is under the budget (never over DynamoDB's
    400 KB)."""
    if sizes.model_bytes(reply) <= sizes.ITEM_BUDGET_BYTES or not isinstance(reply.error, dict):
        return reply
    error = dict(reply.error)
    error["message"] = str(error.get("message", ""))[:_MAX_ERROR_MESSAGE_CHARS]
    error["provider_response"] = _shrunk(error.get("provider_response"))
    reply = replace(reply, error=error)
    if sizes.model_bytes(reply) > sizes.ITEM_BUDGET_BYTES:
        reply = replace(reply, error={**error, "provider_response": {"truncated": True}})
    logger.warning("provider record shrunk to fit the item", item_bytes=sizes.model_bytes(reply))
    return reply


def error_reply(
    conversation: ConversationRecord, seq: int, message: str, *, model: str | None = None
) -> MessageRecord:
    """An assistant error message (API-1 shape, usage 0) for reply slot `seq`."""
    return MessageRecord(
        owner=conversation.owner,
        conversation_id=conversation.conversation_id,
        seq=seq,
        message_id=message_id_for(seq),
        role="assistant",
        content="",
        status="error",
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        model=model or conversation.model,
        tokens=0,
        usage=MessageUsage(0, 0, 0),
        usage_reported=False,
        local_usage=MessageUsage(0, 0, 0),
        error={"message": message, "provider_response": None},
    )


def _conversation_tokens(conversation: ConversationRecord) -> Tokens:
    """The conversation's totals as read (an error reply adds nothing to them)."""
    return Tokens(
        prompt=conversation.prompt_tokens,
        completion=conversation.completion_tokens,
        total=conversation.total_tokens,
        local_prompt=conversation.local_prompt_tokens,
        local_completion=conversation.local_completion_tokens,
    )


def _closing_events(
    conversation: ConversationRecord,
    recorder: TurnRecorder | None,
    reply: MessageRecord,
    closed_by: turnlog.ClosedBy,
) -> list[LogEvent]:
    """The error step standing for `reply` and turn_end status error (none without a turn to close)."""
    if recorder is None:
        return []
    error = reply.error if isinstance(reply.error, dict) else {}
    recorder.interrupted(
        message_id=reply.message_id,
        model=str(reply.model),
        error_message=str(error.get("message", "")),
        closed_by=closed_by,
        conversation_tokens=_conversation_tokens(conversation),
    )
    return recorder.take_events()


def close_failed_turn(
    conversation: ConversationRecord,
    reply: MessageRecord,
    cause: BaseException,
    *,
    turn: Mapping[str, Any] | None = None,
    turn_on_item: bool = False,
) -> bool:
    """After TransactWrite #2 failed: put an error reply into the reserved slot (best effort, never raises).

    `turn` is the turn's state as TransactWrite #1 left it (`TurnState.to_json()`): the closing events
    take the indexes the lost reply's events would have had, so a late landing of the original write and
    this close exclude each other. `turn_on_item` says TransactWrite #1 also stored that state on the
    conversation item (a post of tool results): it is removed with the close.
    If this fails too, the slot stays empty and the next post repairs it (`repair_abandoned`).
    """
    why = getattr(cause, "code", None) or type(cause).__name__
    fallback = error_reply(conversation, reply.seq, UNSTORED_REPLY.format(cause=why), model=reply.model)
    fallback = replace(fallback, parent_seq=reply.parent_seq, charges=reply.charges)
    state = TurnState.from_json(turn)
    recorder = TurnRecorder.resume(state) if state is not None else None
    events = _closing_events(conversation, recorder, fallback, "fallback")
    try:
        closed = repair.close_turn(
            conversation, fallback, events=events, open_turn=turn if turn_on_item else None
        )
    except StoreUnavailable as exc:
        logger.warning("failed turn left open for repair", seq=reply.seq, error=exc.message)
        return False
    logger.warning("reply not stored; turn closed as error", seq=reply.seq, closed=closed, cause=why)
    return closed


def _age_s(created_at: str | None, now: datetime) -> float:
    try:
        stamp = datetime.strptime(str(created_at), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return 0.0  # unreadable: treat as fresh, never repair on a guess
    return (now - stamp).total_seconds()


def abandoned_slots(
    messages: Sequence[MessageRecord],
    next_seq: int,
    now: datetime,
    stale_after_s: float,
    slot_parents: Mapping[str, Any] | None = None,
) -> list[int]:
    """Sequence numbers below `next_seq` with no message, whose preceding message is older than a turn
    (a regeneration's slot, API-18: whose reservation is; it does not follow the message before it).

    TransactWrite #1 reserves the reply's slot; only a post that died (or could not write at all) leaves
    it empty for longer than a function may run. Slots of posts still running are left alone.
    """
    by_seq = {m.seq: m for m in messages}
    if not by_seq:
        return []
    slots = []
    for seq in range(min(by_seq), next_seq):
        if seq in by_seq:
            continue
        entry = (slot_parents or {}).get(str(seq))
        before = by_seq.get(seq - 1)
        if isinstance(entry, Mapping):
            reserved_at = entry.get("at")
        elif before is not None:
            reserved_at = before.created_at
        else:
            continue
        if _age_s(reserved_at, now) >= stale_after_s:
            slots.append(seq)
    return slots


def _abandoned_turn(
    conversation: ConversationRecord, message_id: str
) -> tuple[TurnRecorder | None, Mapping[str, Any] | None]:
    """The turn that recorded `message_id` (the message before the slot, or the one a regeneration
    answered again), resumed from its stored events, and that turn's state on the conversation item, if
    the item still holds it (a crashed post of tool results leaves it)."""
    logged = repair.read_turn_of(conversation, message_id)
    if logged is None:
        logger.warning("interrupted turn not found in the turn log; closed without turn_end", ref=message_id)
        return None, None
    recorder = turn_resume.resume_from_log(logged)
    if recorder is None:
        return None, None  # the log ended it already: only the reply is missing
    held = TurnState.from_json(conversation.open_turn)
    if held is None or held.turn != recorder.turn or held.pending:
        return recorder, None
    return recorder, conversation.open_turn


def repair_abandoned(
    conversation: ConversationRecord, messages: Sequence[MessageRecord], settings: Settings | None = None
) -> int:
    """Close every abandoned reply slot among `messages` as an error turn; returns how many were closed.

    Each close also ends the turn in the log (error step, turn_end status error, `closedBy: "repair"`):
    the turn is found from its stored events (one Query, only on this rare path). Idempotent: a slot
    closed meanwhile, by another repair or a late reply, makes the close write nothing.
    Never raises: a post must not fail because an old turn could not be repaired this time.
    """
    settings = settings or get_settings()
    slot_parents = conversation.slot_parents or {}
    slots = abandoned_slots(
        messages,
        conversation.next_seq,
        datetime.now(UTC),
        settings.abandoned_turn_seconds,
        slot_parents,
    )
    by_seq = {m.seq: m for m in messages}
    closed = 0
    for seq in slots:
        reply = error_reply(conversation, seq, INTERRUPTED_TURN)
        entry = slot_parents.get(str(seq))
        if isinstance(entry, Mapping):
            reply, ref = replace(reply, parent_seq=int(entry["parent"])), str(entry.get("ref") or "")
        else:
            ref = by_seq[seq - 1].message_id
        try:
            recorder, open_turn = _abandoned_turn(conversation, ref)
            events = _closing_events(conversation, recorder, reply, "repair")
            closed += repair.close_turn(conversation, reply, events=events, open_turn=open_turn)
        except StoreUnavailable as exc:
            logger.warning("abandoned turn not repaired this time", seq=seq, error=exc.message)
    if closed:
        metrics.add_metric(name="TurnsRepaired", unit=MetricUnit.Count, value=closed)
        logger.warning(
            "abandoned turns closed as error", conversation_id=conversation.conversation_id, count=closed
        )
    return closed
