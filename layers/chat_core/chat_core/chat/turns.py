"""A post's first write: the user's message and its reply slot, on a new or a contended conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chat_core.chat import attachments, recording
from chat_core.chat.assembly import read_history
from chat_core.chat.commands import PostMessage
from chat_core.chat.create import session_start, title_from
from chat_core.chat.deadlines import wait_deadline
from chat_core.chat.generation import NO_SETTINGS, TurnSettings, turn_settings
from chat_core.chat.policy import count_message, counted_with
from chat_core.chat.rules import conversation_of, now_iso, pending_calls, required
from chat_core.chat.views import PostOutcome
from chat_core.engine import tool_pairing
from chat_core.engine.turnlog import Tokens, TurnRecorder
from chat_core.engine.window import OPENAI_KEYS
from chat_core.errors import ConversationBusy, InvalidInput, StoreUnavailable, ToolResultsPending
from chat_core.observability import logger
from chat_core.settings import Settings
from chat_core.store import conversations as store
from chat_core.store import slots as slots_store
from chat_core.store import tree
from chat_core.store.base import wait_to_retry
from chat_core.store.keys import message_id_for, new_id
from chat_core.store.records import ConversationRecord, MessageRecord, SummaryRecord


@dataclass(frozen=True)
class Turn:
    """A post after TransactWrite #1: its messages are durable, the reply slot reserved (`reply_seq`).

    `history` is what the window chooses from (stored history read by the Query, then the messages this
    post recorded); on a post of tool results `tail_from_seq` is where the calls they answer start.
    `reply_seq` is None when the turn ended at MAX_TURN_STEPS and no model call follows.
    """

    conversation: ConversationRecord
    user: MessageRecord | None
    recorded: list[MessageRecord]
    history: list[MessageRecord]
    model: str
    recorder: TurnRecorder
    first_seq: int
    reply_seq: int | None
    summary: SummaryRecord | None = None  # seed 001: what the window carries for the messages before history
    resumed: bool = False
    tail_from_seq: int | None = None
    #: API-11/12: what the model call sends besides the messages (the conversation's defaults under
    #: the post's own settings), checked before anything was written.
    generation: TurnSettings = NO_SETTINGS
    #: API-18: the reply's parent when it is stored with one (a branched conversation's messages are);
    #: None: the message before it.
    reply_parent: int | None = None
    #: Every message the post's Query read, and the seq from which it read all (API-18: the answer's
    #: `parent_id`s come from them, without another read).
    read: Sequence[MessageRecord] = ()
    covered_from: int = 1

    def outcome(
        self, body: dict[str, Any], *, model_failed: bool = False, reply_stored: bool = True
    ) -> PostOutcome:
        stored = len(self.recorded) + (1 if self.user is not None else 0)
        last = self.reply_seq if self.reply_seq is not None else self.first_seq + stored - 1
        return PostOutcome(
            body=body,
            model_failed=model_failed,
            reply_stored=reply_stored,
            seq=self.first_seq,
            user_seq=self.user.seq if self.user is not None else None,
            reply_seq=self.reply_seq,
            last_seq=last,
        )


@dataclass(frozen=True)
class Branch:
    """API-18: a post that continues from `parent` instead of the active leaf. An edit stores a new
    user message beside `of` (a user message); a regeneration asks the model again for a new answer
    beside `of` (an answer) and stores no user message."""

    kind: Literal["edit", "regenerate"]
    of: MessageRecord
    parent: int

    @property
    def meta(self) -> dict[str, str]:
        return {"edits" if self.kind == "edit" else "regenerates": self.of.message_id}


def tree_write(
    conversation: ConversationRecord,
    owner: str,
    parent: int,
    first_seq: int,
    leaf: int,
    *,
    slot_parents: Mapping[str, Any] | store._Keep | None = store.KEEP,
) -> store.TreeWrite:
    """How a branched write moves the active path: from `parent` through new messages from `first_seq`
    on, ending at `leaf`."""
    return store.TreeWrite(
        expected_leaf=conversation.active_leaf,
        leaf=leaf,
        links=[(parent, first_seq)],
        slot_parents=slot_parents,
    )


def _stored_parts(
    owner: str, conversation_id: str, request: PostMessage, settings: Settings
) -> list[dict[str, Any]] | None:
    """The user's content parts as the item keeps them: large binary values put in S3 first (API-17),
    once per post whatever its retries."""
    parts = request.parts
    return attachments.store_parts(owner, conversation_id, parts, settings) if parts else None


def _user_message(
    owner: str,
    conversation_id: str,
    seq: int,
    request: PostMessage,
    model: str,
    stored_parts: list[dict[str, Any]] | None,
) -> MessageRecord:
    """The user's message: its text as `content`, its content parts (API-15) as stored, counted once as
    sent (TOK-5; parts other than text at a flat NON_TEXT_PART_TOKENS each)."""
    content, parts = request.text or "", request.parts
    return MessageRecord(
        owner=owner,
        conversation_id=conversation_id,
        seq=seq,
        message_id=message_id_for(seq),
        role="user",
        content=content,
        parts=stored_parts,
        status="ok",
        created_at=now_iso(),
        tokens=count_message({"role": "user", "content": parts or content}, model),
        tokens_encoding=counted_with(model),
    )


def _recorded_messages(
    owner: str,
    conversation_id: str,
    first_seq: int,
    recorded: Sequence[Mapping[str, Any]],
    names: Sequence[str | None],
    model: str,
) -> list[MessageRecord]:
    """The tool messages a post records (as records), from `first_seq` on (TOK-4 counts at write)."""

    items = []
    for offset, (message, name) in enumerate(zip(recorded, names, strict=True)):
        seq = first_seq + offset
        counted = {key: message[key] for key in OPENAI_KEYS if message.get(key) is not None}
        counted.setdefault("content", None)
        items.append(
            MessageRecord(
                owner=owner,
                conversation_id=conversation_id,
                seq=seq,
                message_id=message_id_for(seq),
                role=message["role"],
                content=message.get("content"),
                status="ok",
                created_at=now_iso(),
                tokens=count_message(counted, model),
                tokens_encoding=counted_with(model),
                tool_calls=message.get("tool_calls"),
                tool_call_id=message.get("tool_call_id"),
                name=name,
            )
        )
    return items


def _record_client_steps(
    recorder: TurnRecorder, recorded: Sequence[Mapping[str, Any]], items: Sequence[MessageRecord]
) -> None:
    for message, item in zip(recorded, items, strict=True):
        recorder.client_message(message, message_id=item.message_id, tokens=item.tokens)


def start_conversation(owner: str, request: PostMessage, settings: Settings) -> Turn:
    """First message without an id: conversation, messages and events in one TransactWrite (API-1)."""

    if not request.has_content:  # checked by post_message before any I/O
        raise InvalidInput("content is required to start a conversation", field="content")
    model = request.model or settings.llm_model
    settled = turn_settings(None, request.settings, model)
    conversation_id = new_id()
    recorded_in = request.recorded
    names = tool_pairing.pair_results(recorded_in, [])
    recorded = _recorded_messages(owner, conversation_id, 1, recorded_in, names, model)
    stored_parts = _stored_parts(owner, conversation_id, request, settings)
    user = _user_message(owner, conversation_id, 1 + len(recorded), request, model, stored_parts)
    title = title_from(request.text or "")
    conversation = ConversationRecord(
        owner=owner,
        conversation_id=conversation_id,
        title=title,
        model=model,
        created_at=user.created_at,
        updated_at=user.created_at,
        turn_count=1,
        unkept=None if request.kept else True,
    )
    started = session_start(conversation, settings)
    recorder = TurnRecorder.new(1)
    recorder.turn_start(request.text or "", tokens=user.tokens, message_id=user.message_id)
    _record_client_steps(recorder, recorded_in, recorded)
    events = [started, *recorder.take_events()]
    conversation = store.create_with_first_message(conversation, user, recorded=recorded, events=events)
    logger.info("conversation created", conversation_id=conversation_id, model=model)
    return Turn(
        conversation,
        user,
        recorded,
        list(recorded),
        model,
        recorder,
        first_seq=1,
        reply_seq=user.seq + 1,
        generation=settled,
    )


def unreconciled_replies(messages: Sequence[MessageRecord]) -> list[MessageRecord]:
    """Replies stored on their own whose totals the conversation item still lacks."""
    return [m for m in messages if m.pending_totals is not None]


def _turn_state_to_catch_up(unreconciled: Sequence[MessageRecord]) -> store.OpenTurn:
    """The turn state the newest reply stored on its own decided, for the conversation item to take
    now (KEEP when none of them changed it)."""
    pending = unreconciled[-1].pending_totals if unreconciled else None
    if isinstance(pending, dict) and "open_turn" in pending:
        held: store.OpenTurn = pending["open_turn"]
        return held
    return store.KEEP


def conversation_tokens(conversation: ConversationRecord, step: Tokens | None = None) -> Tokens:
    """The conversation's totals as read by this post, plus this step (turn_end `conversationTokens`)."""
    totals = Tokens(
        prompt=conversation.prompt_tokens,
        completion=conversation.completion_tokens,
        total=conversation.total_tokens,
        local_prompt=conversation.local_prompt_tokens,
        local_completion=conversation.local_completion_tokens,
    )
    return totals.add(step) if step is not None else totals


