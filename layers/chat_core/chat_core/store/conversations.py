"""Conversations and messages in the single table: the post path's reads/writes, listing, delete. Reads
return records (`store.records`); writes take them and build the items."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from chat_core.engine.costs import Charge
from chat_core.engine.turnlog import LogEvent
from chat_core.errors import ConversationNotFound, StoreUnavailable
from chat_core.store import base, ledger, totals, turn_log
from chat_core.store.base import TableItem
from chat_core.store.items import BranchLink, Conversation, EventItem, Message, Summary
from chat_core.store.keys import MESSAGE_SK_PREFIX, listing_sk, message_sk, owner_pk, seq_in_message_id
from chat_core.store.records import ConversationRecord, MessageRecord, SummaryRecord


@dataclass(frozen=True)
class Recent:
    """What the post path's single Query returns: the conversation, its newest messages (oldest first)
    and its summary of earlier messages, if it has one (seed 001)."""

    conversation: ConversationRecord | None
    messages: list[MessageRecord]
    summary: SummaryRecord | None = None
    #: Whether the Query read every message (else `messages` are the newest ones only).
    exhaustive: bool = False
    #: API-18: every message the Query read (on a branched conversation `messages` is the active path).
    page: list[MessageRecord] | None = None

    @property
    def read(self) -> list[MessageRecord]:
        """Every message read, on the active path or not (repairs and pending totals look at all)."""
        return self.page if self.page is not None else self.messages

    @property
    def covered_from(self) -> int:
        """Every message with a seq from here on was read (a missing one is a reply slot not filled)."""
        read = self.read
        if self.exhaustive or not read:
            return 1
        return min(m.seq for m in read)


@dataclass(frozen=True)
class Page[T]:
    """One page of a Query plus the key to continue from (None when this was the last page)."""

    items: list[T]
    last_key: dict[str, str] | None


class SequenceConflict(Exception):
    """Another post took the expected sequence number first (or the conversation went away); re-read."""


class _Cancelled(Exception):
    """A TransactWrite was cancelled; `reasons` lists each item's code (None = not the cause)."""

    def __init__(self, reasons: list[str | None]) -> None:
        super().__init__(str(reasons))
        self.reasons = reasons


# Cancellation codes that mean "someone else changed these items": re-read (or retry) and try again.
_CONTENTION = frozenset({"ConditionalCheckFailed", "TransactionConflict"})
_REPLY_ATTEMPTS = 4


def _items(raw: Mapping[str, Any]) -> list[TableItem]:
    return [TableItem.from_raw_data(item) for item in raw.get("Items", [])]


def _query(hash_key: str, **kwargs: Any) -> dict[str, Any]:
    base.bind()
    try:
        result: dict[str, Any] = TableItem._get_connection().query(hash_key, **kwargs)
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return result


def read_recent(owner: str, conversation_id: str, messages: int, *, before_seq: int | None = None) -> Recent:
    """API-4: one descending, strongly consistent Query: the summary (`~SUMMARY` sorts first), the
    conversation item, then the newest `messages`. The Limit counts both items; without a summary the
    one extra message read is dropped, so callers always get at most `messages`. With `before_seq`, the
    newest `messages` older than that seq only (no conversation item, no summary)."""
    pk, _ = Conversation.key(owner, conversation_id)
    # The key condition stops the Query at the messages: turn-log events ("EVT#") sort below them.
    keys: Condition = TableItem.sk >= MESSAGE_SK_PREFIX
    if before_seq is not None:
        keys = TableItem.sk.between(MESSAGE_SK_PREFIX, message_sk(before_seq - 1))
    limit = messages if before_seq is not None else messages + 2
    raw = _query(
        pk,
        range_key_condition=keys,
        scan_index_forward=False,
        limit=limit,
        consistent_read=True,
    )
    conversation: ConversationRecord | None = None
    summary: SummaryRecord | None = None
    found: list[MessageRecord] = []
    for wire in raw.get("Items", []):
        item = MessageRecord.from_wire(wire) or TableItem.from_raw_data(wire)
        if isinstance(item, MessageRecord):
            found.append(item)
        elif isinstance(item, Conversation):
            conversation = ConversationRecord.of(item)
        elif isinstance(item, Summary):
            summary = SummaryRecord.of(item)
    exhaustive = len(raw.get("Items", [])) < limit
    del found[messages:]
    found.reverse()
    return Recent(conversation=conversation, messages=found, summary=summary, exhaustive=exhaustive)


