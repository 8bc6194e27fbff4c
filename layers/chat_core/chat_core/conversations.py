"""The service's operations (seed 003): create, post a message, list, detail, soft delete, build a window."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from chat_core import resilience, summaries, tokens
from chat_core.cursors import decode_cursor, encode_cursor
from chat_core.errors import (
    ConversationBusy,
    ConversationNotFound,
    IdempotencyKeyReused,
    InvalidInput,
    MessageTooLong,
    ProviderFailed,
    RequestInProgress,
    StoreUnavailable,
)
from chat_core.observability import MetricUnit, logger, metrics, tracer
from chat_core.provider import Completion, get_provider, time_budget_from_context
from chat_core.schemas import (
    MAX_POLICY_MESSAGES,
    BuildWindowIn,
    CreateConversationIn,
    PostMessageIn,
    WindowPolicyIn,
)
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as store
from chat_core.store import idempotency as idempotency_store
from chat_core.store.conversations import Conversation, Message, usage_map
from chat_core.store.keys import (
    MESSAGE_SK_PREFIX,
    META_SK,
    conversation_pk,
    is_valid_id,
    new_id,
    owner_pk,
)
from chat_core.store.summaries import Summary
from chat_core.window import SEED_003_POLICY, WindowPolicy, WindowResult, select_window

TITLE_FROM_MESSAGE_CHARS = 80
LIST_SCOPE = "conversations"
MESSAGES_SCOPE = "messages"
# Seconds left after the model call to store its answer (TransactWrite #2) before Lambda's deadline.
STORE_MARGIN_S = 3.0


@dataclass(frozen=True)
class PostOutcome:
    """What POST /messages answers: 201 with the turn, or 502 with the same shape when the model failed."""

    status: int
    body: dict[str, Any]
    seq: int = 0  # the user message's sequence number (what an idempotent replay re-reads)


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
    return int(tokens.count_message_tokens(message, method="exact", model=model))


def _policy_dict(policy: WindowPolicyIn | None) -> dict[str, Any] | None:
    return policy.model_dump(exclude_none=True) if policy is not None else None


def window_policy(stored: Mapping[str, Any] | None, model: str) -> WindowPolicy:
    """The conversation's window policy: WIN-2 by default, else its own within the model's context."""
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
    if not stored:
        return int(SEED_003_POLICY.max_messages or 10)
    return int(stored.get("max_messages") or MAX_POLICY_MESSAGES)


# -- views --------------------------------------------------------------------------------------------------


def _usage(prompt: float, completion: float, total: float) -> dict[str, int]:
    return {"prompt_tokens": int(prompt), "completion_tokens": int(completion), "total_tokens": int(total)}


def message_view(message: Message) -> dict[str, Any]:
    """API-1 message object, exactly: assistant messages add model and usage, error ones add error."""
    view: dict[str, Any] = {
        "message_id": message.message_id,
        "conversation_id": message.conversation_id,
        "role": message.role,
        "content": message.content or "",
        "status": message.status,
        "created_at": message.created_at,
    }
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
    store.create_conversation(conversation)
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
    """POST /messages (seed 003, SPEC §9 "Posting, in order").

    Validates before any I/O, then: one Query, TransactWrite #1 (user message, reply slot reserved),
    the model call, TransactWrite #2 (assistant message ok or error, totals). With an Idempotency-Key
    the first outcome (201 or 502) is stored and replayed; the same key with another body is refused.
    """
    settings = get_settings()
    check_content(request.content, settings)
    if request.conversation_id is not None:
        _check_id(request.conversation_id)
    if idempotency_key is None:
        return _post(owner, request, context, settings)
    payload = {"owner": owner, "key": idempotency_key, "body": request.model_dump(mode="json")}
    config, run = _idempotent_post(settings)
    if context is not None:
        config.register_lambda_context(context)
    sink: list[PostOutcome] = []
    try:
        record = run(request=payload, context=context, settings=settings, sink=sink)
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


def _replay(owner: str, record: Mapping[str, Any]) -> PostOutcome:
    """The first outcome of an idempotent post, rebuilt from the stored turn (messages never change)."""
    conversation_id, seq = str(record["conversation_id"]), int(record["seq"])
    user, assistant = store.read_turn(owner, conversation_id, seq)
    logger.info("idempotent replay", conversation_id=conversation_id, seq=seq)
    body = {
        "conversation_id": conversation_id,
        "user_message": message_view(user) if user is not None else None,
        "assistant_message": message_view(assistant) if assistant is not None else None,
    }
    return PostOutcome(status=int(record["status"]), body=body, seq=seq)


_idempotent: tuple[Settings, IdempotencyConfig, Callable[..., dict[str, Any]]] | None = None


def _idempotent_post(settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """The idempotent post of this process's settings (built once; rebuilt when settings change)."""
    global _idempotent
    if _idempotent is None or _idempotent[0] != settings:
        _idempotent = (settings, *_build_idempotent_post(settings))
    return _idempotent[1], _idempotent[2]


