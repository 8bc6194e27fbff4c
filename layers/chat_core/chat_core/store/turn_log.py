"""Turn-log events on the message items that carry them (`Message.log`), and EventItems for the rest.

A transaction that writes messages writes its turn's events (turn_start, steps, final, turn_end) onto
the last message it writes, encoded by `engine.turnlog_codec` against that message: a normal post writes
no EventItem at all. Events with no message in their transaction (session_start, session_end, history
changes, a regeneration's turn_start) and a log too large for its message stay EventItems, as do all
events written before messages carried them: readers merge both (`store.turn_reads`).

Message-borne events keep the order the log has: a transaction's events follow every event of the
messages before its message (TransactWrite #1 takes the turn number and the reply's slot together), so
in seq order the carried events are in (turn, index) order, and `Conversation.log_from` says from which
seq on messages may carry any.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from chat_core.engine import turnlog_codec
from chat_core.engine.turnlog import LogEvent
from chat_core.store.items import EventItem, Message
from chat_core.store.keys import SESSION_END_SK, event_sk
from chat_core.store.records import MessageRecord

#: Past this many bytes of encoded log the events stay EventItems (a turn with dozens of tool calls).
MAX_LOG_BYTES: Final = 16_384
_CARRIED = frozenset(turnlog_codec.event_types())


def _usage(value: Any) -> tuple[int, int, int] | None:
    if value is None:
        return None
    return (int(value.prompt_tokens), int(value.completion_tokens), int(value.total_tokens))


def carrier(message: MessageRecord) -> turnlog_codec.Carrier:
    """What the events on `message` may take from it."""
    return turnlog_codec.Carrier(
        message_id=message.message_id,
        created_at=message.created_at,
        role=message.role,
        content=message.content,
        tokens=message.tokens,
        model=message.model,
        finish_reason=message.finish_reason,
        latency_ms=message.latency_ms,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
        name=message.name,
        usage=_usage(message.usage),
        local_usage=_usage(message.local_usage),
        usage_reported=message.usage_reported,
    )


def split(message: MessageRecord | None, events: Sequence[LogEvent]) -> tuple[str | None, list[LogEvent]]:
    """(the `log` value `message` carries, the events that stay EventItems) for one transaction."""
    if message is None or not events:
        return None, list(events)
    carried = [e for e in events if e.type in _CARRIED]
    rest = [e for e in events if e.type not in _CARRIED]
    if not carried:
        return None, rest
    text = json.dumps(
        turnlog_codec.encode(carried, carrier(message)), separators=(",", ":"), ensure_ascii=False
    )
    if len(text.encode()) > MAX_LOG_BYTES:
        return None, list(events)
    return text, rest


def attach(
    owner: str,
    conversation_id: str,
    events: Sequence[LogEvent],
    records: Sequence[MessageRecord] = (),
    items: Sequence[Message] = (),
) -> list[EventItem]:
    """Put the events onto the last of a transaction's message items (`items`, built from `records`);
    returns the EventItems still to write (none on a normal post)."""
    text, rest = split(records[-1] if records else None, events)
    if text is not None:
        items[-1].log = text
    return [EventItem.new(owner, conversation_id, e) for e in rest]


def carried(message: MessageRecord) -> list[LogEvent]:
    """The events `message` carries, in (turn, index) order (none for most old items)."""
    if not message.log:
        return []
    try:
        entries = json.loads(message.log)
    except ValueError:
        return []
    return turnlog_codec.decode(entries, carrier(message))


def position(event: LogEvent) -> str:
    """The sort key the event has (or would have as an EventItem): its place in the log."""
    if event.type == "session_end":
        return SESSION_END_SK
    return event_sk(event.turn or 0, event.index)


def from_item(item: EventItem) -> LogEvent:
    """A stored EventItem as the event it holds, its index taken from its sort key."""
    line = item.to_line()
    index = item.sk.rsplit("#", 1)[1]
    return LogEvent.from_line(line, int(index) if index.isdigit() else 0)
