"""Deleting one message of the active path (API-18): it and the results of its tool calls are marked
deleted, kept for audit and never listed or sent to the model again. Apart from `chat.history` (the
appends) so that the delete function loads neither the window assembly nor idempotency (PERF-1)."""

from __future__ import annotations

import time
from typing import Any, Final

from chat_core.chat import paths
from chat_core.chat.paths import find_target
from chat_core.chat.rules import now_iso
from chat_core.chat.views import message_view
from chat_core.engine.turnlog import TurnRecorder, TurnState
from chat_core.errors import ConversationBusy, InvalidInput
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import get_settings
from chat_core.store import conversations as store
from chat_core.store import summary_item, tree
from chat_core.store.base import contention_backoff
from chat_core.store.records import ConversationRecord, MessageRecord

#: Messages after a deleted tool call searched for its results (they follow it closely).
RESULTS_SEARCH: Final = 100


def delete_message(owner: str, conversation_id: str, message_id: str) -> dict[str, Any]:
    """DELETE /conversations/{id}/messages/{message_id}: remove one message of the active path (with
    the results of its tool calls); kept for audit, never listed or sent to the model again. 200 with
    what was removed (nothing when it was removed already)."""
    settings = get_settings()
    for attempt in range(max(1, settings.post_attempts)):
        conversation, target = find_target(owner, conversation_id, message_id)
        if target.deleted_at is not None:
            return {"conversation_id": conversation_id, "deleted": []}
        path = _path_from(conversation, target.seq)
        if path is not None and target.seq not in path:
            raise InvalidInput(
                f"message {message_id!r} is not on the active path; switch to its branch first",
                field="message_id",
            )
        group = [target, *_results_of(owner, conversation, target, path)]
        seqs = {m.seq for m in group}
        pinned = [e for e in conversation.pinned or [] if int(e.get("seq", 0)) not in seqs]
        changed_pins = len(pinned) != len(conversation.pinned or [])
        summary = summary_item.get_summary(owner, conversation_id)
        drop = summary.to_seq if summary is not None and summary.to_seq >= min(seqs) else None
        state = TurnState.from_json(conversation.open_turn)
        leave_turn = state is not None and state.call_seq is not None and int(state.call_seq) in seqs
        turn = conversation.turn_count + 1
        recorder = TurnRecorder.new(turn)
        recorder.history_step("delete", meta={"messageIds": [m.message_id for m in group]})
        now = now_iso()
        try:
            tree.mark_deleted(
                conversation,
                group,
                now,
                recorder.take_events(),
                turn,
                pinned=pinned if changed_pins else None,
                drop_summary_to=drop,
                leave_open_turn=leave_turn,
            )
        except store.SequenceConflict:
            logger.info("delete raced a change", conversation_id=conversation_id, attempt=attempt + 1)
            time.sleep(contention_backoff(attempt))
            continue
        metrics.add_metric(name="MessagesDeleted", unit=MetricUnit.Count, value=len(group))
        return {
            "conversation_id": conversation_id,
            "deleted": [{**message_view(m), "deleted_at": now} for m in group],
        }
    raise ConversationBusy("too many concurrent changes to this conversation; retry the request")


def _path_from(conversation: ConversationRecord, seq: int) -> set[int] | None:
    """The seqs of the active path from `seq` on; None for a conversation that never branched (every
    message is on its path)."""
    if conversation.active_leaf is None:
        return None
    return {m.seq for m in paths.whole_path(conversation, until_seq=seq)}


def _results_of(
    owner: str, conversation: ConversationRecord, call: MessageRecord, path: set[int] | None
) -> list[MessageRecord]:
    """The live tool results on the active path that answer `call`'s tool calls."""
    ids = {str(c.get("id")) for c in call.tool_calls or []}
    if not ids:
        return []
    after = store.read_messages(owner, conversation.conversation_id, call.seq + 1, call.seq + RESULTS_SEARCH)
    return [
        m
        for m in after
        if m.role == "tool"
        and m.tool_call_id in ids
        and m.deleted_at is None
        and (path is None or m.seq in path)
    ]