def get_conversation(owner: str, conversation_id: str) -> ConversationRecord | None:
    """GetItem of the conversation item (None when absent; deleted ones are returned, callers decide)."""
    base.bind()
    pk, sk = Conversation.key(owner, conversation_id)
    try:
        return ConversationRecord.of(Conversation.get(pk, sk, consistent_read=True))
    except Conversation.DoesNotExist:
        return None
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def page_messages(
    owner: str, conversation_id: str, limit: int, start_key: Mapping[str, str] | None
) -> Page[MessageRecord]:
    """Messages (records) oldest first, one Query of `limit + 1` to know whether another page exists."""
    pk, _ = Conversation.key(owner, conversation_id)
    page = _page_by_prefix(pk, MESSAGE_SK_PREFIX, Message, limit, start_key)
    return Page(items=[MessageRecord.of(m) for m in page.items], last_key=page.last_key)


def _page_by_prefix(
    pk: str, prefix: str, kind: type[TableItem], limit: int, start_key: Mapping[str, str] | None
) -> Page[Any]:
    """Items of one kind whose sk starts with `prefix`, in sk order; `limit + 1` tells whether more exist."""
    raw = _query(
        pk,
        range_key_condition=TableItem.sk.startswith(prefix),
        scan_index_forward=True,
        limit=limit + 1,
        exclusive_start_key=_start_key(start_key),
        consistent_read=True,
    )
    found = [item for item in _items(raw) if isinstance(item, kind)]
    page, more = found[:limit], len(found) > limit
    last_key = {"pk": page[-1].pk, "sk": page[-1].sk} if more and page else None
    return Page(items=page, last_key=last_key)


def read_turn(
    owner: str, conversation_id: str, seq: int
) -> tuple[MessageRecord | None, MessageRecord | None]:
    """The user message at `seq` and the reply after it: one Query (an idempotent replay re-reads these)."""
    pk, _ = Conversation.key(owner, conversation_id)
    raw = _query(
        pk,
        range_key_condition=TableItem.sk.between(message_sk(seq), message_sk(seq + 1)),
        consistent_read=True,
    )
    found = {m.seq: m for m in _records(raw)}
    return found.get(seq), found.get(seq + 1)


def read_messages(owner: str, conversation_id: str, first_seq: int, last_seq: int) -> list[MessageRecord]:
    """Messages with `first_seq <= seq <= last_seq`, oldest first: one Query (a replay re-reads a post's)."""
    pk, _ = Conversation.key(owner, conversation_id)
    raw = _query(
        pk,
        range_key_condition=TableItem.sk.between(message_sk(first_seq), message_sk(last_seq)),
        consistent_read=True,
    )
    return _records(raw)


def _records(raw: Mapping[str, Any]) -> list[MessageRecord]:
    return [MessageRecord.of(m) for m in _items(raw) if isinstance(m, Message)]


def find_message(owner: str, conversation_id: str, message_id: str) -> MessageRecord | None:
    """The message with `message_id` in one conversation: one GetItem by the seq its id carries, else
    (ids made before seqs were carried) a Query of the conversation's messages filtered on the id."""
    seq = seq_in_message_id(message_id)
    if seq is None:
        return None
    found = get_message(owner, conversation_id, seq) if seq > 0 else None
    if found is not None and found.message_id == message_id:
        return found
    pk, _ = Conversation.key(owner, conversation_id)
    start: dict[str, Any] | None = None
    while True:
        raw = _query(
            pk,
            range_key_condition=TableItem.sk.startswith(MESSAGE_SK_PREFIX),
            filter_condition=Message.message_id == message_id,
            consistent_read=True,
            exclusive_start_key=start,
        )
        for record in _records(raw):
            return record
        start = raw.get("LastEvaluatedKey")
        if not start:
            return None


