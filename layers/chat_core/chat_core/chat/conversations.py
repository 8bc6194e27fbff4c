"""The service's operations (seed 003): create, post a message, list, detail, soft delete, build a window."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from chat_core.chat.paging import decode_cursor, encode_cursor
from chat_core.engine import turnlog
from chat_core.engine.turnlog import LogEvent, Tokens, TurnRecorder, TurnState
from chat_core.errors import (
    ConversationBusy,
    ConversationNotFound,
    IdempotencyKeyReused,
    InvalidInput,
    MessageNotFound,
    MessageTooLong,
    PinRefused,
    ProviderFailed,
    ReplyNotStored,
    RequestInProgress,
    StoreUnavailable,
    ToolResultsPending,
)
from chat_core.observability import MetricUnit, logger, metrics, tracer
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as store
from chat_core.store.conversations import Conversation, Message, usage_map
from chat_core.store.events import EVENT_SK_PREFIX, turn_prefix
from chat_core.store.keys import (
    MESSAGE_SK_PREFIX,
    META_SK,
    conversation_pk,
    is_valid_id,
    new_id,
    owner_pk,
)
from chat_core.store.summaries import Summary

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    from chat_core.engine.window import WindowPolicy, WindowResult
    from chat_core.http.schemas import BuildWindowIn, CreateConversationIn, PostMessageIn, WindowPolicyIn
    from chat_core.llm.provider import ChatProvider, Completion

# Cold start (issue 8): the model provider (httpx), the window engine and token counting, summaries,
# resilience, tool messages, the request models and Powertools idempotency are imported by the functions
# that use them, so the handlers that only read (list, detail, events, delete, pin) never load them; a
# post loads them on first use.

TITLE_FROM_MESSAGE_CHARS = 80
LIST_SCOPE = "conversations"
MESSAGES_SCOPE = "messages"
EVENTS_SCOPE = "events"
#: Pinned messages per conversation, and the text their copies on the conversation item may hold.
MAX_PINNED = 20
MAX_PINNED_BYTES = 64 * 1024
# Seconds left after the model call to store its answer (TransactWrite #2) before Lambda's deadline.
STORE_MARGIN_S = 3.0
# The least a model call is given: a post waits for its turn only while this still fits.
MIN_MODEL_SECONDS = 5.0


@dataclass(frozen=True)
class PostOutcome:
    """What POST /messages answers: 201 with the turn, or 502 with the same shape when the model failed."""

    status: int
    body: dict[str, Any]
    seq: int = 0  # the first message the post stored (an idempotent replay re-reads seq..last_seq)
    user_seq: int | None = None
    reply_seq: int | None = None
    last_seq: int = 0


# -- small pure pieces ------------------------------------------------------------------------------------


def now_iso() -> str:
    """ISO 8601 UTC with microseconds, fixed width so string order is time order."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_content(content: str, settings: Settings | None = None) -> str:
    """API-3: 1..max_content_chars characters, checked before any I/O."""
    limit = (settings or get_settings()).max_content_chars
    if len(content) > limit:
        raise MessageTooLong(
            f"content has {len(content)} characters; the limit is {limit}", length=len(content), limit=limit
        )
    if not content:
        raise InvalidInput("content must not be empty", field="content")
    return content


def _check_id(conversation_id: str) -> str:
    # A malformed id can name no conversation: same answer as an unknown one, before any I/O.
    if not is_valid_id(conversation_id):
        raise ConversationNotFound(f"conversation {conversation_id!r} not found")
    return conversation_id


def _not_found(conversation_id: str) -> ConversationNotFound:
    return ConversationNotFound(f"conversation {conversation_id!r} not found")


def _count(message: Mapping[str, Any], model: str) -> int:
    """TOK-5: the exact chat-format count of one message, computed once at write time."""
    from chat_core.engine import tokens

    return int(tokens.count_message_tokens(message, method="exact", model=model))


def _policy_dict(policy: WindowPolicyIn | None) -> dict[str, Any] | None:
    return policy.model_dump(exclude_none=True) if policy is not None else None


def window_policy(stored: Mapping[str, Any] | None, model: str) -> WindowPolicy:
    """The conversation's window policy: WIN-2 by default, else its own within the model's context."""
    from chat_core.engine.window import SEED_003_POLICY, WindowPolicy

    if not stored:
        return SEED_003_POLICY
    method = stored.get("method", "exact")
    return WindowPolicy.for_model(
        model,
        name="conversation",
        max_messages=stored.get("max_messages"),
        max_chars=stored.get("max_chars"),
        max_tokens=stored.get("max_tokens"),
        method=method,
        honor_pinned=False,
        # Stored counts are exact chat-format counts (TOK-5); reuse them only when counting exactly.
        reuse_stored_tokens=method == "exact",
    )


def _history_reach(stored: Mapping[str, Any] | None) -> int:
    """How many newest messages the window can ever use, i.e. the Query's Limit minus the meta item."""
    from chat_core.engine.window import SEED_003_POLICY
    from chat_core.http.schemas import MAX_POLICY_MESSAGES

    if not stored:
        return int(SEED_003_POLICY.max_messages or 10)
    return int(stored.get("max_messages") or MAX_POLICY_MESSAGES)


# -- views --------------------------------------------------------------------------------------------------


def _usage(prompt: float, completion: float, total: float) -> dict[str, int]:
    return {"prompt_tokens": int(prompt), "completion_tokens": int(completion), "total_tokens": int(total)}


def message_view(message: Message) -> dict[str, Any]:
    """API-1 message object: assistant messages add model and usage, error ones add error.

    Only when they apply: `tool_calls` (content may then be null), `tool_call_id` and `name` on tool
    results, `pinned: true`.
    """
    view: dict[str, Any] = {
        "message_id": message.message_id,
        "conversation_id": message.conversation_id,
        "role": message.role,
        "content": message.content or "",
        "status": message.status,
        "created_at": message.created_at,
    }
    if message.tool_calls:
        view["content"] = message.content or None
        view["tool_calls"] = list(message.tool_calls)
    if message.role == "tool":
        view["tool_call_id"] = message.tool_call_id
        if message.name:
            view["name"] = message.name
    if message.pinned:
        view["pinned"] = True
    if message.role == "assistant":
        usage = message.usage
        view["model"] = message.model
        view["usage"] = (
            _usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
            if usage
            else _usage(0, 0, 0)
        )
        if message.status == "error":
            error = message.error if isinstance(message.error, dict) else {}
            view["error"] = {
                "message": error.get("message", ""),
                "provider_response": error.get("provider_response"),
            }
    return view


