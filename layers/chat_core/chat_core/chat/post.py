"""POST /messages: validate, take the turn, assemble the window, ask the model, store the reply (API-1)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from chat_core.chat import budgets, paths, prices, rate_limit, recording, response_settings
from chat_core.chat.answer import ask_model, record_answer, reply_message
from chat_core.chat.assembly import RecallSource, assemble_window
from chat_core.chat.commands import PostMessage
from chat_core.chat.deadlines import store_deadline
from chat_core.chat.recall.in_window import with_recall
from chat_core.chat.regenerate import regenerate_turn
from chat_core.chat.rules import check_id, check_parts
from chat_core.chat.turns import Branch, Turn, append_to_conversation, start_conversation
from chat_core.chat.views import PostOutcome, message_view, post_body
from chat_core.engine import tool_pairing
from chat_core.errors import (
    IdempotencyKeyReused,
    InvalidInput,
    ReplyNotStored,
    RequestInProgress,
    StoreUnavailable,
)
from chat_core.llm.completion import ChatProvider, ChunkSink
from chat_core.llm.provider import get_provider
from chat_core.observability import MetricUnit, logger, metrics, tracer
from chat_core.runtime import for_settings
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as store
from chat_core.store import idempotency as idempotency_store
from chat_core.store.records import MessageRecord


def post_message(
    owner: str,
    request: PostMessage,
    *,
    idempotency_key: str | None = None,
    context: Any = None,
    provider: ChatProvider | None = None,
    on_chunk: ChunkSink | None = None,
    branch: Branch | None = None,
    admitted: bool = False,
) -> PostOutcome:
    """POST /messages (seed 003, DES-1 "Posting, in order"; seed 002 turn log; agent tool messages).

    Validates before any I/O, then: one Query, TransactWrite #1 (recorded tool messages, the user message,
    reply slot reserved, turn_start and step events), the model call, TransactWrite #2 (assistant message
    ok or error, its events, turn_end unless the turn waits for tool results, totals). With an
    Idempotency-Key the first outcome (the turn, or the model's failure) is stored and replayed; the same
    key with another body is refused. With `on_chunk` the model's answer is streamed to it as it
    arrives (API-14); a replay streams nothing (the caller has the whole turn in the outcome).
    An edit or a regeneration (API-18, `branch`) is the same post continuing from another message.
    The per-user rate limit (OPS-4) counts the post where it starts its own work, so a replay is not
    counted; `admitted` when the caller counted it already (it wrote something before the post).
    """

    settings = get_settings()
    if branch is None or branch.kind == "edit":
        check_before_io(request, settings, new=request.conversation_id is None)
    if idempotency_key is None:
        try:
            return _post(owner, request, context, settings, provider, on_chunk, branch, admitted)
        except ReplyNotStored as exc:
            unsaved: PostOutcome = exc.outcome
            return unsaved
    body = dict(request.as_sent)
    if branch is not None:
        # The same key on another route (or another message) is another request: refused, not replayed.
        body["_branch"] = {"kind": branch.kind, "of": branch.of.message_id}
    payload = {"owner": owner, "key": idempotency_key, "body": body}
    config, run = _idempotent_post(settings)
    if context is not None:
        config.register_lambda_context(context)
    sink: list[PostOutcome] = []
    try:
        record = run(
            request=payload,
            context=context,
            settings=settings,
            sink=sink,
            provider=provider,
            message=request,
            on_chunk=on_chunk,
            branch=branch,
            admitted=admitted,
        )
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


def check_before_io(request: PostMessage, settings: Settings | None = None, *, new: bool) -> None:
    """What a post checks before any I/O (API-3, API-5, API-15): content and parts, the recorded tool
    messages' sizes, the id; on a `new` conversation (no pending tool calls) their pairing too."""
    if request.has_content:
        check_parts(request.text or "", request.parts, settings or get_settings())
    recorded = request.recorded
    tool_pairing.check_sizes(recorded)
    if request.conversation_id is not None:
        check_id(request.conversation_id)
    if new:
        if not request.has_content:
            raise InvalidInput("content is required to start a conversation", field="content")
        tool_pairing.pair_results(recorded, [])


def _replay(owner: str, record: Mapping[str, Any]) -> PostOutcome:
    """The first outcome of an idempotent post, rebuilt from the stored messages (they never change)."""
    conversation_id, first = str(record["conversation_id"]), int(record["seq"])
    # Records written before tool messages existed hold only `seq` (the user message; reply after it).
    user_seq = record.get("user_seq", first)
    reply_seq = record.get("reply_seq", first + 1)
    last = int(record.get("last_seq", first + 1))
    found = {m.seq: m for m in store.read_messages(owner, conversation_id, first, last)}
    recorded = [found[s] for s in sorted(found) if s not in (user_seq, reply_seq)]
    user = found.get(int(user_seq)) if user_seq is not None else None
    assistant = found.get(int(reply_seq)) if reply_seq is not None else None
    logger.info("idempotent replay", conversation_id=conversation_id, seq=first)
    conversation = store.get_conversation(owner, conversation_id)
    view: Callable[[MessageRecord], dict[str, Any]] = message_view
    if conversation is not None:
        parents = paths.Parents(owner, conversation, list(found.values()))
        view = lambda m: paths.with_parent(message_view(m), m, parents)  # noqa: E731
    body = post_body(conversation_id, recorded, user, assistant, view)
    return PostOutcome(
        body=body,
        # Records written before `model_failed` existed hold the HTTP status the post answered.
        model_failed=bool(record.get("model_failed", record.get("status") == 502)),
        seq=first,
        user_seq=int(user_seq) if user_seq is not None else None,
        reply_seq=int(reply_seq) if reply_seq is not None else None,
        last_seq=last,
    )


#: The runtime's idempotent post (`_idempotent_post`).
IDEMPOTENT_POST = "chat.post.idempotent"


def _idempotent_post(settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """The idempotent post of the runtime's settings (built once per runtime)."""
    return for_settings(settings).resource(IDEMPOTENT_POST, _build_idempotent_post)


def _build_idempotent_post(settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """The post logic wrapped in Powertools Idempotency, on the same table (API-6).

    The record keeps only the outcome, the conversation and the sequence numbers of the post's messages:
    a replay re-reads them, so the record stays small whatever the reply or the provider's error weighed.
    """

    config = IdempotencyConfig(
        # The caller's identity is part of the key: one user's key never replays another user's turn.
        event_key_jmespath="[owner, key]",
        payload_validation_jmespath="body",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=settings.idempotency_ttl_seconds,
    )

    def run(
        *,
        request: dict[str, Any],
        context: Any,
        settings: Settings,
        sink: list[PostOutcome],
        provider: ChatProvider | None,
        message: PostMessage,
        on_chunk: ChunkSink | None = None,
        branch: Branch | None = None,
        admitted: bool = False,
    ) -> dict[str, Any]:
        # `request` is what the key and the payload check hash; `message` is the same body, validated.
        outcome = _post(request["owner"], message, context, settings, provider, on_chunk, branch, admitted)
        sink.append(outcome)
        return {
            "model_failed": outcome.model_failed,
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
def _post(
    owner: str,
    request: PostMessage,
    context: Any,
    settings: Settings,
    provider: ChatProvider | None,
    on_chunk: ChunkSink | None = None,
    branch: Branch | None = None,
    admitted: bool = False,
) -> PostOutcome:
    # OPS-4 and COST-4: over the rate limit or the budget, the post stops here, before anything is
    # written or the model is asked (a replay of an Idempotency-Key never gets here: it is not counted).
    if not admitted:
        rate_limit.check(owner, settings)
    budgets.check(owner, settings)
    if branch is not None and branch.kind == "regenerate":
        turn = regenerate_turn(owner, request, settings, branch, context)
    elif request.conversation_id is None:
        turn = start_conversation(owner, request, settings)
    else:
        turn = append_to_conversation(owner, request, settings, context, branch=branch)
    conversation_id = turn.conversation.conversation_id
    if turn.reply_seq is None:
        # MAX_TURN_STEPS reached: the tool results are stored and the turn ended; the model is not asked.
        logger.info("turn ended at max steps", conversation_id=conversation_id, turn=turn.recorder.turn)
        body = _post_body(turn, None)
        return turn.outcome(body)
    started = getattr(on_chunk, "turn_started", None)
    if started is not None:
        # A sink that names the answer before it is stored (the Responses events, RSP-5) learns its slot.
        started(conversation_id, turn.reply_seq)
    window = assemble_window(
        response_settings.for_turn(turn.conversation, request.instructions, turn.model),
        turn.history,
        request.for_model(),
        turn.user,
        turn.model,
        with_recall(turn.conversation.window_policy, request.recall),
        summary=turn.summary,
        tail_from_seq=turn.tail_from_seq,
        generation=turn.generation,
        recall_from=RecallSource(owner, turn.read),
    )
    # A reply too large for its item is stored as an error turn (502) instead (REL).
    completion, failure = recording.cap_reply(
        *ask_model(
            provider or get_provider(),
            window.result,
            turn.model,
            context,
            turn.generation.options,
            on_chunk,
            conversation=(owner, conversation_id),
        ),
        settings,
    )
    assistant, reported, local = reply_message(owner, turn, window.prompt_tokens, completion, failure)
    if window.charges:  # MEM-50: the window's own model calls ride on the reply to the owner's usage
        assistant = replace(assistant, charges=[c.to_json() for c in window.charges])
    assistant = response_settings.attach(recording.fit_item(assistant), request.answer_settings)
    # COST-2: a reply the model gave is priced (from its usage, else from the local count); an error
    # reply cost nothing.
    charge = None
    if completion is not None:
        estimated = not completion.usage_reported
        assistant, charge = prices.cost_message(assistant, estimated=estimated, settings=settings)
    # The turn as TransactWrite #1 left it: a failed TransactWrite #2 is closed from there.
    written = turn.recorder.state.to_json()
    open_turn = record_answer(turn, assistant, completion, failure, reported, local)
    try:
        stored = store.record_reply(
            turn.conversation,
            assistant,
            assistant.created_at,
            reported=reported,
            local=local,
            events=turn.recorder.take_events(),
            open_turn=open_turn,
            deadline=store_deadline(context),
            charge=charge,
            # COST-4: with budgets on, the reply counts toward them in the write that stores it.
            count_usage=settings.budgets_on,
        )
    except (StoreUnavailable, store.ReplySlotTaken) as exc:
        # The user message is stored already: end the turn as an error rather than leave it open, and
        # hand the caller the reply the model gave, saying it was not saved.
        recording.close_failed_turn(
            turn.conversation, assistant, exc, turn=written, turn_on_item=turn.resumed
        )
        body = _post_body(turn, assistant)
        body["assistant_message"]["stored"] = False
        body["error"] = {
            "code": ReplyNotStored.code,
            "message": "the model answered but its reply could not be saved; it is included here",
        }
        raise ReplyNotStored(
            turn.outcome(body, model_failed=failure is not None, reply_stored=False)
        ) from exc
    if stored == store.STORED_ALONE:
        metrics.add_metric(name="RepliesStoredAlone", unit=MetricUnit.Count, value=1)
        logger.warning("reply stored on its own; totals follow with the next post", seq=assistant.seq)
    metrics.add_metric(name="MessagesPosted", unit=MetricUnit.Count, value=1)
    logger.info(
        "turn stored",
        conversation_id=conversation_id,
        turn=turn.recorder.turn,
        seq=assistant.seq,
        status=assistant.status,
        tool_calls=len(assistant.tool_calls or []),
        kept_history=window.result.stats.kept_history,
        prompt_tokens=reported[0],
        local_prompt_tokens=local[0],
    )
    body = _post_body(turn, assistant)
    return turn.outcome(body, model_failed=failure is not None)


def _post_body(turn: Turn, assistant: MessageRecord | None) -> dict[str, Any]:
    """The post's answer, each message with its `parent_id` (API-18) from what the post read: no read
    is added (the parent is the message the post continued, which its read holds)."""
    written = [*turn.recorded, *([turn.user] if turn.user is not None else [])]
    parents = paths.Parents(
        turn.conversation.owner,
        turn.conversation,
        [*turn.read, *turn.history, *written, *([assistant] if assistant is not None else [])],
        fetch=False,
        covered_from=turn.covered_from,
    )
    return post_body(
        turn.conversation.conversation_id,
        turn.recorded,
        turn.user,
        assistant,
        view=lambda m: paths.with_parent(message_view(m), m, parents),
    )