def get_message(owner: str, conversation_id: str, seq: int) -> MessageRecord | None:
    """GetItem of the message at `seq` (None when there is none)."""
    base.bind()
    pk, sk = Message.key(owner, conversation_id, seq)
    try:
        return MessageRecord.of(Message.get(pk, sk, consistent_read=True))
    except Message.DoesNotExist:
        return None
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def page_conversations(
    owner: str, limit: int, start_key: Mapping[str, str] | None
) -> Page[ConversationRecord]:
    """Live conversations (records) by `updated_at`, newest first, from the sparse listing index."""
    raw = _query(
        owner_pk(owner),
        index_name="gsi1",
        scan_index_forward=False,
        limit=limit + 1,
        exclusive_start_key=_start_key(start_key),
    )
    found = [item for item in _items(raw) if isinstance(item, Conversation) and not item.is_deleted]
    page, more = found[:limit], len(found) > limit
    last_key = page[-1].listing_key() if more and page else None
    return Page(items=[ConversationRecord.of(c) for c in page], last_key=last_key)


def _start_key(key: Mapping[str, str] | None) -> dict[str, dict[str, str]] | None:
    """A plain {name: string} key (as a cursor carries it) as DynamoDB's ExclusiveStartKey."""
    return {name: {"S": value} for name, value in key.items()} if key else None


_Item = tuple[str, Any, Any, list[Any] | None]
_NEW = TableItem.pk.does_not_exist()


def request_token(*parts: object) -> str:
    """A TransactWriteItems ClientRequestToken derived from the operation (at most 36 characters).

    botocore resends a transaction whose response was lost (read timeout) with the same token; DynamoDB
    then answers success for a write that already committed instead of failing its conditions.
    """
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:32]


def _transact(items: Sequence[_Item], token: str | None = None) -> None:
    """Run one TransactWrite of ("put"|"update"|"delete", model, condition, actions) entries."""
    settings = base.bind()
    try:
        with TransactWrite(connection=base.connection(settings), client_request_token=token) as tx:
            for op, model, condition, actions in items:
                if op == "put":
                    tx.save(model, condition=condition)
                elif op == "delete":
                    tx.delete(model, condition=condition)
                else:
                    tx.update(model, actions=actions or [], condition=condition)
    except TransactWriteError as exc:
        if exc.cause_response_code == "TransactionCanceledException":
            sent = [r.code if r is not None else None for r in exc.cancellation_reasons]
            # PynamoDB sends deletes, then puts, then updates; report the reasons in the caller's order.
            order = [i for i, item in enumerate(items) if item[0] == "delete"]
            order += [i for i, item in enumerate(items) if item[0] == "put"]
            order += [i for i, item in enumerate(items) if item[0] == "update"]
            reasons: list[str | None] = [None] * len(items)
            for position, index in enumerate(order[: len(sent)]):
                reasons[index] = sent[position]
            if any(code in _CONTENTION for code in reasons):
                raise _Cancelled(reasons) from exc
        raise base.store_error(exc) from exc
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


class _Keep:
    """Leave an attribute as it is (the default of `open_turn` arguments)."""


KEEP = _Keep()
OpenTurn = Mapping[str, Any] | _Keep | None
_TX_ITEMS = 100  # DynamoDB's limit of items per TransactWriteItems


def _event_puts(
    conversation: ConversationRecord,
    events: Sequence[LogEvent],
    messages: Sequence[MessageRecord] = (),
    items: Sequence[Message] = (),
) -> list[_Item]:
    """The events the last message item does not carry (store.turn_log), as puts into free keys."""
    rest = turn_log.attach(conversation.owner, conversation.conversation_id, events, messages, items)
    return [("put", e, _NEW, None) for e in rest]


