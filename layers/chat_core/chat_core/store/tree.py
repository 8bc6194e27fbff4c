"""Branches (API-18): how a conversation's append-only messages link into a tree, and the reads that
follow its active path.

Every message has a parent: `parent_seq` when it is stored (0 for a first message), else the message
before it (every message of a conversation that never branched). A conversation that never branched
has no `active_leaf`: its active path is all its messages in seq order, read as before (one Query). Once
it branches, `active_leaf` names the path's last message and the path is found by following parents
from there. Parents always come before their children (parent seq < child seq), so the walk reads the
partition downwards: messages that follow their parent are consumed from the page already read, and
only a jump to a parent below what was read (a branch point) costs one more Query.

A reply slot reserved but not filled yet (its model call still running) has no item: the walk passes
through it to its parent, which is the message before it, or for a regeneration the parent kept in the
conversation's `slot_parents` while the new answer is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from chat_core.engine.turnlog import LogEvent
from chat_core.observability import logger
from chat_core.store.base import TableItem
from chat_core.store.conversations import (
    SequenceConflict,
    TreeWrite,
    _Cancelled,
    _event_puts,
    _Item,
    _items,
    _query,
    _transact,
    request_token,
)
from chat_core.store.items import BranchLink, Conversation, Message, Summary
from chat_core.store.keys import (
    MESSAGE_SK_PREFIX,
    SUMMARY_SK,
    link_sk,
    listing_sk,
    message_sk,
)
from chat_core.store.records import ConversationRecord, MessageRecord

ROOT: Final = 0
#: Messages one Query of the walk reads (a page of the detail route's walk may read several).
WALK_PAGE: Final = 100
#: Regenerations whose slot parents the conversation item keeps (a slot's entry is needed only while
#: its answer is being written; the newest entries are the running ones).
MAX_SLOT_PARENTS: Final = 16


def parent_seq(message: MessageRecord) -> int:
    """The seq of the message `message` follows (ROOT for a first message)."""
    if message.parent_seq is not None:
        return message.parent_seq
    return message.seq - 1


def slot_parent(slot_parents: Mapping[str, Any] | None, seq: int) -> int:
    """The parent of reply slot `seq`, which has no item yet: the regeneration's recorded parent, else
    the message before it."""
    entry = (slot_parents or {}).get(str(seq))
    if isinstance(entry, Mapping) and entry.get("parent") is not None:
        return int(entry["parent"])
    return seq - 1


def with_slot_parent(
    slot_parents: Mapping[str, Any] | None, seq: int, parent: int, at: str, ref: str
) -> dict[str, Any]:
    """`slot_parents` with reply slot `seq` added (the oldest entries beyond MAX_SLOT_PARENTS dropped)."""
    entries = {key: value for key, value in (slot_parents or {}).items() if key != str(seq)}
    entries[str(seq)] = {"parent": parent, "at": at, "ref": ref}
    newest = sorted(entries, key=int)[-MAX_SLOT_PARENTS:]
    return {key: entries[key] for key in newest}


@dataclass
class Walk:
    """What a walk up the active path found: its messages (oldest first, deleted ones included: they
    still link their children), the seq it would visit next (ROOT when it reached the first message),
    and the Queries it made."""

    messages: list[MessageRecord]
    next_seq: int
    queries: int = 0
    known: dict[int, MessageRecord] = field(default_factory=dict)
    covered_from: int = 1


def _page_below(owner_pk: str, top: int, limit: int) -> list[MessageRecord]:
    """Messages with seq <= `top`, newest first: one strongly consistent Query of at most `limit`."""
    raw = _query(
        owner_pk,
        range_key_condition=TableItem.sk.between(MESSAGE_SK_PREFIX, message_sk(top)),
        scan_index_forward=False,
        limit=limit,
        consistent_read=True,
    )
    return [MessageRecord.of(item) for item in _items(raw) if isinstance(item, Message)]


def walk(
    conversation: ConversationRecord,
    leaf: int,
    *,
    known: Mapping[int, MessageRecord] | None = None,
    covered_from: int | None = None,
    want: int | None = None,
    until_seq: int = 1,
    max_queries: int | None = None,
    page: int = WALK_PAGE,
) -> Walk:
    """Follow parents from `leaf` towards the root, collecting the path's messages.

    `known` are messages already read, every message with seq >= `covered_from` among them (the post's
    Query). Stops at the root, below `until_seq`, once `want` undeleted messages are collected, or when
    `max_queries` more Queries would be needed.
    """
    found: dict[int, MessageRecord] = dict(known or {})
    low = covered_from if covered_from is not None else leaf + 1
    path: list[MessageRecord] = []
    counted = 0
    queries = 0
    current = leaf
    while current > ROOT and current >= until_seq:
        if want is not None and counted >= want:
            break
        if current < low:
            if max_queries is not None and queries >= max_queries:
                break
            read = _page_below(conversation.pk, current, page)
            queries += 1
            found.update((m.seq, m) for m in read)
            low = read[-1].seq if len(read) >= page else 1
        message = found.get(current)
        if message is None:
            current = slot_parent(conversation.slot_parents, current)
            continue
        path.append(message)
        if message.deleted_at is None:
            counted += 1
        parent = parent_seq(message)
        if parent >= current:
            # Parents are written before their children; a parent at or after its child cannot come
            # from this service. Never loop on it: fall back to the message before.
            logger.warning("message parent out of order", pk=conversation.pk, seq=current, parent=parent)
            parent = current - 1
        current = parent
    path.reverse()
    return Walk(messages=path, next_seq=current, queries=queries, known=found, covered_from=low)


def links_between(
    conversation: ConversationRecord, first_parent: int, last_parent: int
) -> list[tuple[int, int]]:
    """(parent, child) of the branch links whose parent lies in `first_parent..last_parent` (one Query,
    paged through)."""
    found: list[tuple[int, int]] = []
    start: dict[str, Any] | None = None
    while True:
        raw = _query(
            conversation.pk,
            range_key_condition=TableItem.sk.between(
                link_sk(first_parent, 0), link_sk(last_parent, 10**10 - 1)
            ),
            consistent_read=True,
            exclusive_start_key=start,
        )
        found += [
            (int(item.parent_seq), int(item.child_seq))
            for item in _items(raw)
            if isinstance(item, BranchLink)
        ]
        start = raw.get("LastEvaluatedKey")
        if not start:
            return found


def link_parents(messages: Sequence[MessageRecord], parent: int) -> list[MessageRecord]:
    """The messages, each with its parent: the first follows `parent`, each next one the one before it."""
    linked: list[MessageRecord] = []
    for message in messages:
        linked.append(replace(message, parent_seq=parent))
        parent = message.seq
    return linked


def _expected(conversation: ConversationRecord) -> Any:
    """The condition that the conversation is live and has taken no message and no branch step since
    it was read."""
    return (
        (Conversation.next_seq == conversation.next_seq)
        & Conversation.deleted_at.does_not_exist()
        & TreeWrite(expected_leaf=conversation.active_leaf, leaf=0).unchanged()
    )


def move_leaf(
    conversation: ConversationRecord, leaf: int, now: str, events: Sequence[LogEvent], turn: int
) -> None:
    """One TransactWrite: the active path ends at `leaf`, the turn waiting for tool results (if any)
    is left behind, the switch is logged as turn `turn`. Raises SequenceConflict when a post or another
    change reached the conversation first (re-read: it may also have been deleted)."""
    target = Conversation(conversation.pk, conversation.sk)
    actions = [
        Conversation.active_leaf.set(leaf),
        Conversation.open_turn.remove(),
        Conversation.turn_count.set(turn),
        Conversation.updated_at.set(now),
        TableItem.gsi1sk.set(listing_sk(now, conversation.conversation_id)),
    ]
    items: list[_Item] = [("update", target, _expected(conversation), actions)]
    try:
        token = request_token(conversation.pk, "switch", turn, leaf)
        _transact(items + _event_puts(conversation, events), token)
    except _Cancelled as exc:
        raise SequenceConflict(str(exc.reasons)) from exc


def mark_deleted(
    conversation: ConversationRecord,
    messages: Sequence[MessageRecord],
    now: str,
    events: Sequence[LogEvent],
    turn: int,
    *,
    pinned: Sequence[Mapping[str, Any]] | None = None,
    drop_summary_to: int | None = None,
    leave_open_turn: bool = False,
) -> None:
    """One TransactWrite (API-18): `messages` marked deleted (and unpinned), the conversation's count,
    pinned copies (`pinned`, when they change) and open turn (`leave_open_turn`) updated, the summary
    that covers them removed (`drop_summary_to`: its to_seq as read), the deletion logged as turn `turn`.

    Raises SequenceConflict when the conversation changed since it was read (a post, a pin, another
    deletion) or a message was deleted meanwhile: re-read and decide again.
    """
    target = Conversation(conversation.pk, conversation.sk)
    actions: list[Any] = [
        Conversation.message_count.add(-len(messages)),
        Conversation.turn_count.set(turn),
        Conversation.updated_at.set(now),
        TableItem.gsi1sk.set(listing_sk(now, conversation.conversation_id)),
    ]
    condition = _expected(conversation) & (Conversation.turn_count == conversation.turn_count)
    if pinned is not None:
        rev = conversation.pinned_rev
        unchanged = Conversation.pinned_rev == rev
        if rev == 0:
            unchanged = unchanged | Conversation.pinned_rev.does_not_exist()
        condition = condition & unchanged
        actions.append(Conversation.pinned_rev.set(rev + 1))
        actions.append(Conversation.pinned.set(list(pinned)) if pinned else Conversation.pinned.remove())
    if leave_open_turn:
        actions.append(Conversation.open_turn.remove())
    items: list[_Item] = [
        (
            "update",
            Message(m.pk, m.sk),
            TableItem.pk.exists() & Message.deleted_at.does_not_exist(),
            [Message.deleted_at.set(now), Message.pinned.remove()],
        )
        for m in messages
    ]
    items.append(("update", target, condition, actions))
    if drop_summary_to is not None:
        summary = Summary(conversation.pk, SUMMARY_SK)
        items.append(("delete", summary, Summary.to_seq == drop_summary_to, None))
    token = request_token(conversation.pk, "delete", turn, *(m.seq for m in messages))
    try:
        _transact(items + _event_puts(conversation, events), token)
    except _Cancelled as exc:
        raise SequenceConflict(str(exc.reasons)) from exc