def conversation_view(conversation: Conversation) -> dict[str, Any]:
    """The conversation object: settings, counts, usage as reported and the local count beside it (TOK-6)."""
    local_prompt, local_completion = (
        int(conversation.local_prompt_tokens),
        int(conversation.local_completion_tokens),
    )
    _, pending = _pending_calls(conversation)
    return {
        "conversation_id": conversation.conversation_id,
        "title": conversation.title,
        "system_prompt": conversation.system_prompt,
        "model": conversation.model,
        "window_policy": conversation.window_policy,
        "message_count": int(conversation.message_count),
        "usage": _usage(
            conversation.prompt_tokens, conversation.completion_tokens, conversation.total_tokens
        ),
        "local_usage": _usage(local_prompt, local_completion, local_prompt + local_completion),
        "turn_count": int(conversation.turn_count or 0),
        "pinned_message_ids": [e["message_id"] for e in conversation.pinned or []],
        # Tool calls of the model's last answer still waiting for results (post them to continue).
        "pending_tool_calls": pending,
        "created_at": conversation.created_at,
        "updated_at": conversation.updated_at,
    }


# -- create --------------------------------------------------------------------------------


def create_conversation(owner: str, request: CreateConversationIn) -> dict[str, Any]:
    """POST /conversations: a new, empty conversation with its settings (201)."""
    settings = get_settings()
    model = request.model or settings.llm_model
    system_prompt = request.system_prompt or None
    system_tokens = _count({"role": "system", "content": system_prompt}, model) if system_prompt else 0
    now = now_iso()
    conversation = Conversation.new(
        owner,
        new_id(),
        title=request.title,
        system_prompt=system_prompt,
        system_tokens=system_tokens,
        model=model,
        window_policy=_policy_dict(request.window_policy),
        created_at=now,
        updated_at=now,
    )
    store.create_conversation(conversation, events=[_session_start(conversation, settings)])
    metrics.add_metric(name="ConversationsCreated", unit=MetricUnit.Count, value=1)
    logger.info("conversation created", conversation_id=conversation.conversation_id, model=model)
    return conversation_view(conversation)


# -- post ---------------------------------------------------------------------------------------------------


def post_message(
    owner: str,
    request: PostMessageIn,
    *,
    idempotency_key: str | None = None,
    context: Any = None,
) -> PostOutcome:
    """POST /messages (seed 003, SPEC §9 "Posting, in order"; seed 002 turn log; agent tool messages).

    Validates before any I/O, then: one Query, TransactWrite #1 (recorded tool messages, the user message,
    reply slot reserved, turn_start and step events), the model call, TransactWrite #2 (assistant message
    ok or error, its events, turn_end unless the turn waits for tool results, totals). With an
    Idempotency-Key the first outcome (201 or 502) is stored and replayed; the same key with another body
    is refused.
    """
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyPersistenceLayerError,
        IdempotencyValidationError,
    )

    from chat_core.engine import tool_pairing

    settings = get_settings()
    if request.content is not None:
        check_content(request.content, settings)
    recorded = request.recorded()
    tool_pairing.check_sizes(recorded)
    if request.conversation_id is not None:
        _check_id(request.conversation_id)
    else:
        # A new conversation has no pending tool calls: everything can be checked before any I/O.
        if request.content is None:
            raise InvalidInput("content is required to start a conversation", field="content")
        tool_pairing.pair_results(recorded, [])
    if idempotency_key is None:
        try:
            return _post(owner, request, context, settings)
        except ReplyNotStored as exc:
            unsaved: PostOutcome = exc.outcome
            return unsaved
    payload = {"owner": owner, "key": idempotency_key, "body": request.model_dump(mode="json")}
    config, run = _idempotent_post(settings)
    if context is not None:
        config.register_lambda_context(context)
    sink: list[PostOutcome] = []
    try:
        record = run(request=payload, context=context, settings=settings, sink=sink)
    except ReplyNotStored as exc:
        # Raised inside the idempotent function, so its record is removed: a retry runs the turn again.
        unsaved_reply: PostOutcome = exc.outcome
        return unsaved_reply
    except IdempotencyValidationError as exc:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was already used with a different request body; use a new key"
        ) from exc
    except IdempotencyAlreadyInProgressError as exc:
        raise RequestInProgress(
            "a request with this Idempotency-Key is still in progress; retry when it has finished"
        ) from exc
    except IdempotencyPersistenceLayerError as exc:
        raise StoreUnavailable("the idempotency record could not be read or written; retry") from exc
    if sink:
        return sink[0]
    return _replay(owner, record)


def _post_body(
    conversation_id: str, recorded: Sequence[Message], user: Message | None, assistant: Message | None
) -> dict[str, Any]:
    """`{conversation_id, messages?, user_message, assistant_message}`: `messages` (the tool messages the
    post recorded) only when there were some; `user_message` is null on a post of tool results and
    `assistant_message` null when the turn ended at MAX_TURN_STEPS without asking the model again."""
    body: dict[str, Any] = {"conversation_id": conversation_id}
    if recorded:
        body["messages"] = [message_view(m) for m in recorded]
    body["user_message"] = message_view(user) if user is not None else None
    body["assistant_message"] = message_view(assistant) if assistant is not None else None
    return body


def _replay(owner: str, record: Mapping[str, Any]) -> PostOutcome:
    """The first outcome of an idempotent post, rebuilt from the stored messages (they never change)."""
    conversation_id, first = str(record["conversation_id"]), int(record["seq"])
    # Records written before tool messages existed hold only `seq` (the user message; reply after it).
    user_seq = record.get("user_seq", first)
    reply_seq = record.get("reply_seq", first + 1)
    last = int(record.get("last_seq", first + 1))
    found = {int(m.seq): m for m in store.read_messages(owner, conversation_id, first, last)}
    recorded = [found[s] for s in sorted(found) if s not in (user_seq, reply_seq)]
    user = found.get(int(user_seq)) if user_seq is not None else None
    assistant = found.get(int(reply_seq)) if reply_seq is not None else None
    logger.info("idempotent replay", conversation_id=conversation_id, seq=first)
    body = _post_body(conversation_id, recorded, user, assistant)
    return PostOutcome(
        status=int(record["status"]),
        body=body,
        seq=first,
        user_seq=int(user_seq) if user_seq is not None else None,
        reply_seq=int(reply_seq) if reply_seq is not None else None,
        last_seq=last,
    )