def _log_from(seq: int) -> Any:
    """Record, once, the first seq whose message may carry turn-log events."""
    return Conversation.log_from.set(Conversation.log_from | seq)


def _open_turn_actions(open_turn: OpenTurn) -> list[Any]:
    if isinstance(open_turn, _Keep):
        return []
    if open_turn is None:
        return [Conversation.open_turn.remove()]
    return [Conversation.open_turn.set(dict(open_turn))]


def _write(core: list[_Item], events: list[_Item], token: str) -> None:
    """One TransactWrite of `core` (messages, the conversation update) and the turn's events.

    Only an answer with dozens of tool calls makes more events than one transaction takes; those that
    do not fit follow in further transactions (the messages and counters are already consistent).
    `token` names the operation: each transaction carries a ClientRequestToken derived from it.
    """
    room = _TX_ITEMS - len(core)
    _transact(core + events[:room], request_token(token, 0))
    rest = events[room:]
    for start in range(0, len(rest), _TX_ITEMS):
        try:
            _transact(rest[start : start + _TX_ITEMS], request_token(token, start + 1))
        except _Cancelled:
            continue  # only a retry of the same reply gets here: those events are stored already


def _committed(message: MessageRecord) -> bool:
    """Whether `message` itself is stored: a transaction cancelled because its slot is taken may be our
    own earlier attempt, committed although its response never arrived (a ClientRequestToken older
    than DynamoDB's 10-minute window, or a store that ignores tokens)."""
    base.bind()
    try:
        stored = Message.get(message.pk, message.sk, consistent_read=True)
    except Message.DoesNotExist:
        return False
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return stored.message_id == message.message_id


def create_with_first_message(
    conversation: ConversationRecord,
    message: MessageRecord,
    *,
    recorded: Sequence[MessageRecord] = (),
    events: Sequence[LogEvent] = (),
) -> ConversationRecord:
    """TransactWrite #1 of a post without an id: the new conversation, the messages the client recorded,
    its first user message and the turn-log events (session_start, turn_start, ...) together. Returns
    the conversation as stored (its sequence counter and message count set)."""
    messages = [*recorded, message]
    conversation = replace(
        conversation, next_seq=message.seq + 2, message_count=len(messages), log_from=messages[0].seq
    )
    items = [m.to_item() for m in messages]
    try:
        _write(
            [("put", conversation.to_item(), _NEW, None), *(("put", i, _NEW, None) for i in items)],
            _event_puts(conversation, events, messages, items),
            f"{conversation.pk}|create|{message.message_id}",
        )
    except _Cancelled as exc:
        if not _committed(message):
            raise SequenceConflict("fresh conversation id already taken") from exc
    return conversation


def create_conversation(
    conversation: ConversationRecord, *, events: Sequence[LogEvent] = (), also: Sequence[_Item] = ()
) -> None:
    """A new, empty conversation and its session_start event (the id is fresh; conditions guard a clash),
    with `also` (e.g. the item naming it, API-21) in the same transaction. SequenceConflict when a
    condition failed and the write was not our own."""
    conversation = replace(conversation, log_from=conversation.next_seq)
    try:
        _write(
            [("put", conversation.to_item(), _NEW, None), *also],
            _event_puts(conversation, events),
            f"{conversation.pk}|create|{conversation.created_at}",
        )
    except _Cancelled as exc:
        stored = get_conversation(conversation.owner, conversation.conversation_id)
        if stored is not None and stored.created_at == conversation.created_at:
            return  # our own write, its response lost
        raise SequenceConflict("fresh conversation id already taken") from exc


