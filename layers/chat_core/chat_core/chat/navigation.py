"""The tree and the active path (API-18): read every branch, switch the active one.

The detail route lists the active path; the tree route lists every message with its parent, children
and whether it is on the active path; a switch moves the active leaf to any message, and the next post
continues from there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from chat_core.chat.paging import decode_cursor, encode_cursor
from chat_core.chat.paths import Parents, find_target, live_conversation, whole_path, with_parent
from chat_core.chat.rules import check_id, now_iso
from chat_core.chat.views import conversation_view, message_view
from chat_core.engine.turnlog import TurnRecorder
from chat_core.errors import ConversationBusy
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import get_settings
from chat_core.store import conversations as store
from chat_core.store import tree
from chat_core.store.keys import MESSAGE_SK_PREFIX, conversation_pk
from chat_core.store.records import ConversationRecord, MessageRecord

TREE_SCOPE = "tree"


def set_active(owner: str, conversation_id: str, message_id: str) -> dict[str, Any]:
    """PUT /conversations/{id}/active: the active path ends at `message_id` from now on; the next post
    continues it. A turn waiting for tool results on the path left behind is left with it."""
    conversation, target = find_target(owner, conversation_id, message_id)
    settings = get_settings()
    for attempt in range(max(1, settings.post_attempts)):
        if attempt:
            conversation = live_conversation(owner, conversation_id)
        turn = conversation.turn_count + 1
        recorder = TurnRecorder.new(turn)
        recorder.history_step(
            "switch",
            meta={"messageId": target.message_id, "seq": target.seq},
        )
        try:
            tree.move_leaf(conversation, target.seq, now_iso(), recorder.take_events(), turn)
        except store.SequenceConflict:
            logger.info("active leaf moved meanwhile, re-reading", attempt=attempt + 1)
            continue
        metrics.add_metric(name="BranchesSwitched", unit=MetricUnit.Count, value=1)
        view = conversation_view(
            replace(conversation, active_leaf=target.seq, open_turn=None, turn_count=turn)
        )
        view["active_message_id"] = target.message_id
        return view
    raise ConversationBusy("too many concurrent changes to this conversation; retry the request")


def tree_page(owner: str, conversation_id: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
    """GET /conversations/{id}/tree: every message (deleted ones too, marked) in seq order with
    `parent_id`, `children` (ids, oldest first) and `active` (on the active path), paginated like the
    detail route; `active_message_id` names the active path's last message."""
    check_id(conversation_id)
    pk = conversation_pk(owner, conversation_id)
    scope = f"{TREE_SCOPE}:{conversation_id}"

    def mine(key: Mapping[str, str]) -> bool:
        return set(key) == {"pk", "sk"} and key["pk"] == pk and key["sk"].startswith(MESSAGE_SK_PREFIX)

    start = decode_cursor(owner, scope, cursor, mine) if cursor is not None else None
    conversation = live_conversation(owner, conversation_id)
    page = store.page_messages(owner, conversation_id, limit, start)
    messages: list[MessageRecord] = list(page.items)
    parents = Parents(owner, conversation, messages)
    children: dict[int, list[int]] = {m.seq: [] for m in messages}
    if messages:
        first, last = messages[0].seq, messages[-1].seq
        after = parents.message(last + 1) if page.last_key else None
        for message in [*messages, *([after] if after is not None else [])]:
            parent = parents.parent(message)
            if parent is not None and parent.seq in children:
                children[parent.seq].append(message.seq)
        links = tree.links_between(conversation, first, last) if conversation.active_leaf is not None else []
        for parent_seq, child_seq in links:
            kids = children.setdefault(parent_seq, [])
            if child_seq not in kids and parents.message(child_seq) is not None:
                kids.append(child_seq)
        on_path = _path_seqs(conversation, first, messages)
    else:
        on_path = set()
    items = []
    for message in messages:
        view = with_parent(message_view(message), message, parents)
        kids = sorted(children.get(message.seq, []))
        view["children"] = [ids.message_id for seq in kids if (ids := parents.message(seq)) is not None]
        view["active"] = message.seq in on_path
        items.append(view)
    metrics.add_metric(name="TreesRead", unit=MetricUnit.Count, value=1)
    return {
        "conversation_id": conversation_id,
        "active_message_id": _active_id(owner, conversation, parents),
        "messages": items,
        "next_cursor": encode_cursor(owner, scope, page.last_key) if page.last_key else None,
    }


def _path_seqs(conversation: ConversationRecord, first: int, page: Sequence[MessageRecord]) -> set[int]:
    """The seqs of the page's messages that are on the active path."""
    if conversation.active_leaf is None:
        return {m.seq for m in page}  # never branched: every message is on the line
    return {m.seq for m in whole_path(conversation, until_seq=first)}


def _active_id(owner: str, conversation: ConversationRecord, parents: Parents) -> str | None:
    """The id of the active path's last stored message (a reply still being written is not one yet)."""
    seq = conversation.active_leaf if conversation.active_leaf is not None else conversation.next_seq - 1
    while seq > tree.ROOT:
        found = parents.message(seq)
        if found is not None:
            return str(found.message_id)
        seq = tree.slot_parent(conversation.slot_parents, seq)
    return None
