"""The active path a read sees (API-18): what a window chooses from, what the detail route lists.

A conversation that never branched keeps its one Query: its active path is every message, in seq order,
less the deleted ones. A branched one follows parents from its active leaf (store/tree.py), one more
Query per branch point below the newest page. Its summary applies only when the last message it covers
is on the active path (the path from the root to a message is unique, so the summary then stands for
exactly the path's beginning), and its pins only when they are on it: text from another branch never
reaches the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.chat.rules import check_id, conversation_of, not_found
from chat_core.chat.views import message_view
from chat_core.errors import MessageNotFound
from chat_core.store import conversations as store
from chat_core.store import tree
from chat_core.store.keys import MESSAGE_SK_PREFIX, is_valid_id
from chat_core.store.records import ConversationRecord, MessageRecord, SummaryRecord

#: Queries a post may spend past its window's reach to learn whether the summary's last message is on
#: the active path; past them the summary is left out (never a guess that could show another branch).
SUMMARY_CHECK_QUERIES: Final = 2


def live(messages: Sequence[MessageRecord]) -> list[MessageRecord]:
    """The messages not deleted (API-18: a deleted message is never sent or listed again)."""
    return [m for m in messages if m.deleted_at is None]


def on_active_path(conversation: ConversationRecord, walked: tree.Walk, seqs: Sequence[int]) -> set[int]:
    """Which of `seqs` are on the path `walked` started (continuing the walk down to the lowest of them,
    at most SUMMARY_CHECK_QUERIES more Queries; what that does not reach counts as off the path)."""
    found = {m.seq for m in walked.messages}
    below = [seq for seq in seqs if seq not in found and seq <= walked.next_seq]
    if below:
        further = tree.walk(
            conversation,
            walked.next_seq,
            known=walked.known,
            covered_from=walked.covered_from,
            until_seq=min(below),
            max_queries=SUMMARY_CHECK_QUERIES,
        )
        found |= {m.seq for m in further.messages}
    return {seq for seq in seqs if seq in found}


def active_history(
    recent: store.Recent, want: int, *, leaf: int | None = None, max_queries: int | None = None
) -> store.Recent:
    """The post's history: the newest `want` live messages of the active path (or of the path ending at
    `leaf`), and the summary if it stands for the path's beginning. `recent` is the post's one Query
    (its newest messages); `max_queries` bounds the Queries the walk may add to it."""
    conversation = conversation_of(recent.conversation)
    if leaf is None and conversation.active_leaf is None:
        return replace(recent, messages=live(recent.messages), page=recent.messages)
    walked = tree.walk(
        conversation,
        leaf if leaf is not None else conversation.active_leaf or 0,
        known={m.seq: m for m in recent.messages},
        covered_from=recent.covered_from,
        want=want,
        max_queries=max_queries,
    )
    summary: SummaryRecord | None = recent.summary
    pins = [int(entry.get("seq", 0)) for entry in conversation.pinned or []]
    wanted = [*pins, *([summary.to_seq] if summary is not None else [])]
    on_path = on_active_path(conversation, walked, wanted) if wanted else set()
    if summary is not None and summary.to_seq not in on_path:
        summary = None
    if conversation.pinned:
        # Pins follow the active path too: the window of this read sees only the path's (in memory;
        # the conversation item's list is left as it is).
        pinned = [e for e in conversation.pinned if int(e.get("seq", 0)) in on_path]
        conversation = replace(conversation, pinned=pinned)
    return replace(
        recent,
        conversation=conversation,
        messages=live(walked.messages),
        summary=summary,
        page=recent.messages,
    )


def whole_path(conversation: ConversationRecord, *, until_seq: int = 1) -> list[MessageRecord]:
    """Every message of the active path from `until_seq` on (deleted ones included), oldest first."""
    if conversation.active_leaf is None:
        raise ValueError("a conversation that never branched has no path to walk")
    return tree.walk(conversation, conversation.active_leaf, until_seq=until_seq).messages


class _Unknown(Exception):
    """A parent outside what was read, where no read may be added (the post path)."""


class Parents:
    """Message ids of parents, from the messages at hand, else one GetItem each (cached).

    With `fetch=False` nothing is read: seqs from `covered_from` on that are not among `known` are
    reply slots not filled yet; a parent below that is unknown (its `parent_id` is left out).
    """

    def __init__(
        self,
        owner: str,
        conversation: ConversationRecord,
        known: Sequence[MessageRecord],
        *,
        fetch: bool = True,
        covered_from: int | None = None,
    ) -> None:
        self.owner = owner
        self.conversation = conversation
        self.by_seq: dict[int, MessageRecord | None] = {m.seq: m for m in known}
        self.fetch = fetch
        self.covered_from = covered_from

    def message(self, seq: int) -> MessageRecord | None:
        if seq not in self.by_seq:
            if not self.fetch and (self.covered_from is None or seq < self.covered_from):
                raise _Unknown(seq)
            found = (
                store.get_message(self.owner, self.conversation.conversation_id, seq) if self.fetch else None
            )
            self.by_seq[seq] = found
        return self.by_seq[seq]

    def parent(self, message: MessageRecord) -> MessageRecord | None:
        """The stored message `message` follows (None for a first message); a reply slot not filled
        yet is passed through to its own parent. Raises _Unknown (fetch=False) past what was read."""
        seq = tree.parent_seq(message)
        while seq > tree.ROOT:
            found = self.message(seq)
            if found is not None:
                return found
            seq = tree.slot_parent(self.conversation.slot_parents, seq)
        return None


def with_parent(view: dict[str, Any], message: MessageRecord, parents: Parents) -> dict[str, Any]:
    """`view` with `parent_id` (API-18; left out when the parent is beyond what `parents` may read) and
    `deleted_at` when the message was deleted."""
    try:
        parent = parents.parent(message)
    except _Unknown:
        pass
    else:
        view["parent_id"] = parent.message_id if parent is not None else None
    if message.deleted_at is not None:
        view["deleted_at"] = message.deleted_at
    return view


def path_views(
    owner: str, conversation: ConversationRecord, messages: Sequence[MessageRecord]
) -> list[dict[str, Any]]:
    """API-18: message views with `parent_id` (the detail route's)."""
    parents = Parents(owner, conversation, messages)
    return [with_parent(message_view(m), m, parents) for m in messages]


def path_page(
    owner: str, conversation: ConversationRecord, limit: int, start: Mapping[str, str] | None
) -> tuple[list[dict[str, Any]], dict[str, str] | None]:
    """One page of the active path's live messages, oldest first: the path of a conversation that never
    branched is its messages in seq order (one Query); a branched one's is walked from the active leaf
    (a Query per WALK_PAGE messages and per branch point on it)."""
    if conversation.active_leaf is None:
        page = store.page_messages(owner, conversation.conversation_id, limit, start)
        shown = live(page.items)
        return path_views(owner, conversation, shown), page.last_key
    after = int(start["sk"][len(MESSAGE_SK_PREFIX) :]) if start else 0
    path = [m for m in live(whole_path(conversation)) if m.seq > after]
    shown, more = path[:limit], len(path) > limit
    last_key = {"pk": shown[-1].pk, "sk": shown[-1].sk} if more and shown else None
    return path_views(owner, conversation, shown), last_key


def message_not_found(message_id: str) -> MessageNotFound:
    return MessageNotFound(f"message {message_id!r} not found")


def find_target(
    owner: str, conversation_id: str, message_id: str
) -> tuple[ConversationRecord, MessageRecord]:
    """The caller's live conversation and its message `message_id` (404 for a malformed, unknown,
    deleted or another user's id): two GetItems, the message's id carries its seq."""
    check_id(conversation_id)
    conversation = live_conversation(owner, conversation_id)
    found = store.find_message(owner, conversation_id, message_id) if is_valid_id(message_id) else None
    if found is None:
        raise message_not_found(message_id)
    return conversation, found


def live_conversation(owner: str, conversation_id: str) -> ConversationRecord:
    conversation = store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        raise not_found(conversation_id)
    return conversation