@dataclass(frozen=True)
class TreeWrite:
    """API-18: how a write moves a conversation's active path. `expected_leaf` is the active leaf as read
    (None: the conversation never branched), `leaf` the one after the write; `links` (parent, child)
    seqs, a branch link written for each child that does not follow its parent; `slot_parents` the
    conversation's new map of regenerations' reply slots (KEEP leaves it)."""

    expected_leaf: int | None
    leaf: int
    links: Sequence[tuple[int, int]] = ()
    slot_parents: Mapping[str, Any] | _Keep | None = field(default_factory=_Keep)

    def unchanged(self) -> Any:
        if self.expected_leaf is None:
            return Conversation.active_leaf.does_not_exist()
        return Conversation.active_leaf == self.expected_leaf

    def actions(self) -> list[Any]:
        actions: list[Any] = [Conversation.active_leaf.set(self.leaf)]
        if isinstance(self.slot_parents, _Keep):
            return actions
        if self.slot_parents:
            actions.append(Conversation.slot_parents.set(dict(self.slot_parents)))
        else:
            actions.append(Conversation.slot_parents.remove())
        return actions


def link_items(conversation: ConversationRecord, pairs: Sequence[tuple[int, int]]) -> list[BranchLink]:
    """The BranchLink items of (parent, child) pairs whose child does not follow its parent."""
    owner, conversation_id = conversation.owner, conversation.conversation_id
    return [BranchLink.new(owner, conversation_id, p, c) for p, c in pairs if p != c - 1]


def append_messages(
    conversation: ConversationRecord,
    messages: Sequence[MessageRecord],
    now: str,
    *,
    events: Sequence[LogEvent] = (),
    turn: int | None = None,
    open_turn: OpenTurn = KEEP,
    reserve_reply: bool = True,
    reconcile: Sequence[MessageRecord] = (),
    tree: TreeWrite | None = None,
    added: tuple[Sequence[int], Sequence[int]] | None = None,
    charges: Sequence[tuple[str, Charge]] = (),
    count_usage: bool = False,
) -> None:
    """TransactWrite #1: put `messages` from `next_seq` on, reserve the reply's slot right after them
    (unless no model call follows), bump the counters and record the turn's events and state. Replies
    in `reconcile` (stored on their own earlier) are added to the totals in the same transaction, as is
    the usage of appended messages (`added`: reported prompt/completion/total, local prompt/completion;
    `charges`: their (day, charge) pairs, COST-2; the owner's usage of the day adds them from the table's
    stream, COST-3, or, with `count_usage` (budgets on, COST-4), this transaction does).

    The write expects the conversation's branch state as read: a conversation that never branched must
    still not have branched (`tree` None), a branched one must still have the active leaf it was read
    with; `tree` says where the active path ends afterwards (API-18).

    Raises SequenceConflict when another post moved `next_seq` or the active path first, or the
    conversation was deleted.
    """
    expected = conversation.next_seq
    target = Conversation(conversation.pk, conversation.sk)
    counted: list[ledger.UsageWrite] = []
    if count_usage and messages:
        # A retry after a conflict re-reads and comes back with new ids: a new shard too.
        shard = ledger.shard_of(f"{conversation.conversation_id}|{messages[0].message_id}")
        marked, counted = ledger.counted_updates(conversation.owner, messages, shard)
        messages = marked
    reconciled, folded = totals.reconcile(reconcile)
    count = len(messages) + len(reconcile)
    reported, local, owed, unbilled = totals.pending_sums(reconcile)
    owed = [*owed, *charges]
    if added is not None:
        reported = [a + int(b) for a, b in zip(reported, added[0], strict=True)]
        local = [a + int(b) for a, b in zip(local, added[1], strict=True)]
    actions = [
        Conversation.next_seq.set(expected + len(messages) + (1 if reserve_reply else 0)),
        Conversation.message_count.add(count),
        Conversation.updated_at.set(now),
        TableItem.gsi1sk.set(listing_sk(now, conversation.conversation_id)),
        _log_from(expected),
        *_open_turn_actions(open_turn),
    ]
    if folded or added is not None or owed:
        # One ADD per attribute.
        actions += totals.actions(reported, local, owed)
    if turn is not None:
        actions.append(Conversation.turn_count.set(turn))
    condition = (Conversation.next_seq == expected) & Conversation.deleted_at.does_not_exist()
    link_puts: list[_Item] = []
    if tree is None:
        condition = condition & Conversation.active_leaf.does_not_exist()
    else:
        condition = condition & tree.unchanged()
        actions += tree.actions()
        link_puts = [("put", link, None, None) for link in link_items(conversation, tree.links)]
    items = [m.to_item() for m in messages]
    core: list[_Item] = [
        *(("put", i, _NEW, None) for i in items),
        ("update", target, condition, actions),
        *reconciled,
        *link_puts,
        *ledger.charge_updates(conversation.owner, unbilled),
        *counted,
    ]
    # A regeneration (API-18) writes no message: only the reply's slot, named by the sequence it takes.
    name = messages[0].message_id if messages else f"slot|{expected}"
    try:
        _write(core, _event_puts(conversation, events, messages, items), f"{conversation.pk}|append|{name}")
    except _Cancelled as exc:
        if messages and exc.reasons[:1] == ["ConditionalCheckFailed"] and _committed(messages[0]):
            return
        raise SequenceConflict(str(exc.reasons)) from exc