def append_to_conversation(
    owner: str,
    request: PostMessage,
    settings: Settings,
    context: Any = None,
    *,
    branch: Branch | None = None,
) -> Turn:
    """The Query, then TransactWrite #1; on contention, the post takes its own slots instead.

    A post with `content` opens the next turn. While the model's last answer waits for tool results, a
    post must carry exactly those results (no content): they continue the open turn, and the model is
    asked again unless the turn already used MAX_TURN_STEPS model calls.

    The first attempt expects `next_seq` as read (one Query and one TransactWrite, the common case).
    A post of a new turn that loses that race reserves its slots with one atomic update and writes into
    them, so concurrent posters never queue behind one another; a post of tool results re-reads and
    retries (it must see the turn's state). Either way the wait is bounded by `wait_deadline`.

    API-18: on a branched conversation the post continues its active path and moves the active leaf to
    its reply, expecting the leaf as read (posts there re-read and retry rather than take slots); an
    edit (`branch`) continues from the edited message's parent instead and leaves any open turn behind.
    """

    conversation_id = str(request.conversation_id)
    recorded_in = request.recorded
    deadline = wait_deadline(context, settings)
    stored_parts: list[dict[str, Any]] | None = None
    for attempt in range(max(1, settings.post_attempts)):
        recent = read_history(owner, conversation_id, None, leaf=branch.parent if branch else None)
        conversation = conversation_of(recent.conversation, conversation_id)
        if attempt == 0:
            # A reply slot a crashed post left empty is closed as an error turn (rare; no read added).
            recording.repair_abandoned(conversation, recent.read, settings)
        state, pending = pending_calls(conversation, recent.read)
        if branch is not None:
            state, pending = None, []  # an edit leaves a turn waiting for tool results behind
        if pending and request.has_content:
            ids = ", ".join(call["id"] for call in pending)
            raise ToolResultsPending(
                f"the model asked for tool calls {ids}; post their results first: "
                f'{{"conversation_id", "messages": [{{"role": "tool", "tool_call_id", "content"}}, ...]}} '
                f"without content"
            )
        if not pending and not request.has_content:
            raise InvalidInput("content is required: no tool calls are waiting for results", field="content")
        names = tool_pairing.pair_results(recorded_in, pending)
        model = request.model or conversation.model
        settled = turn_settings(conversation.defaults, request.settings, model)
        if stored_parts is None and request.has_content:
            # Written once the conversation is known to be the caller's and the post is accepted.
            stored_parts = _stored_parts(owner, conversation_id, request, settings)
        branched = branch is not None or conversation.active_leaf is not None
        if attempt > 0 and not pending:
            reserved = _reserve_turn(
                owner, request, recent, names, model, deadline, settled, stored_parts, branch=branch
            )
            if reserved is not None:
                return reserved
            continue  # it branched (or a store said it had not) meanwhile: read it again
        seq = conversation.next_seq
        recorded = _recorded_messages(owner, conversation_id, seq, recorded_in, names, model)
        user = None
        if request.has_content:
            user = _user_message(owner, conversation_id, seq + len(recorded), request, model, stored_parts)
        turn_number: int | None = None
        if state is not None and pending:
            recorder = TurnRecorder.resume(state)
        else:
            turn_number = conversation.turn_count + 1
            recorder = TurnRecorder.new(turn_number)
            user = required(user, "the turn's user message")
            recorder.turn_start(
                user.content or "",
                tokens=user.tokens,
                message_id=user.message_id,
                branch=branch.meta if branch is not None else None,
            )
        _record_client_steps(recorder, recorded_in, recorded)
        at_limit = bool(pending) and recorder.state.model_calls >= settings.max_turn_steps
        unreconciled = unreconciled_replies(recent.read)
        open_turn = _turn_state_to_catch_up(unreconciled)
        if at_limit:
            recorder.end("max_steps", conversation_tokens=conversation_tokens(conversation))
            open_turn = None
        elif pending:
            open_turn = (
                recorder.state.to_json()
            )  # results in: a concurrent post of the same ones is an orphan
        elif branch is not None:
            open_turn = None
        messages = [*recorded, *([user] if user is not None else [])]
        reply_seq = None if at_limit else seq + len(messages)
        shape: store.TreeWrite | None = None
        if branched:
            parent = branch.parent if branch is not None else conversation.active_leaf or 0
            messages = tree.link_parents(messages, parent)
            recorded = messages[: len(recorded)]
            user = messages[-1] if user is not None else None
            leaf = reply_seq if reply_seq is not None else messages[-1].seq
            shape = tree_write(conversation, owner, parent, seq, leaf)
        try:
            store.append_messages(
                conversation,
                messages,
                messages[-1].created_at,
                events=recorder.take_events(),
                turn=turn_number,
                open_turn=open_turn,
                reserve_reply=not at_limit,
                reconcile=unreconciled,
                tree=shape,
            )
        except store.SequenceConflict:
            logger.info("sequence taken, re-reading", conversation_id=conversation_id, attempt=attempt + 1)
            if not pending:
                # A new turn takes its own slots next (one atomic update): nothing to wait for, so a
                # slow store cannot run its wait out before it has even tried.
                continue
            if not wait_to_retry(attempt, deadline):
                break
            continue
        return Turn(
            conversation,
            user,
            recorded,
            [*recent.messages, *recorded],
            model,
            recorder,
            first_seq=seq,
            reply_seq=reply_seq,
            summary=recent.summary,
            resumed=bool(pending),
            tail_from_seq=state.call_seq if state is not None and pending else None,
            generation=settled,
            reply_parent=(reply_seq - 1) if branched and reply_seq is not None else None,
            read=recent.read,
            covered_from=recent.covered_from,
        )
    raise ConversationBusy("too many concurrent posts to this conversation; retry the request")