_idempotent: tuple[Settings, IdempotencyConfig, Callable[..., dict[str, Any]]] | None = None


def _idempotent_post(settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """The idempotent post of this process's settings (built once; rebuilt when settings change)."""
    global _idempotent
    if _idempotent is None or _idempotent[0] != settings:
        _idempotent = (settings, *_build_idempotent_post(settings))
    return _idempotent[1], _idempotent[2]


def _build_idempotent_post(settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """The post logic wrapped in Powertools Idempotency, on the same table (API-6).

    The record keeps only the status, the conversation and the sequence numbers of the post's messages:
    a replay re-reads them, so the record stays small whatever the reply or the provider's error weighed.
    """
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

    from chat_core.http.schemas import PostMessageIn
    from chat_core.store import idempotency as idempotency_store

    config = IdempotencyConfig(
        # The caller's identity is part of the key: one user's key never replays another user's turn.
        event_key_jmespath="[owner, key]",
        payload_validation_jmespath="body",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=settings.idempotency_ttl_seconds,
    )

    def run(
        *, request: dict[str, Any], context: Any, settings: Settings, sink: list[PostOutcome]
    ) -> dict[str, Any]:
        outcome = _post(request["owner"], PostMessageIn.model_validate(request["body"]), context, settings)
        sink.append(outcome)
        return {
            "status": outcome.status,
            "conversation_id": outcome.body["conversation_id"],
            "seq": outcome.seq,
            "user_seq": outcome.user_seq,
            "reply_seq": outcome.reply_seq,
            "last_seq": outcome.last_seq,
        }

    wrapped: Callable[..., dict[str, Any]] = idempotent_function(
        run,
        data_keyword_argument="request",
        persistence_store=idempotency_store.persistence_layer(settings),
        config=config,
        key_prefix="post_message",
    )
    return config, wrapped


@tracer.capture_method(capture_response=False)
def _post(owner: str, request: PostMessageIn, context: Any, settings: Settings) -> PostOutcome:
    from chat_core.chat import recording

    if request.conversation_id is None:
        turn = _start_conversation(owner, request, settings)
    else:
        turn = _append_to_conversation(owner, request, settings, context)
    conversation_id = turn.conversation.conversation_id
    if turn.reply_seq is None:
        # MAX_TURN_STEPS reached: the tool results are stored and the turn ended; the model is not asked.
        logger.info("turn ended at max steps", conversation_id=conversation_id, turn=turn.recorder.turn)
        body = _post_body(conversation_id, turn.recorded, turn.user, None)
        return turn.outcome(201, body)
    window = _window(
        turn.conversation,
        turn.history,
        request.content,
        turn.user,
        turn.model,
        summary=turn.summary,
        tail_from_seq=turn.tail_from_seq,
    )
    # A reply too large for its item is stored as an error turn (502) instead (issue 7).
    completion, failure = recording.cap_reply(*_ask_model(window.result, turn.model, context), settings)
    assistant, reported, local = _reply_message(owner, turn, window.prompt_tokens, completion, failure)
    recording.fit_item(assistant)
    # The turn as TransactWrite #1 left it: a failed TransactWrite #2 is closed from there.
    written = turn.recorder.state.to_json()
    open_turn = _record_answer(turn, assistant, completion, failure, reported, local)
    try:
        stored = store.record_reply(
            turn.conversation,
            assistant,
            assistant.created_at,
            reported=reported,
            local=local,
            events=turn.recorder.take_events(),
            open_turn=open_turn,
            deadline=_store_deadline(context),
        )
    except (StoreUnavailable, store.ReplySlotTaken) as exc:
        # The user message is stored already: end the turn as an error rather than leave it open, and
        # hand the caller the reply the model gave, saying it was not saved.
        recording.close_failed_turn(
            turn.conversation, assistant, exc, turn=written, turn_on_item=turn.resumed
        )
        body = _post_body(conversation_id, turn.recorded, turn.user, assistant)
        body["assistant_message"]["stored"] = False
        body["error"] = {
            "code": ReplyNotStored.code,
            "message": "the model answered but its reply could not be saved; it is included here",
        }
        raise ReplyNotStored(turn.outcome(ReplyNotStored.status, body)) from exc
    if stored == store.STORED_ALONE:
        metrics.add_metric(name="RepliesStoredAlone", unit=MetricUnit.Count, value=1)
        logger.warning("reply stored on its own; totals follow with the next post", seq=int(assistant.seq))
    metrics.add_metric(name="MessagesPosted", unit=MetricUnit.Count, value=1)
    logger.info(
        "turn stored",
        conversation_id=conversation_id,
        turn=turn.recorder.turn,
        seq=int(assistant.seq),
        status=assistant.status,
        tool_calls=len(assistant.tool_calls or []),
        kept_history=window.result.stats.kept_history,
        prompt_tokens=reported[0],
        local_prompt_tokens=local[0],
    )
    body = _post_body(conversation_id, turn.recorded, turn.user, assistant)
    return turn.outcome(502 if failure is not None else 201, body)


@dataclass(frozen=True)
class _Turn:
    """A post after TransactWrite #1: its messages are durable, the reply slot reserved (`reply_seq`).

    `history` is what the window chooses from (stored history read by the Query, then the messages this
    post recorded); on a post of tool results `tail_from_seq` is where the calls they answer start.
    `reply_seq` is None when the turn ended at MAX_TURN_STEPS and no model call follows.
    """

    conversation: Conversation
    user: Message | None
    recorded: list[Message]
    history: list[Message]
    model: str
    recorder: TurnRecorder
    first_seq: int
    reply_seq: int | None
    summary: Summary | None = None  # seed 001: what the window carries for the messages before history
    resumed: bool = False
    tail_from_seq: int | None = None

    def outcome(self, status: int, body: dict[str, Any]) -> PostOutcome:
        stored = len(self.recorded) + (1 if self.user is not None else 0)
        last = self.reply_seq if self.reply_seq is not None else self.first_seq + stored - 1
        return PostOutcome(
            status=status,
            body=body,
            seq=self.first_seq,
            user_seq=int(self.user.seq) if self.user is not None else None,
            reply_seq=self.reply_seq,
            last_seq=last,
        )


def _user_message(owner: str, conversation_id: str, seq: int, content: str, model: str) -> Message:
    return Message.new(
        owner,
        conversation_id,
        seq,
        message_id=store.message_id_for(seq),
        role="user",
        content=content,
        status="ok",
        created_at=now_iso(),
        tokens=_count({"role": "user", "content": content}, model),
    )


def _recorded_messages(
    owner: str,
    conversation_id: str,
    first_seq: int,
    recorded: Sequence[Mapping[str, Any]],
    names: Sequence[str | None],
    model: str,
) -> list[Message]:
    """Message items for the tool messages a post records, from `first_seq` on (TOK-4 counts at write)."""
    from chat_core.engine.window import OPENAI_KEYS

    items = []
    for offset, (message, name) in enumerate(zip(recorded, names, strict=True)):
        seq = first_seq + offset
        counted = {key: message[key] for key in OPENAI_KEYS if message.get(key) is not None}
        counted.setdefault("content", None)
        items.append(
            Message.new(
                owner,
                conversation_id,
                seq,
                message_id=store.message_id_for(seq),
                role=message["role"],
                content=message.get("content"),
                status="ok",
                created_at=now_iso(),
                tokens=_count(counted, model),
                tool_calls=message.get("tool_calls"),
                tool_call_id=message.get("tool_call_id"),
                name=name,
            )
        )
    return items


def _record_client_steps(
    recorder: TurnRecorder, recorded: Sequence[Mapping[str, Any]], items: Sequence[Message]
) -> None:
    for message, item in zip(recorded, items, strict=True):
        recorder.client_message(message, message_id=item.message_id, tokens=int(item.tokens))


def _session_start(conversation: Conversation, settings: Settings) -> LogEvent:
    from chat_core.engine import tokens

    model = conversation.model
    return turnlog.session_start(
        model=model,
        encoding=tokens.encoding_for_model(model),
        config={
            "title": conversation.title,
            "systemPrompt": bool(conversation.system_prompt),
            "windowPolicy": conversation.window_policy,
            "maxTurnSteps": settings.max_turn_steps,
        },
    )


def _start_conversation(owner: str, request: PostMessageIn, settings: Settings) -> _Turn:
    """First message without an id: conversation, messages and events in one TransactWrite (API-1)."""
    from chat_core.engine import tool_pairing

    assert request.content is not None  # checked by post_message before any I/O
    model = request.model or settings.llm_model
    conversation_id = new_id()
    recorded_in = request.recorded()
    names = tool_pairing.pair_results(recorded_in, [])
    recorded = _recorded_messages(owner, conversation_id, 1, recorded_in, names, model)
    user = _user_message(owner, conversation_id, 1 + len(recorded), request.content, model)
    title = " ".join(request.content.split())[:TITLE_FROM_MESSAGE_CHARS] or None
    conversation = Conversation.new(
        owner,
        conversation_id,
        title=title,
        model=model,
        created_at=user.created_at,
        updated_at=user.created_at,
        turn_count=1,
    )
    started = _session_start(conversation, settings)
    recorder = TurnRecorder.new(1)
    recorder.turn_start(request.content, tokens=int(user.tokens), message_id=user.message_id)
    _record_client_steps(recorder, recorded_in, recorded)
    events = [started, *recorder.take_events()]
    store.create_with_first_message(conversation, user, recorded=recorded, events=events)
    logger.info("conversation created", conversation_id=conversation_id, model=model)
    return _Turn(
        conversation,
        user,
        recorded,
        list(recorded),
        model,
        recorder,
        first_seq=1,
        reply_seq=int(user.seq) + 1,
    )


def _read_history(owner: str, conversation_id: str, override: Mapping[str, Any] | None) -> store.Recent:
    """API-4: one Query for the conversation and the newest messages its window can use.

    Only a conversation whose own policy reaches past the default 10 messages, and that has that many,
    costs a second Query (still independent of the conversation's length).
    """
    reach = _history_reach(override) if override else _history_reach(None)
    recent = store.read_recent(owner, conversation_id, reach)
    conversation = recent.conversation
    if conversation is None or conversation.is_deleted:
        raise _not_found(conversation_id)
    wanted = reach if override else _history_reach(conversation.window_policy)
    if wanted > reach and len(recent.messages) >= reach:
        recent = store.read_recent(owner, conversation_id, wanted)
        if recent.conversation is None or recent.conversation.is_deleted:
            raise _not_found(conversation_id)
    return recent


def _pending_calls(
    conversation: Conversation, messages: Sequence[Message] = ()
) -> tuple[TurnState | None, list[dict[str, str]]]:
    """The open turn and its pending tool calls: the conversation item's, unless a newer reply stored
    on its own (its totals still pending) says what the turn's state became."""
    held: Any = conversation.open_turn
    for message in reversed(messages):
        pending = message.pending_totals
        if isinstance(pending, dict) and "open_turn" in pending:
            held = pending["open_turn"]
            break
    state = TurnState.from_json(held)
    return state, (list(state.pending) if state is not None else [])


def _unreconciled(messages: Sequence[Message]) -> list[Message]:
    """Replies stored on their own whose totals the conversation item still lacks."""
    return [m for m in messages if m.pending_totals is not None]


def _turn_state_to_catch_up(unreconciled: Sequence[Message]) -> store.OpenTurn:
    """The turn state the newest reply stored on its own decided, for the conversation item to take
    now (KEEP when none of them changed it)."""
    pending = unreconciled[-1].pending_totals if unreconciled else None
    if isinstance(pending, dict) and "open_turn" in pending:
        held: store.OpenTurn = pending["open_turn"]
        return held
    return store.KEEP


def _wait_deadline(context: Any, settings: Settings) -> float:
    """When a post stops waiting for its turn at the conversation (monotonic seconds).

    At most TURN_WAIT_SECONDS, and never so long that the model call and the reply's write no longer
    fit in what is left of the invocation: a post that cannot get its turn answers 409 quickly.
    """
    wait = settings.turn_wait_seconds
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        wait = min(wait, max(1.0, float(remaining()) / 1000.0 - STORE_MARGIN_S - MIN_MODEL_SECONDS))
    return time.monotonic() + wait


def _append_to_conversation(
    owner: str, request: PostMessageIn, settings: Settings, context: Any = None
) -> _Turn:
    """The Query, then TransactWrite #1; on contention, the post takes its own slots instead.

    A post with `content` opens the next turn. While the model's last answer waits for tool results, a
    post must carry exactly those results (no content): they continue the open turn, and the model is
    asked again unless the turn already used MAX_TURN_STEPS model calls.

    The first attempt expects `next_seq` as read (one Query and one TransactWrite, the common case).
    A post of a new turn that loses that race reserves its slots with one atomic update and writes into
    them, so concurrent posters never queue behind one another; a post of tool results re-reads and
    retries (it must see the turn's state). Either way the wait is bounded by `_wait_deadline`.
    """
    from chat_core.chat import recording
    from chat_core.engine import tool_pairing

    conversation_id = str(request.conversation_id)
    recorded_in = request.recorded()
    deadline = _wait_deadline(context, settings)
    for attempt in range(max(1, settings.post_attempts)):
        recent = _read_history(owner, conversation_id, None)
        conversation = recent.conversation
        assert conversation is not None
        if attempt == 0:
            # A reply slot a crashed post left empty is closed as an error turn (rare; no read added).
            recording.repair_abandoned(conversation, recent.messages, settings)
        state, pending = _pending_calls(conversation, recent.messages)
        if pending and request.content is not None:
            ids = ", ".join(call["id"] for call in pending)
            raise ToolResultsPending(
                f"the model asked for tool calls {ids}; post their results first: "
                f'{{"conversation_id", "messages": [{{"role": "tool", "tool_call_id", "content"}}, ...]}} '
                f"without content"
            )
        if not pending and request.content is None:
            raise InvalidInput("content is required: no tool calls are waiting for results", field="content")
        names = tool_pairing.pair_results(recorded_in, pending)
        model = request.model or conversation.model
        if attempt > 0 and not pending:
            return _reserve_turn(owner, request, recent, names, model, deadline)
        seq = int(conversation.next_seq)
        recorded = _recorded_messages(owner, conversation_id, seq, recorded_in, names, model)
        user = None
        if request.content is not None:
            user = _user_message(owner, conversation_id, seq + len(recorded), request.content, model)
        turn_number: int | None = None
        if state is not None and pending:
            recorder = TurnRecorder.resume(state)
        else:
            turn_number = int(conversation.turn_count or 0) + 1
            recorder = TurnRecorder.new(turn_number)
            assert user is not None
            recorder.turn_start(user.content or "", tokens=int(user.tokens), message_id=user.message_id)
        _record_client_steps(recorder, recorded_in, recorded)
        at_limit = bool(pending) and recorder.state.model_calls >= settings.max_turn_steps
        unreconciled = _unreconciled(recent.messages)
        open_turn = _turn_state_to_catch_up(unreconciled)
        if at_limit:
            recorder.end("max_steps", conversation_tokens=_conversation_tokens(conversation))
            open_turn = None
        elif pending:
            open_turn = (
                recorder.state.to_json()
            )  # results in: a concurrent post of the same ones is an orphan
        messages = [*recorded, *([user] if user is not None else [])]
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
            )
        except store.SequenceConflict:
            logger.info("sequence taken, re-reading", conversation_id=conversation_id, attempt=attempt + 1)
            pause = recording.contention_backoff(attempt)
            if time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
            continue
        return _Turn(
            conversation,
            user,
            recorded,
            [*recent.messages, *recorded],
            model,
            recorder,
            first_seq=seq,
            reply_seq=None if at_limit else seq + len(messages),
            summary=recent.summary,
            resumed=bool(pending),
            tail_from_seq=state.call_seq if state is not None and pending else None,
        )
    raise ConversationBusy("too many concurrent posts to this conversation; retry the request")


def _reserve_turn(
    owner: str,
    request: PostMessageIn,
    recent: store.Recent,
    names: Sequence[str | None],
    model: str,
    deadline: float,
) -> _Turn:
    """A new turn on a contended conversation: its slots taken by one atomic update, then written.

    Only a store that applies updates non-atomically can hand two posts the same slots; the loser's
    write fails its conditions and it reserves again, until the deadline.
    """
    from chat_core.chat import recording

    conversation = recent.conversation
    assert conversation is not None
    assert request.content is not None
    conversation_id = conversation.conversation_id
    recorded_in = request.recorded()
    count = len(recorded_in) + 1
    for attempt in range(64):
        try:
            slots = store.reserve_slots(conversation, count + 1, now_iso(), new_turn=True)
        except StoreUnavailable:
            # A transaction on the conversation item at the same moment (TransactionConflict): retry.
            pause = recording.contention_backoff(attempt)
            if time.monotonic() + pause >= deadline:
                raise
            time.sleep(pause)
            continue
        recorded = _recorded_messages(owner, conversation_id, slots.first_seq, recorded_in, names, model)
        user = _user_message(owner, conversation_id, slots.first_seq + len(recorded), request.content, model)
        recorder = TurnRecorder.new(slots.turn)
        recorder.turn_start(user.content or "", tokens=int(user.tokens), message_id=user.message_id)
        _record_client_steps(recorder, recorded_in, recorded)
        unreconciled = _unreconciled(recent.messages)
        try:
            store.put_reserved(
                conversation,
                [*recorded, user],
                recorder.take_events(),
                deadline,
                reconcile=unreconciled,
                open_turn=_turn_state_to_catch_up(unreconciled),
            )
        except store.SequenceConflict:
            pause = recording.contention_backoff(attempt)
            if time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
            continue
        logger.info("slots reserved", conversation_id=conversation_id, seq=slots.first_seq, turn=slots.turn)
        return _Turn(
            conversation,
            user,
            recorded,
            [*recent.messages, *recorded],
            model,
            recorder,
            first_seq=slots.first_seq,
            reply_seq=slots.first_seq + count,
            summary=recent.summary,
        )
    raise ConversationBusy("too many concurrent posts to this conversation; retry the request")


def _window_message(message: Message) -> dict[str, Any]:
    """A stored message as the window engine takes it: OpenAI keys plus bookkeeping (tokens, pinned...)."""
    window: dict[str, Any] = {
        "role": message.role,
        "content": message.content or "",
        "tokens": int(message.tokens),
        "message_id": message.message_id,
        "seq": int(message.seq),
    }
    if message.tool_calls:
        window["tool_calls"] = list(message.tool_calls)
        window["content"] = message.content or None
    if message.tool_call_id:
        window["tool_call_id"] = message.tool_call_id
    if message.name and message.role != "tool":
        window["name"] = message.name
    if message.pinned:
        window["pinned"] = True
    return window


def _pinned_messages(
    conversation: Conversation, history: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """WIN-3: the conversation's pinned messages older than the history the Query returned (copies kept on
    the conversation item, oldest first); pinned messages inside that history are flagged there instead."""
    in_history = {m["message_id"] for m in history}
    pinned = []
    for entry in sorted(conversation.pinned or [], key=lambda e: int(e.get("seq", 0))):
        if entry.get("message_id") in in_history:
            continue
        message = {
            "role": entry["role"],
            "content": entry.get("content") or "",
            "tokens": int(entry.get("tokens") or 0),
            "message_id": entry["message_id"],
            "seq": int(entry.get("seq", 0)),
            "pinned": True,
        }
        if entry.get("name"):
            message["name"] = entry["name"]
        pinned.append(message)
    return pinned


def _room_for_tail(policy: WindowPolicy, tail: Sequence[Mapping[str, Any]]) -> WindowPolicy:
    from chat_core.engine.window import message_text

    """The policy for the history before `tail`, which is always sent (like the current message is)."""
    changes: dict[str, Any] = {}
    if policy.max_messages is not None:
        changes["max_messages"] = max(0, policy.max_messages - len(tail))
    if policy.max_chars is not None:
        changes["max_chars"] = max(0, policy.max_chars - sum(len(message_text(m)) for m in tail))
    budget = policy.token_budget
    if budget is not None:
        count = policy.token_counter()
        changes["max_tokens"] = max(0, budget - sum(count(m) for m in tail))
    return policy.with_changes(**changes) if changes else policy


@dataclass(frozen=True)
class _Window:
    """The window to send and its local prompt count: the stored counts of what it holds (TOK-5)."""

    result: WindowResult
    prompt_tokens: int


def _window(
    conversation: Conversation,
    history: Sequence[Message],
    content: str | None,
    user: Message | None,
    model: str,
    policy_override: Mapping[str, Any] | None = None,
    *,
    summary: Summary | None = None,
    tail_from_seq: int | None = None,
) -> _Window:
    """The window sent with `content` (failed replies are left out of the history it chooses from).

    With a summary (seed 001) the window carries it after the system prompt and chooses only from the
    messages newer than the range it covers. Pinned messages are kept before other history (WIN-3). On
    a post of tool results (`tail_from_seq`), the tool calls and their results are sent whole in place of
    a current message, and the history before them fills what room is left.
    """
    from chat_core.chat import summaries
    from chat_core.engine import tokens
    from chat_core.engine.window import WindowResult, select_window, to_openai

    policy = window_policy(policy_override or conversation.window_policy, model)
    system = None
    system_tokens = 0
    if conversation.system_prompt:
        system_tokens = int(conversation.system_tokens)
        system = {"role": "system", "content": conversation.system_prompt, "tokens": system_tokens}
    usable = [_window_message(m) for m in summaries.after_summary(history, summary) if m.status == "ok"]
    pinned = _pinned_messages(conversation, usable)
    if pinned or any(m.get("pinned") for m in usable):
        policy = policy.with_changes(honor_pinned=True)
    carried = summaries.summary_message(summary) if summary is not None else None
    current: dict[str, Any] | None = None
    tail: list[dict[str, Any]] = []
    if tail_from_seq is None:
        current = {"role": "user", "content": content or ""}
        current["tokens"] = int(user.tokens) if user is not None else _count(current, model)
        if user is not None:
            current["message_id"] = user.message_id
    else:
        cut = next((i for i, m in enumerate(usable) if m["seq"] >= tail_from_seq), len(usable))
        usable, tail = usable[:cut], usable[cut:]
        policy = _room_for_tail(policy, tail)
    result = select_window(
        history=usable, policy=policy, system=system, current=current, pinned=pinned, summary=carried
    )
    if tail:
        result = WindowResult(result.messages + [to_openai(m) for m in tail], result.stats)
    dropped = {d.ref for d in result.stats.dropped}
    sent = [m for m in (*pinned, *usable) if m["message_id"] not in dropped]
    prompt = system_tokens + sum(int(m["tokens"]) for m in (*sent, *tail))
    if current is not None:
        prompt += int(current["tokens"])
    if summary is not None and summaries.summary_included(result):
        prompt += int(summary.tokens)
    return _Window(result, prompt + int(tokens.REPLY_PRIMING_TOKENS))


def get_provider() -> ChatProvider:
    """The process's model provider (`chat_core.llm.provider`, imported on the first model call)."""
    from chat_core.llm.provider import get_provider as provider

    return provider()


def _store_deadline(context: Any) -> float:
    """Until when storing the reply may retry a contended conversation before storing it on its own."""
    budget = STORE_MARGIN_S
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        budget = min(budget, max(0.0, float(remaining()) / 1000.0 - 1.0))
    return time.monotonic() + budget


def _ask_model(
    window: WindowResult, model: str, context: Any
) -> tuple[Completion | None, ProviderFailed | None]:
    from chat_core.llm.provider import time_budget_from_context

    budget = time_budget_from_context(context, safety_margin_s=STORE_MARGIN_S)
    started = time.monotonic()
    try:
        completion = get_provider().complete(window.messages, model=model, time_budget_s=budget)
    except ProviderFailed as exc:
        elapsed_ms = (time.monotonic() - started) * 1000
        metrics.add_metric(name="ProviderErrors", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="ProviderLatency", unit=MetricUnit.Milliseconds, value=elapsed_ms)
        logger.warning("model call failed", kind=exc.kind, status_code=exc.status_code, error=exc.message)
        return None, exc
    usage = completion.usage
    metrics.add_metric(name="ProviderLatency", unit=MetricUnit.Milliseconds, value=completion.latency_ms)
    metrics.add_metric(name="PromptTokens", unit=MetricUnit.Count, value=usage.prompt_tokens)
    metrics.add_metric(name="CompletionTokens", unit=MetricUnit.Count, value=usage.completion_tokens)
    metrics.add_metric(name="TotalTokens", unit=MetricUnit.Count, value=usage.total_tokens)
    return completion, None


def _reply_message(
    owner: str,
    turn: _Turn,
    local_prompt: int,
    completion: Completion | None,
    failure: ProviderFailed | None,
) -> tuple[Message, tuple[int, int, int], tuple[int, int]]:
    """The assistant message (ok, or error per API-2) with usage as reported and the local count (TOK-6).

    `local_prompt` is the window's local count from the counts stored at write time (TOK-5). A reply
    with tool calls keeps them (content may be null); its count includes names and arguments (TOK-4).
    """
    conversation, model = turn.conversation, turn.model
    assert turn.reply_seq is not None
    reply = Message.new(
        owner,
        conversation.conversation_id,
        turn.reply_seq,
        message_id=store.message_id_for(turn.reply_seq),
        role="assistant",
        created_at=now_iso(),
    )
    if completion is None:
        assert failure is not None
        reply.content = ""
        reply.status = "error"
        reply.model = model
        reply.tokens = 0
        reply.usage = usage_map(0, 0, 0)
        reply.usage_reported = False
        reply.local_usage = usage_map(local_prompt, 0, local_prompt)
        reply.error = {"message": failure.message, "provider_response": failure.provider_response}
        return reply, (0, 0, 0), (local_prompt, 0)
    from chat_core.engine import tokens

    usage = completion.usage
    calls = completion.tool_calls or None
    local_completion = int(tokens.count_tokens(completion.content, model))
    for call in calls or []:
        function = call.get("function") or {}
        local_completion += int(tokens.count_tokens(str(function.get("name") or ""), model))
        local_completion += int(tokens.count_tokens(str(function.get("arguments") or ""), model))
    reply.content = completion.content if completion.content or not calls else None
    reply.status = "ok"
    reply.model = completion.model or model
    counted: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        reply.tool_calls = calls
        counted["tool_calls"] = calls
    reply.tokens = _count(counted, model)
    reply.usage = usage_map(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
    reply.usage_reported = completion.usage_reported
    reply.local_usage = usage_map(local_prompt, local_completion, local_prompt + local_completion)
    reply.latency_ms = round(completion.latency_ms, 1)
    reply.finish_reason = completion.finish_reason
    return (
        reply,
        (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        (local_prompt, local_completion),
    )


def _conversation_tokens(conversation: Conversation, step: Tokens | None = None) -> Tokens:
    """The conversation's totals as read by this post, plus this step (turn_end `conversationTokens`)."""
    totals = Tokens(
        prompt=int(conversation.prompt_tokens),
        completion=int(conversation.completion_tokens),
        total=int(conversation.total_tokens),
        local_prompt=int(conversation.local_prompt_tokens),
        local_completion=int(conversation.local_completion_tokens),
    )
    return totals.add(step) if step is not None else totals


def _record_answer(
    turn: _Turn,
    assistant: Message,
    completion: Completion | None,
    failure: ProviderFailed | None,
    reported: tuple[int, int, int],
    local: tuple[int, int],
) -> store.OpenTurn:
    """The model's step in the turn log, and what the conversation keeps of the turn afterwards:
    its state while tool calls wait for results, nothing once it ended."""
    recorder = turn.recorder
    step = Tokens(
        prompt=reported[0],
        completion=reported[1],
        total=reported[2],
        local_prompt=local[0],
        local_completion=local[1],
    )
    conversation_tokens = _conversation_tokens(turn.conversation, step)
    if completion is None:
        assert failure is not None
        recorder.model_failure(
            message_id=assistant.message_id,
            model=str(assistant.model),
            error_message=failure.message,
            kind=failure.kind,
            status_code=failure.status_code,
            tokens=step,
        )
        recorder.end("error", error_message=failure.message, conversation_tokens=conversation_tokens)
    else:
        recorder.model_answer(
            content=completion.content,
            tool_calls=assistant.tool_calls,
            message_id=assistant.message_id,
            seq=int(assistant.seq),
            model=str(assistant.model),
            tokens=step,
            usage_reported=completion.usage_reported,
            finish_reason=completion.finish_reason,
            latency_ms=completion.latency_ms,
        )
        if not recorder.awaiting_results:
            recorder.end("ok", conversation_tokens=conversation_tokens)
    if recorder.awaiting_results:
        return recorder.state.to_json()
    # A turn resumed from the conversation item is closed there; a turn that began and ended in this
    # post never wrote any state (leaving it alone keeps another turn's pending calls intact).
    return None if turn.resumed else store.KEEP


# -- read, list, delete, window ------------------------------------------------------------


def list_conversations(owner: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
    """GET /conversations: live conversations, `updated_at` newest first, one Query on the sparse index."""
    prefix = conversation_pk(owner, "")

    def mine(key: Mapping[str, str]) -> bool:
        return (
            set(key) == {"pk", "sk", "gsi1pk", "gsi1sk"}
            and key["gsi1pk"] == owner_pk(owner)
            and key["sk"] == META_SK
            and key["pk"].startswith(prefix)
            and is_valid_id(key["pk"][len(prefix) :])
        )

    start = decode_cursor(owner, LIST_SCOPE, cursor, mine) if cursor is not None else None
    page = store.page_conversations(owner, limit, start)
    metrics.add_metric(name="ConversationsListed", unit=MetricUnit.Count, value=1)
    return {
        "items": [conversation_view(c) for c in page.items],
        "next_cursor": encode_cursor(owner, LIST_SCOPE, page.last_key) if page.last_key else None,
    }


def get_conversation(
    owner: str, conversation_id: str, *, limit: int, cursor: str | None = None
) -> dict[str, Any]:
    """GET /conversations/{id}: the conversation and one page of its messages, oldest first."""
    _check_id(conversation_id)
    pk = conversation_pk(owner, conversation_id)
    scope = f"{MESSAGES_SCOPE}:{conversation_id}"

    def mine(key: Mapping[str, str]) -> bool:
        return set(key) == {"pk", "sk"} and key["pk"] == pk and key["sk"].startswith(MESSAGE_SK_PREFIX)

    start = decode_cursor(owner, scope, cursor, mine) if cursor is not None else None
    conversation = store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        raise _not_found(conversation_id)
    page = store.page_messages(owner, conversation_id, limit, start)
    metrics.add_metric(name="ConversationsRead", unit=MetricUnit.Count, value=1)
    view = conversation_view(conversation)
    view["messages"] = [message_view(m) for m in page.items]
    view["next_cursor"] = encode_cursor(owner, scope, page.last_key) if page.last_key else None
    return view


def delete_conversation(owner: str, conversation_id: str) -> None:
    """DELETE /conversations/{id}: soft delete; TTL removes the item after RETENTION_DAYS."""
    _check_id(conversation_id)
    settings = get_settings()
    now = datetime.now(UTC)
    expires = now + timedelta(days=settings.retention_days)
    ended = turnlog.session_end(
        reason="deleted",
        meta={"retentionDays": settings.retention_days, "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ")},
    )
    store.soft_delete(owner, conversation_id, now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), expires, events=[ended])
    logger.info("conversation deleted", conversation_id=conversation_id)
    metrics.add_metric(name="ConversationsDeleted", unit=MetricUnit.Count, value=1)


def build_window(owner: str, conversation_id: str, request: BuildWindowIn) -> dict[str, Any]:
    """POST /conversations/{id}/window: the window a post of `content` would send; no model call, no write."""
    from chat_core.chat import summaries

    check_content(request.content)
    _check_id(conversation_id)
    override = _policy_dict(request.window_policy)
    recent = _read_history(owner, conversation_id, override)
    conversation = recent.conversation
    assert conversation is not None
    model = request.model or conversation.model
    window = _window(
        conversation, recent.messages, request.content, None, model, override, summary=recent.summary
    ).result
    metrics.add_metric(name="WindowsBuilt", unit=MetricUnit.Count, value=1)
    stats = window.stats.to_dict()
    stats["model"] = model
    stats["summary"] = summaries.summary_stats(recent.summary, window)
    return {"messages": window.messages, "stats": stats}


# -- turn log, pinning -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventsPage:
    """One page of a conversation's turn log: seed-002 lines in log order and the cursor of the next page."""

    lines: list[dict[str, Any]]
    next_cursor: str | None


def list_events(
    owner: str, conversation_id: str, *, limit: int, cursor: str | None = None, turn: int | None = None
) -> EventsPage:
    """GET /conversations/{id}/events: the turn log (session_start, each turn's steps, ...), or one turn's.

    One GetItem (the conversation must be the caller's and live) and one Query of the events.
    """
    _check_id(conversation_id)
    pk = conversation_pk(owner, conversation_id)
    scope = f"{EVENTS_SCOPE}:{conversation_id}:{'*' if turn is None else turn}"
    prefix = EVENT_SK_PREFIX if turn is None else turn_prefix(turn)

    def mine(key: Mapping[str, str]) -> bool:
        return set(key) == {"pk", "sk"} and key["pk"] == pk and key["sk"].startswith(prefix)

    start = decode_cursor(owner, scope, cursor, mine) if cursor is not None else None
    conversation = store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        raise _not_found(conversation_id)
    page = store.page_events(owner, conversation_id, limit, start, turn=turn)
    metrics.add_metric(name="EventsRead", unit=MetricUnit.Count, value=1)
    return EventsPage(
        lines=[event.to_line() for event in page.items],
        next_cursor=encode_cursor(owner, scope, page.last_key) if page.last_key else None,
    )


def _pin_entry(message: Message) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "seq": int(message.seq),
        "message_id": message.message_id,
        "role": message.role,
        "content": message.content or "",
        "tokens": int(message.tokens),
    }
    if message.name:
        entry["name"] = message.name
    return entry


def _check_pinnable(message: Message) -> None:
    if message.role == "tool" or message.tool_calls:
        raise PinRefused(
            "tool calls and tool results cannot be pinned: the window keeps or drops them as a group"
        )
    if message.status != "ok":
        raise PinRefused("a failed reply cannot be pinned; it is never sent to the model")


def pin_message(owner: str, conversation_id: str, message_id: str, pinned: bool) -> dict[str, Any]:
    """PATCH /conversations/{id}/messages/{message_id}: pin or unpin a message (WIN-3), 200 with it.

    A pinned message is copied onto the conversation item, so the post's one Query still gives the window
    everything; at most MAX_PINNED messages and MAX_PINNED_BYTES of pinned text per conversation.
    """
    _check_id(conversation_id)
    settings = get_settings()
    for attempt in range(max(1, settings.post_attempts)):
        conversation = store.get_conversation(owner, conversation_id)
        if conversation is None or conversation.is_deleted:
            raise _not_found(conversation_id)
        message = store.find_message(owner, conversation_id, message_id)
        if message is None:
            raise MessageNotFound(f"message {message_id!r} not found in conversation {conversation_id!r}")
        entries = [e for e in conversation.pinned or [] if e.get("message_id") != message_id]
        listed = len(entries) != len(conversation.pinned or [])
        if listed == pinned and bool(message.pinned) == pinned:
            return message_view(message)  # already so: nothing to write
        if pinned:
            _check_pinnable(message)
            entries = sorted([*entries, _pin_entry(message)], key=lambda e: int(e["seq"]))
            if len(entries) > MAX_PINNED:
                raise PinRefused(
                    f"a conversation can have at most {MAX_PINNED} pinned messages; unpin one first"
                )
            # Counted as stored (JSON, escaped) on the conversation item, which must stay under 400 KB.
            size = len(json.dumps(entries))
            if size > MAX_PINNED_BYTES:
                raise PinRefused(
                    f"pinned messages would take {size} bytes stored; the limit is {MAX_PINNED_BYTES} "
                    f"per conversation"
                )
        try:
            store.set_pinned(conversation, message, pinned, entries)
        except store.PinConflict:
            from chat_core.chat import recording

            time.sleep(recording.contention_backoff(attempt))
            continue
        message.pinned = pinned
        logger.info("message pinned" if pinned else "message unpinned", conversation_id=conversation_id)
        metrics.add_metric(
            name="MessagesPinned" if pinned else "MessagesUnpinned", unit=MetricUnit.Count, value=1
        )
        return message_view(message)
    raise ConversationBusy("the conversation's pinned messages kept changing; retry the request")