def append_user_message(
    conversation: ConversationRecord,
    message: MessageRecord,
    now: str,
    *,
    recorded: Sequence[MessageRecord] = (),
    events: Sequence[LogEvent] = (),
    turn: int | None = None,
    open_turn: OpenTurn = KEEP,
) -> None:
    """TransactWrite #1 of a user turn: recorded messages, the user message, the reply's slot reserved."""
    append_messages(conversation, [*recorded, message], now, events=events, turn=turn, open_turn=open_turn)


class ReplySlotTaken(Exception):
    """The reply's reserved slot holds another message: a repair closed the turn while the model ran."""


#: How `record_reply` stored the reply.
STORED = "stored"  # with the conversation's totals, in one transaction
STORED_ALONE = "stored_alone"  # on its own, totals pending (the conversation item stayed contended)
STORED_DELETED = "stored_deleted"  # on its own: the conversation was deleted while the model answered


def record_reply(
    conversation: ConversationRecord,
    message: MessageRecord,
    now: str,
    *,
    reported: tuple[int, int, int],
    local: tuple[int, int],
    events: Sequence[LogEvent] = (),
    open_turn: OpenTurn = KEEP,
    deadline: float | None = None,
    charge: Charge | None = None,
    count_usage: bool = False,
) -> str:
    """TransactWrite #2: put the assistant message (ok or error), its turn-log events, the turn's state
    and add to the conversation's totals; with `charge` (COST-2), its cost to the conversation's, in the
    same transaction. The owner's usage of the day: the table's stream adds each priced reply to it once
    (COST-3, `chat.usage_stream`), a reply stored alone or after a delete too; or, with `count_usage`
    (budgets on, COST-4), each write below adds it in the same transaction (a shard of the day items, by
    the conversation and the attempt) and marks the reply `counted`, so the next post's budget check
    sees it at once. A reply whose count keeps conflicting is stored unmarked, for the stream to count.

    The reply is paid for: it is never dropped because the conversation item is busy. Contention is
    retried with jittered backoff until `deadline` (time.monotonic()); past it, or if the conversation
    was deleted meanwhile, the reply and its events are stored on their own (its slot was reserved by
    TransactWrite #1, so nothing else can take it). A reply stored alone on a live conversation carries
    `pending_totals`, which the next post folds into the totals. Returns STORED, STORED_ALONE or
    STORED_DELETED; raises ReplySlotTaken or StoreUnavailable only when the reply could not be stored.
    """
    target = Conversation(conversation.pk, conversation.sk)
    charges = [(ledger.reply_day(message), charge)] if charge is not None else []
    if count_usage and ledger.charges_of(message):
        message = replace(message, counted=True)

    def counted(attempt: int) -> list[ledger.UsageWrite]:
        if not message.counted:
            return []
        shard = ledger.shard_of(conversation.conversation_id, attempt)
        return ledger.counted_updates(conversation.owner, [message], shard)[1]

    item = message.to_item()
    event_puts = _event_puts(conversation, events, [message], [item])
    core: list[_Item] = [
        ("put", item, _NEW, None),
        (
            "update",
            target,
            TableItem.pk.exists() & Conversation.deleted_at.does_not_exist(),
            [
                Conversation.message_count.add(1),
                *totals.actions(reported, local, charges),
                Conversation.updated_at.set(now),
                TableItem.gsi1sk.set(listing_sk(now, conversation.conversation_id)),
                _log_from(message.seq),
                *_open_turn_actions(open_turn),
            ],
        ),
    ]
    outcome = STORED_ALONE
    attempt = 0
    while True:
        try:
            _write(
                [*core, *counted(attempt)],
                event_puts,
                f"{conversation.pk}|reply|{message.message_id}|{attempt}",
            )
            return STORED
        except _Cancelled as exc:
            if exc.reasons[:1] == ["ConditionalCheckFailed"]:
                if _committed(message):
                    return STORED
                raise ReplySlotTaken(str(exc.reasons)) from exc
            if exc.reasons[1:2] == ["ConditionalCheckFailed"]:
                outcome = STORED_DELETED
                break
        except StoreUnavailable as exc:
            # Throttled or failing after botocore's own retries: worth another try while time is left.
            if base.transient_cause(exc) is None:
                raise
        attempt += 1
        pause = base.contention_backoff(attempt)
        if deadline is None or time.monotonic() + pause >= deadline:
            break
        time.sleep(pause)
    if outcome == STORED_ALONE:
        pending: dict[str, Any] = {"reported": list(reported), "local": list(local)}
        if charge is not None:
            pending[totals.COST] = charge.to_json()
        if not isinstance(open_turn, _Keep):
            pending["open_turn"] = dict(open_turn) if open_turn is not None else None
        item.pending_totals = pending
    _store_alone(conversation, message, item, event_puts, attempt)
    return outcome


