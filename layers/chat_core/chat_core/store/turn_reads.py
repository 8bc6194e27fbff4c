"""Reading the turn log: EventItems and the events message items carry (store.turn_log), merged in log
order ((turn, index), session_end last), exactly the lines the log had when every event was an item.

A page reads at most a Query of EventItems and a Query of messages from `Conversation.log_from` (more
only when messages without events fill a page). Its cursor is the last line's place in the log plus the
message to resume from (`msk`). One turn's events (`?turn=n`, a repair) start at the first message that
carries an event of that turn or a later one: carried turns rise with seq, so a binary search by small
Queries finds it in about log2(messages) reads instead of reading the conversation.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import Any, Final

from chat_core.engine.turnlog import LogEvent
from chat_core.store.base import TableItem
from chat_core.store.conversations import Page, _items, _query, _start_key
from chat_core.store.items import EventItem, Message
from chat_core.store.keys import EVENT_SK_PREFIX, MESSAGE_SK_PREFIX, message_sk, turn_prefix
from chat_core.store.records import ConversationRecord, MessageRecord
from chat_core.store.turn_log import carried, from_item, position

_LAST_SEQ: Final = 10**10 - 1
#: Messages a probe of the binary search reads (one without events is skipped).
_PROBE: Final = 4

Positioned = tuple[str, int, LogEvent]  # (place in the log, carrier seq or -1 for an EventItem, event)


def _messages(pk: str, first_seq: int, limit: int) -> Iterator[MessageRecord]:
    """Messages from `first_seq` on, oldest first, read `limit` per Query, as far as the caller reads."""
    start: dict[str, Any] | None = None
    while True:
        raw = _query(
            pk,
            range_key_condition=TableItem.sk.between(message_sk(first_seq), message_sk(_LAST_SEQ)),
            scan_index_forward=True,
            limit=limit,
            exclusive_start_key=start,
            consistent_read=True,
        )
        for item in _items(raw):
            if isinstance(item, Message):
                yield MessageRecord.of(item)
        start = raw.get("LastEvaluatedKey")
        if not start:
            return


def _top_turn(pk: str, seq: int) -> int | None:
    """The highest turn carried by the first message from `seq` on that carries events (None: none)."""
    for message in _messages(pk, seq, _PROBE):
        events = carried(message)
        if events:
            return max(e.turn or 0 for e in events)
    return None


def first_seq_of_turn(conversation: ConversationRecord, turn: int) -> int:
    """The seq from which messages may carry events of `turn` (binary search, ~log2(messages) Queries)."""
    low = conversation.log_from or conversation.next_seq
    high = conversation.next_seq
    while low < high:
        middle = (low + high) // 2
        top = _top_turn(conversation.pk, middle)
        if top is None or top >= turn:
            high = middle
        else:
            low = middle + 1
    return low


def _carried(
    conversation: ConversationRecord, first_seq: int, after: str | None, turn: int | None, want: int | None
) -> tuple[list[Positioned], int | None]:
    """Carried events placed after `after`, from `first_seq` on, until more than `want` (None: all) are
    found; and the seq after the last message read (None when none was)."""
    found: list[Positioned] = []
    resume: int | None = None
    page = (want or 100) + 1
    for message in _messages(conversation.pk, first_seq, page):
        resume = message.seq + 1
        for event in carried(message):
            if turn is not None and (event.turn or 0) > turn:
                return found, resume
            place = position(event)
            if (turn is None or event.turn == turn) and (after is None or place > after):
                found.append((place, message.seq, event))
        if want is not None and len(found) > want:
            break
    return found, resume


def _event_items(pk: str, prefix: str, after: str | None, limit: int | None) -> list[Positioned]:
    found: list[Positioned] = []
    start = _start_key({"pk": pk, "sk": after}) if after else None
    while True:
        raw = _query(
            pk,
            range_key_condition=TableItem.sk.startswith(prefix),
            scan_index_forward=True,
            limit=(limit + 1) if limit is not None else None,
            exclusive_start_key=start,
            consistent_read=True,
        )
        found += [(i.sk, -1, from_item(i)) for i in _items(raw) if isinstance(i, EventItem)]
        start = raw.get("LastEvaluatedKey")
        if not start or limit is not None:
            return found


def _merged(
    conversation: ConversationRecord, start: Mapping[str, str] | None, turn: int | None, limit: int | None
) -> tuple[list[Positioned], int | None]:
    after = start.get("sk") if start else None
    prefix = EVENT_SK_PREFIX if turn is None else turn_prefix(turn)
    items = _event_items(conversation.pk, prefix, after, limit)
    carried_events: list[Positioned] = []
    resume: int | None = None
    if conversation.log_from is not None:
        msk = start.get("msk") if start else None
        if msk is not None:
            first = int(msk[len(MESSAGE_SK_PREFIX) :])
        elif turn is not None:
            first = first_seq_of_turn(conversation, turn)
        else:
            first = conversation.log_from
        carried_events, resume = _carried(conversation, max(first, conversation.log_from), after, turn, limit)
        resume = resume if resume is not None else first
    return list(heapq.merge(items, carried_events, key=lambda p: p[0])), resume


def page_events(
    conversation: ConversationRecord, limit: int, start: Mapping[str, str] | None, *, turn: int | None = None
) -> Page[dict[str, Any]]:
    """Turn-log events in log order (session_start, turns, session_end), or one turn's, as seed-002
    JSONL objects, and the key of the next page (None when this is the last)."""
    merged, resume = _merged(conversation, start, turn, limit)
    page = merged[:limit]
    last_key: dict[str, str] | None = None
    if len(merged) > limit and page:
        last_key = {"pk": conversation.pk, "sk": page[-1][0]}
        if resume is not None:
            waiting = [seq for _, seq, _ in merged[limit:] if seq >= 0]
            last_key["msk"] = message_sk(waiting[0] if waiting else resume)
    return Page(items=[e.to_line(conversation.conversation_id) for _, _, e in page], last_key=last_key)


def turn_events(conversation: ConversationRecord, turn: int) -> list[LogEvent]:
    """Every stored event of `turn`, in index order (a repair resumes the turn from them)."""
    merged, _ = _merged(conversation, None, turn, None)
    return [event for _, _, event in merged]