def _reserve_turn(
    owner: str,
    request: PostMessage,
    recent: store.Recent,
    names: Sequence[str | None],
    model: str,
    deadline: float,
    settled: TurnSettings,
    stored_parts: list[dict[str, Any]] | None,
    *,
    branch: Branch | None = None,
) -> Turn | None:
    """A new turn on a contended conversation: its slots taken by one atomic update, then written.

    Only a store that applies updates non-atomically can hand two posts the same slots; the loser's
    write fails its conditions and it reserves again, until the deadline.

    API-18: on a branched conversation (or for an edit) the same update moves the active leaf to the
    turn's reply slot and hands back the leaf it replaced, which the messages follow (an edit's follow
    the edited message's parent). None when the conversation changed between never branched and
    branched since it was read: the caller reads it again.
    """

    conversation = conversation_of(recent.conversation)
    if not request.has_content:
        raise InvalidInput("content is required", field="content")
    branched = branch is not None or conversation.active_leaf is not None
    conversation_id = conversation.conversation_id
    recorded_in = request.recorded
    count = len(recorded_in) + 1
    for attempt in range(64):
        try:
            if branched:
                slots = slots_store.reserve_on_path(
                    conversation, count + 1, now_iso(), new_turn=True, start_branch=branch is not None
                )
            else:
                slots = slots_store.reserve_slots(conversation, count + 1, now_iso(), new_turn=True)
        except store.SequenceConflict:
            return None
        except StoreUnavailable:
            # A transaction on the conversation item at the same moment (TransactionConflict): retry.
            if not wait_to_retry(attempt, deadline):
                raise
            continue
        recorded = _recorded_messages(owner, conversation_id, slots.first_seq, recorded_in, names, model)
        user = _user_message(
            owner, conversation_id, slots.first_seq + len(recorded), request, model, stored_parts
        )
        recorder = TurnRecorder.new(slots.turn)
        recorder.turn_start(
            user.content or "",
            tokens=user.tokens,
            message_id=user.message_id,
            branch=branch.meta if branch is not None else None,
        )
        _record_client_steps(recorder, recorded_in, recorded)
        unreconciled = unreconciled_replies(recent.read)
        links: list[tuple[int, int]] = []
        if branched:
            parent = branch.parent if branch is not None else slots.previous_leaf or 0
            *recorded, user = tree.link_parents([*recorded, user], parent)
            links = [(parent, slots.first_seq)]
        try:
            slots_store.put_reserved(
                conversation,
                [*recorded, user],
                recorder.take_events(),
                deadline,
                reconcile=unreconciled,
                open_turn=_turn_state_to_catch_up(unreconciled),
                links=links,
                drop_open_turn=branch is not None,
            )
        except store.SequenceConflict:
            if not wait_to_retry(attempt, deadline):
                break
            continue
        logger.info("slots reserved", conversation_id=conversation_id, seq=slots.first_seq, turn=slots.turn)
        return Turn(
            conversation,
            user,
            recorded,
            [*recent.messages, *recorded],
            model,
            recorder,
            first_seq=slots.first_seq,
            reply_seq=slots.first_seq + count,
            summary=recent.summary,
            generation=settled,
            reply_parent=slots.first_seq + count - 1 if branched else None,
            read=recent.read,
            covered_from=recent.covered_from,
        )
    raise ConversationBusy("too many concurrent posts to this conversation; retry the request")