def _store_alone(
    conversation: ConversationRecord,
    message: MessageRecord,
    item: Message,
    event_puts: list[_Item],
    attempt: int,
) -> None:
    """Put a reply on its own (its slot is reserved). A reply `counted` (COST-4) adds its usage in the
    same transaction, each try on another shard; if that keeps conflicting, its last try stores it
    unmarked and the stream counts it. Raises ReplySlotTaken when the slot holds another message."""
    tries = _REPLY_ATTEMPTS if message.counted else 1
    for n in range(tries):
        last = n == tries - 1
        usage: list[ledger.UsageWrite] = []
        if message.counted and not last:
            shard = ledger.shard_of(conversation.conversation_id, attempt + 1 + n)
            usage = ledger.counted_updates(conversation.owner, [message], shard)[1]
        else:
            item.counted = None
        token = f"{conversation.pk}|alone|{message.message_id}" + (f"|{n}" if n else "")
        try:
            _write([("put", item, _NEW, None), *usage], event_puts, token)
            return
        except _Cancelled as exc:
            if _committed(message):
                return
            if exc.reasons[:1] == ["ConditionalCheckFailed"] or last:
                raise ReplySlotTaken(str(exc.reasons)) from exc
        except StoreUnavailable as exc:
            if last or base.transient_cause(exc) is None:
                raise
        time.sleep(base.contention_backoff(n + 1))


class PinConflict(Exception):
    """Another pin change (or a delete) reached the conversation first; re-read and try again."""


