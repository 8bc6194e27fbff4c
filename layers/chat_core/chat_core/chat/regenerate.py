"""A regeneration's first write (API-18): a new turn and the reply slot of a new answer beside an old one."""

from __future__ import annotations

from typing import Any

from chat_core.chat import recording
from chat_core.chat.assembly import read_history
from chat_core.chat.commands import PostMessage
from chat_core.chat.deadlines import wait_deadline
from chat_core.chat.generation import turn_settings
from chat_core.chat.rules import conversation_of, now_iso
from chat_core.chat.turns import Branch, Turn, tree_write, unreconciled_replies
from chat_core.engine.turnlog import TurnRecorder
from chat_core.errors import ConversationBusy, InvalidInput
from chat_core.settings import Settings
from chat_core.store import conversations as store
from chat_core.store import tree
from chat_core.store.base import wait_to_retry


def regenerate_turn(
    owner: str, request: PostMessage, settings: Settings, branch: Branch, context: Any = None
) -> Turn:
    """API-18: TransactWrite #1 of a regeneration: a new turn and the answer's reply slot, whose parent
    (the message `branch.of` answered) the conversation keeps while the model answers; the active leaf
    moves to the slot. No message is written before the model call.

    The window is the path up to that parent, its last user message and what followed it (tool calls
    and results) sent whole, as the answer being replaced saw them.
    """
    conversation_id = str(request.conversation_id)
    deadline = wait_deadline(context, settings)
    for attempt in range(max(1, settings.post_attempts)):
        recent = read_history(owner, conversation_id, None, leaf=branch.parent)
        conversation = conversation_of(recent.conversation, conversation_id)
        if attempt == 0:
            recording.repair_abandoned(conversation, recent.read, settings)
        if not recent.messages or recent.messages[-1].seq != branch.parent:
            raise InvalidInput(
                "the message this answer replied to is gone (deleted, or there was none): there is "
                "nothing to answer again",
                field="message_id",
            )
        model = request.model or conversation.model
        settled = turn_settings(conversation.defaults, request.settings, model)
        slot = conversation.next_seq
        answered = recent.messages[-1]
        turn_number = conversation.turn_count + 1
        recorder = TurnRecorder.new(turn_number)
        recorder.turn_start(
            answered.content or "",
            tokens=answered.tokens,
            message_id=answered.message_id,
            branch=branch.meta,
        )
        now = now_iso()
        parents = tree.with_slot_parent(
            conversation.slot_parents, slot, branch.parent, now, answered.message_id
        )
        shape = tree_write(conversation, owner, branch.parent, slot, slot, slot_parents=parents)
        unreconciled = unreconciled_replies(recent.read)
        try:
            store.append_messages(
                conversation,
                [],
                now,
                events=recorder.take_events(),
                turn=turn_number,
                open_turn=None,  # a turn waiting for tool results is left behind on the other branch
                reconcile=unreconciled,
                tree=shape,
            )
        except store.SequenceConflict:
            if not wait_to_retry(attempt, deadline):
                break
            continue
        users = [i for i, m in enumerate(recent.messages) if m.role == "user"]
        tail_from = recent.messages[users[-1]].seq if users else branch.parent
        return Turn(
            conversation,
            None,
            [],
            list(recent.messages),
            model,
            recorder,
            first_seq=slot,
            reply_seq=slot,
            summary=recent.summary,
            tail_from_seq=tail_from,
            generation=settled,
            reply_parent=branch.parent,
            read=recent.read,
            covered_from=recent.covered_from,
        )
    raise ConversationBusy("too many concurrent changes to this conversation; retry the request")
