"""The contended path of a post (REL): slots taken by one atomic update, then the messages written into
them, so concurrent posters never queue behind one another; on a branched conversation (API-18) the
same update moves the active leaf."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.update import Action

from chat_core.engine.turnlog import LogEvent
from chat_core.errors import ConversationNotFound
from chat_core.store import base, ledger, totals
from chat_core.store.base import TableItem
from chat_core.store.conversations import (
    _NEW,
    KEEP,
    OpenTurn,
    SequenceConflict,
    _Cancelled,
    _committed,
    _event_puts,
    _Item,
    _log_from,
    _open_turn_actions,
    _write,
    get_conversation,
    link_items,
)
from chat_core.store.items import Conversation
from chat_core.store.keys import listing_sk
from chat_core.store.records import ConversationRecord, MessageRecord


@dataclass(frozen=True)
class Slots:
    """Sequence numbers reserved by one atomic update: `first_seq` on, and the turn number taken."""

    first_seq: int
    turn: int
    #: API-18 (`reserve_on_path`): the active leaf before the reservation, which the messages follow.
    previous_leaf: int | None = None


def _refused(conversation: ConversationRecord, branching: str) -> Exception:
    """Why a reservation's condition failed: the conversation is gone (ConversationNotFound), or it is
    live and its branching is not what the reservation expected (SequenceConflict: `branching`)."""
    now = get_conversation(conversation.owner, conversation.conversation_id)
    if now is not None and not now.is_deleted:
        return SequenceConflict(branching)
    return ConversationNotFound("conversation not found", conversation_id=conversation.conversation_id)


def reserve_on_path(
    conversation: ConversationRecord, count: int, now: str, *, new_turn: bool, start_branch: bool = False
) -> Slots:
    """API-18: `reserve_slots` for a branched conversation: one atomic UpdateItem takes `count` sequence
    numbers and moves the active leaf to the last of them (the reply's slot), returning the leaf it
    replaced (the parent of the reserved messages, unless the caller starts a branch elsewhere: an edit).

    Every expression of an UpdateItem reads the item as it was, so `active_leaf = next_seq + count - 1`
    names the last slot taken. Raises SequenceConflict when the conversation never branched (and
    `start_branch` is not set), ConversationNotFound when it is absent or deleted.
    """
    base.bind()
    actions: list[Any] = [
        # Both SET: every operand is the item as it was before this update.
        Conversation.active_leaf.set(Conversation.next_seq + (count - 1)),
        Conversation.next_seq.set(Conversation.next_seq + count),
        Conversation.updated_at.set(now),
        TableItem.gsi1sk.set(listing_sk(now, conversation.conversation_id)),
    ]
    if new_turn:
        actions.append(Conversation.turn_count.add(1))
    condition = TableItem.pk.exists() & Conversation.deleted_at.does_not_exist()
    if not start_branch:
        condition = condition & Conversation.active_leaf.exists()
    try:
        raw = TableItem._get_connection().update_item(
            conversation.pk,
            range_key=conversation.sk,
            actions=actions,
            condition=condition,
            return_values="ALL_OLD",
        )
    except PynamoDBException as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            raise _refused(conversation, "the conversation has not branched") from exc
        raise base.store_error(exc) from exc
    except (ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    before = raw.get("Attributes") or {}
    first = int(before["next_seq"]["N"]) if "next_seq" in before else 1
    turns = int(before["turn_count"]["N"]) if "turn_count" in before else 0
    leaf = int(before["active_leaf"]["N"]) if "active_leaf" in before else None
    return Slots(first_seq=first, turn=turns + (1 if new_turn else 0), previous_leaf=leaf)


def reserve_slots(conversation: ConversationRecord, count: int, now: str, *, new_turn: bool) -> Slots:
    """Take `count` sequence numbers (and the next turn number) with one atomic UpdateItem.

    The contended path of a post: instead of racing every other poster for `next_seq == expected` and
    re-reading after each loss, each post takes its own slots in one write that cannot lose the race.
    The messages follow in `put_reserved`. Raises ConversationNotFound when it is absent or deleted,
    SequenceConflict when it has branched (API-18).
    """
    base.bind()
    target = Conversation(conversation.pk, conversation.sk)
    actions: list[Action] = [
        Conversation.next_seq.add(count),
        Conversation.updated_at.set(now),
        TableItem.gsi1sk.set(listing_sk(now, conversation.conversation_id)),
    ]
    if new_turn:
        actions.append(Conversation.turn_count.add(1))
    # API-18: only a conversation that never branched takes slots this way (its messages follow one
    # another); a branched one moves its active leaf with every post, under TransactWrite #1's condition.
    live = TableItem.pk.exists() & Conversation.deleted_at.does_not_exist()
    try:
        target.update(actions=actions, condition=live & Conversation.active_leaf.does_not_exist())
    except PynamoDBException as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            raise _refused(conversation, "the conversation branched meanwhile") from exc
        raise base.store_error(exc) from exc
    except (ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return Slots(first_seq=int(target.next_seq) - count, turn=int(target.turn_count or 0))


def put_reserved(
    conversation: ConversationRecord,
    messages: Sequence[MessageRecord],
    events: Sequence[LogEvent],
    deadline: float,
    *,
    reconcile: Sequence[MessageRecord] = (),
    open_turn: OpenTurn = KEEP,
    links: Sequence[tuple[int, int]] = (),
    drop_open_turn: bool = False,
) -> None:
    """The messages of slots `reserve_slots` took, their turn-log events and their count (and, API-18,
    the branch links of the (parent, child) `links` whose child does not follow its parent), in one
    TransactWrite. The count is
    an ADD with no condition on the sequence, so concurrent posts never invalidate each other; a
    transaction conflict on the conversation item is retried until `deadline`.
    Replies in `reconcile` (stored on their own) are folded into the totals, as `append_messages` does;
    if another post folded them first, the messages are written without them.

    Raises SequenceConflict when a slot is taken (a store that did not apply the reservation
    atomically: reserve again) or the conflict outlasted the deadline, ConversationNotFound when the
    conversation was deleted meanwhile.
    """
    target = Conversation(conversation.pk, conversation.sk)
    items = [m.to_item() for m in messages]
    event_puts = _event_puts(conversation, events, messages, items)
    attempt = 0
    while True:
        reconciled, owed = totals.reconcile(reconcile)
        actions = [
            Conversation.message_count.add(len(messages) + len(reconcile)),
            _log_from(messages[0].seq),
            *owed[1:],
        ]
        if drop_open_turn:
            actions.append(Conversation.open_turn.remove())  # an edit leaves a waiting turn behind
        elif reconcile:
            actions += _open_turn_actions(open_turn)
        core: list[_Item] = [
            *(("put", item, _NEW, None) for item in items),
            ("update", target, TableItem.pk.exists() & Conversation.deleted_at.does_not_exist(), actions),
            *reconciled,
            *(("put", link, None, None) for link in link_items(conversation, links)),
            *ledger.charge_updates(conversation.owner, totals.pending_sums(reconcile)[3]),
        ]
        try:
            _write(core, event_puts, f"{conversation.pk}|reserved|{messages[0].message_id}|{attempt}")
            return
        except _Cancelled as exc:
            if exc.reasons[:1] == ["ConditionalCheckFailed"]:
                if _committed(messages[0]):
                    return
                raise SequenceConflict(str(exc.reasons)) from exc
            if exc.reasons[len(messages) : len(messages) + 1] == ["ConditionalCheckFailed"]:
                raise ConversationNotFound(
                    "conversation not found", conversation_id=conversation.conversation_id
                ) from exc
            folded = len(messages) + 1 + len(reconciled)
            if "ConditionalCheckFailed" in exc.reasons[folded:]:
                # An event's key is taken: another turn has this number (a store that did not apply
                # the reservation atomically). Reserve again; these slots are closed by a repair.
                raise SequenceConflict(str(exc.reasons)) from exc
            if "ConditionalCheckFailed" in exc.reasons[len(messages) + 1 : folded]:
                reconcile = ()  # another post folded them in first
            else:
                if not base.wait_to_retry(attempt, deadline):
                    raise SequenceConflict(str(exc.reasons)) from exc
        attempt += 1