def set_pinned(
    conversation: ConversationRecord,
    message: MessageRecord,
    pinned: bool,
    entries: Sequence[Mapping[str, Any]],
) -> None:
    """One TransactWrite: the message's `pinned` flag and the conversation's pinned copies (`entries`).

    Raises PinConflict when the pinned list changed since `conversation` was read (or it was deleted),
    and ConversationNotFound when the message is gone.
    """
    rev = conversation.pinned_rev
    unchanged = Conversation.pinned_rev == rev
    if rev == 0:
        unchanged = unchanged | Conversation.pinned_rev.does_not_exist()
    target = Conversation(conversation.pk, conversation.sk)
    meta_actions = [Conversation.pinned_rev.set(rev + 1)]
    meta_actions.append(Conversation.pinned.set(list(entries)) if entries else Conversation.pinned.remove())
    try:
        _transact(
            [
                (
                    "update",
                    Message(message.pk, message.sk),
                    TableItem.pk.exists(),
                    [Message.pinned.set(pinned)],
                ),
                (
                    "update",
                    target,
                    TableItem.pk.exists() & Conversation.deleted_at.does_not_exist() & unchanged,
                    meta_actions,
                ),
            ]
        )
    except _Cancelled as exc:
        if exc.reasons[:1] == ["ConditionalCheckFailed"]:
            raise ConversationNotFound("message not found") from exc
        raise PinConflict(str(exc.reasons)) from exc


#: The conversation attributes PATCH /conversations/{id} may change (API-12).
UPDATABLE = ("title", "system_prompt", "system_tokens", "model", "window_policy", "defaults")


def update_conversation(
    owner: str, conversation_id: str, changes: Mapping[str, Any], now: str
) -> ConversationRecord:
    """Set (or, with None, remove) the `changes` of a live conversation and move it to the top of its
    owner's listing; returns the conversation as stored afterwards. Absent or deleted -> 404."""
    base.bind()
    pk, sk = Conversation.key(owner, conversation_id)
    target = Conversation(pk, sk)
    actions: list[Action] = [
        Conversation.updated_at.set(now),
        TableItem.gsi1sk.set(listing_sk(now, conversation_id)),
    ]
    for name in UPDATABLE:
        if name in changes:
            attribute = getattr(Conversation, name)
            value = changes[name]
            actions.append(attribute.remove() if value is None else attribute.set(value))
    _update_live(target, actions, conversation_id)
    return ConversationRecord.of(target)


def _update_live(target: Conversation, actions: list[Action], conversation_id: str) -> None:
    """One UpdateItem of a conversation that exists and is not deleted (404 otherwise)."""
    try:
        target.update(
            actions=actions, condition=TableItem.pk.exists() & Conversation.deleted_at.does_not_exist()
        )
    except PynamoDBException as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            raise ConversationNotFound("conversation not found", conversation_id=conversation_id) from exc
        raise base.store_error(exc) from exc
    except (ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def soft_delete(
    owner: str, conversation_id: str, now: str, expires_at: datetime, *, events: Sequence[LogEvent] = ()
) -> None:
    """Mark deleted, leave the listing index (remove gsi1pk/gsi1sk), set the TTL, and write `events`
    (session_end) in the same transaction. Absent or deleted -> 404."""
    base.bind()
    pk, sk = Conversation.key(owner, conversation_id)
    target = Conversation(pk, sk)
    actions: list[Action] = [
        Conversation.deleted_at.set(now),
        TableItem.expires_at.set(expires_at),
        TableItem.gsi1pk.remove(),
        TableItem.gsi1sk.remove(),
    ]
    condition = TableItem.pk.exists() & Conversation.deleted_at.does_not_exist()
    if events:
        puts: list[_Item] = [("put", EventItem.new(owner, conversation_id, e), None, None) for e in events]
        try:
            _transact([("update", target, condition, actions), *puts])
        except _Cancelled as exc:
            if exc.reasons[:1] == ["ConditionalCheckFailed"]:
                raise ConversationNotFound("conversation not found", conversation_id=conversation_id) from exc
            raise StoreUnavailable("the conversation is busy; retry the request") from exc
        return
    _update_live(target, actions, conversation_id)