def _build_idempotent_post(settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """The post logic wrapped in Powertools Idempotency, on the same table (API-6).

    The record keeps only (status, conversation_id, seq): a replay re-reads that turn, so the record
    stays small whatever the reply or the provider's error response weighed.
    """
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
    if request.conversation_id is None:
        turn = _start_conversation(owner, request, settings)
    else:
        turn = _append_to_conversation(owner, request, settings)
    window, usable = _window(
        turn.conversation, turn.history, request.content, turn.user, turn.model, summary=turn.summary
    )
    # A reply too large for its item is stored as an error turn (502) instead (issue 7).
    completion, failure = resilience.cap_reply(*_ask_model(window, turn.model, context), settings)
    kept = window.stats.kept_history
    history_tokens = sum(int(m["tokens"]) for m in usable[len(usable) - kept :]) if kept else 0
    if turn.summary is not None and summaries.summary_included(window):
        history_tokens += int(turn.summary.tokens)
    assistant, reported, local = _reply_message(owner, turn, history_tokens, completion, failure)
    resilience.fit_item(assistant)
    try:
        store.record_reply(turn.conversation, assistant, assistant.created_at, reported=reported, local=local)
    except Exception as exc:
        # The user message is stored already: end the turn as an error rather than leave it open.
        resilience.close_failed_turn(turn.conversation, assistant, exc)
        raise
    metrics.add_metric(name="MessagesPosted", unit=MetricUnit.Count, value=1)
    logger.info(
        "turn stored",
        conversation_id=turn.conversation.conversation_id,
        seq=int(turn.user.seq),
        status=assistant.status,
        kept_history=kept,
        prompt_tokens=reported[0],
        local_prompt_tokens=local[0],
    )
    body = {
        "conversation_id": turn.conversation.conversation_id,
        "user_message": message_view(turn.user),
        "assistant_message": message_view(assistant),
    }
    return PostOutcome(status=502 if failure is not None else 201, body=body, seq=int(turn.user.seq))


@dataclass(frozen=True)
class _Turn:
    """A post after TransactWrite #1: the user message is durable, the reply slot reserved."""

    conversation: Conversation
    user: Message
    history: list[Message]
    model: str
    summary: Summary | None = None  # seed 001: what the window carries for the messages before history


def _user_message(owner: str, conversation_id: str, seq: int, content: str, model: str) -> Message:
    return Message.new(
        owner,
        conversation_id,
        seq,
        message_id=new_id(),
        role="user",
        content=content,
        status="ok",
        created_at=now_iso(),
        tokens=_count({"role": "user", "content": content}, model),
    )


def _start_conversation(owner: str, request: PostMessageIn, settings: Settings) -> _Turn:
    """First message without an id: conversation and user message in one TransactWrite (API-1)."""
    model = request.model or settings.llm_model
    conversation_id = new_id()
    user = _user_message(owner, conversation_id, 1, request.content, model)
    title = " ".join(request.content.split())[:TITLE_FROM_MESSAGE_CHARS] or None
    conversation = Conversation.new(
        owner,
        conversation_id,
        title=title,
        model=model,
        created_at=user.created_at,
        updated_at=user.created_at,
    )
    store.create_with_first_message(conversation, user)
    logger.info("conversation created", conversation_id=conversation_id, model=model)
    return _Turn(conversation, user, [], model)


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


def _append_to_conversation(owner: str, request: PostMessageIn, settings: Settings) -> _Turn:
    """The Query, then TransactWrite #1; on contention re-read and retry (bounded)."""
    conversation_id = str(request.conversation_id)
    for attempt in range(max(1, settings.post_attempts)):
        recent = _read_history(owner, conversation_id, None)
        conversation = recent.conversation
        assert conversation is not None
        if attempt == 0:
            # A reply slot a crashed post left empty is closed as an error turn (rare; no read added).
            resilience.repair_abandoned(conversation, recent.messages, settings)
        model = request.model or conversation.model
        user = _user_message(owner, conversation_id, int(conversation.next_seq), request.content, model)
        try:
            store.append_user_message(conversation, user, user.created_at)
        except store.SequenceConflict:
            logger.info("sequence taken, re-reading", conversation_id=conversation_id, attempt=attempt + 1)
            time.sleep(resilience.contention_backoff(attempt))
            continue
        return _Turn(conversation, user, recent.messages, model, recent.summary)
    raise ConversationBusy("too many concurrent posts to this conversation; retry the request")


def _window_message(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": message.content or "",
        "tokens": int(message.tokens),
        "message_id": message.message_id,
        "seq": int(message.seq),
    }


def _window(
    conversation: Conversation,
    history: Sequence[Message],
    content: str,
    user: Message | None,
    model: str,
    policy_override: Mapping[str, Any] | None = None,
    *,
    summary: Summary | None = None,
) -> tuple[WindowResult, list[dict[str, Any]]]:
    """The window sent with `content`, and the history it chose from (failed replies are left out).

    With a summary (seed 001) the window carries it after the system prompt and chooses only from the
    messages newer than the range it covers.
    """
    policy = window_policy(policy_override or conversation.window_policy, model)
    system = None
    if conversation.system_prompt:
        system = {
            "role": "system",
            "content": conversation.system_prompt,
            "tokens": int(conversation.system_tokens),
        }
    current: dict[str, Any] = {"role": "user", "content": content}
    current["tokens"] = int(user.tokens) if user is not None else _count(current, model)
    if user is not None:
        current["message_id"] = user.message_id
    usable = [_window_message(m) for m in summaries.after_summary(history, summary) if m.status == "ok"]
    carried = summaries.summary_message(summary) if summary is not None else None
    window = select_window(history=usable, policy=policy, system=system, current=current, summary=carried)
    return window, usable


def _ask_model(
    window: WindowResult, model: str, context: Any
) -> tuple[Completion | None, ProviderFailed | None]:
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
    history_tokens: int,
    completion: Completion | None,
    failure: ProviderFailed | None,
) -> tuple[Message, tuple[int, int, int], tuple[int, int]]:
    """The assistant message (ok, or error per API-2) with usage as reported and the local count (TOK-6)."""
    conversation, model = turn.conversation, turn.model
    system_tokens = int(conversation.system_tokens) if conversation.system_prompt else 0
    # The local count of the prompt reuses the counts stored at write time (TOK-5): no re-tokenizing.
    local_prompt = system_tokens + history_tokens + int(turn.user.tokens) + int(tokens.REPLY_PRIMING_TOKENS)
    reply = Message.new(
        owner,
        conversation.conversation_id,
        int(turn.user.seq) + 1,
        message_id=new_id(),
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
    usage = completion.usage
    local_completion = int(tokens.count_tokens(completion.content, model))
    reply.content = completion.content
    reply.status = "ok"
    reply.model = completion.model or model
    reply.tokens = _count({"role": "assistant", "content": completion.content}, model)
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
    store.soft_delete(
        owner,
        conversation_id,
        now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        now + timedelta(days=settings.retention_days),
    )
    logger.info("conversation deleted", conversation_id=conversation_id)
    metrics.add_metric(name="ConversationsDeleted", unit=MetricUnit.Count, value=1)


def build_window(owner: str, conversation_id: str, request: BuildWindowIn) -> dict[str, Any]:
    """POST /conversations/{id}/window: the window a post of `content` would send; no model call, no write."""
    check_content(request.content)
    _check_id(conversation_id)
    override = _policy_dict(request.window_policy)
    recent = _read_history(owner, conversation_id, override)
    conversation = recent.conversation
    assert conversation is not None
    model = request.model or conversation.model
    window, _ = _window(
        conversation, recent.messages, request.content, None, model, override, summary=recent.summary
    )
    metrics.add_metric(name="WindowsBuilt", unit=MetricUnit.Count, value=1)
    stats = window.stats.to_dict()
    stats["model"] = model
    stats["summary"] = summaries.summary_stats(recent.summary, window)
    return {"messages": window.messages, "stats": stats}
