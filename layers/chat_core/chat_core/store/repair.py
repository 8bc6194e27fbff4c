"""Closing a turn whose reply never came: an error reply written into the slot TransactWrite #1 reserved,
carrying the turn's closing events (seed 002, store.turn_log), and the read that finds a turn's stored
events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from chat_core.engine.turnlog import LogEvent
from chat_core.errors import StoreUnavailable
from chat_core.store import base, turn_log, turn_reads
from chat_core.store.base import TableItem
from chat_core.store.conversations import get_message
from chat_core.store.items import Conversation, EventItem, Message
from chat_core.store.keys import EVENT_SK_PREFIX, SESSION_END_SK, seq_in_message_id
from chat_core.store.records import ConversationRecord, MessageRecord

#: How far back (newest events first) a repair looks for the turn of an interrupted post. An abandoned
#: turn is one of the newest; past this the reply is still closed, without its turn_end.
MAX_SEARCH_EVENTS: Final = 400
_PAGE_EVENTS: Final = 50
_CONFLICT: Final = "ConditionalCheckFailed"


def _turn_in_items(conversation: ConversationRecord, message_id: str, max_events: int) -> int | None:
    """The newest turn whose EventItems name `message_id`, among the newest `max_events` (events written
    before messages carried them, and a regeneration's turn_start): one descending Query, read page by
    page only as far as that turn."""
    try:
        for item in EventItem.query(
            conversation.pk,
            EventItem.sk.startswith(EVENT_SK_PREFIX),
            scan_index_forward=False,
            consistent_read=True,
            limit=max_events,
            page_size=_PAGE_EVENTS,
        ):
            meta = item.meta if isinstance(item.meta, Mapping) else {}
            if item.sk != SESSION_END_SK and meta.get("messageId") == message_id:
                return int(item.turn or 0)
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return None


def _turn_on_message(conversation: ConversationRecord, message_id: str) -> int | None:
    """The newest turn the message `message_id` carries an event of that names it (GetItem by its seq)."""
    seq = seq_in_message_id(message_id)
    if conversation.log_from is None or seq is None or seq < conversation.log_from:
        return None
    message = get_message(conversation.owner, conversation.conversation_id, seq)
    if message is None or message.message_id != message_id:
        return None
    turns = [e.turn or 0 for e in turn_log.carried(message) if e.meta.get("messageId") == message_id]
    return max(turns, default=None)


def read_turn_of(
    conversation: ConversationRecord, message_id: str, *, max_events: int = MAX_SEARCH_EVENTS
) -> list[LogEvent] | None:
    """Every event of the newest turn that recorded the message `message_id` (its turn_start, or the step
    of a tool result or client message), oldest first; None when no stored event names it (EventItems:
    among the newest `max_events`).

    The message itself (one GetItem) carries its turn's events; EventItems are searched too, since a
    regeneration's turn_start names the message it answers again. Then that turn's events are read.
    """
    base.bind()
    found = [
        t
        for t in (
            _turn_on_message(conversation, message_id),
            _turn_in_items(conversation, message_id, max_events),
        )
        if t is not None
    ]
    if not found:
        return None
    return turn_reads.turn_events(conversation, max(found)) or None


def _close(
    conversation: ConversationRecord,
    reply: Message,
    events: Sequence[EventItem],
    open_turn: Mapping[str, Any] | None,
) -> list[str | None] | None:
    """One TransactWrite; None when it went through, else each item's cancellation code (None = not the
    cause) in the order sent: the reply, the events, the conversation."""
    target = Conversation(conversation.pk, conversation.sk)
    condition = TableItem.pk.exists() & Conversation.deleted_at.does_not_exist()
    actions: list[Any] = [
        Conversation.message_count.add(1),
        Conversation.log_from.set(Conversation.log_from | int(reply.seq)),
    ]
    if open_turn is not None:
        # Only the state this turn left: another turn's pending tool calls are never touched.
        condition = condition & (Conversation.open_turn == dict(open_turn))
        actions.append(Conversation.open_turn.remove())
    try:
        with TransactWrite(connection=base.connection()) as tx:
            # Puts are sent before updates: the reply, the events, then the conversation.
            tx.save(reply, condition=TableItem.pk.does_not_exist())
            for event in events:
                tx.save(event, condition=TableItem.pk.does_not_exist())
            tx.update(target, actions=actions, condition=condition)
    except TransactWriteError as exc:
        reasons = [r.code if r is not None else None for r in exc.cancellation_reasons]
        cancelled = exc.cause_response_code == "TransactionCanceledException"
        if cancelled and reasons and {code for code in reasons if code is not None} == {_CONFLICT}:
            return reasons
        raise StoreUnavailable("the turn could not be closed", cause=base.transient_cause(exc)) from exc
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise StoreUnavailable("the turn could not be closed", cause=base.transient_cause(exc)) from exc
    return None


def close_turn(
    conversation: ConversationRecord,
    reply: MessageRecord,
    *,
    events: Sequence[LogEvent] = (),
    open_turn: Mapping[str, Any] | None = None,
) -> bool:
    """One TransactWrite: put `reply` into its empty reserved slot, count it in `message_count` and put
    the turn's closing `events` (each into a free key); `open_turn`, when given, is the turn's state as
    the conversation item was read holding it, and is removed if the item still holds exactly that.

    Returns False, writing nothing, when the slot or an event key is taken already (the post's own reply
    or another repair got there first: nothing is written twice) or the conversation is gone or deleted.
    If only `open_turn` changed meanwhile, the turn is closed and the newer state left alone.
    Raises StoreUnavailable when DynamoDB fails.
    """
    item = reply.to_item()
    items = turn_log.attach(conversation.owner, conversation.conversation_id, events, [reply], [item])
    reasons = _close(conversation, item, items, open_turn)
    if reasons is not None and open_turn is not None and reasons[-1] == _CONFLICT and not any(reasons[:-1]):
        reasons = _close(conversation, item, items, None)
    return reasons is None
