"""A post's model call and what is recorded of its answer: the reply, its usage, the turn log's step."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from chat_core.chat import attachments, deadlines
from chat_core.chat.policy import count_message, counted_with
from chat_core.chat.rules import now_iso, required
from chat_core.chat.turns import Turn, conversation_tokens
from chat_core.engine import tokens
from chat_core.engine.turnlog import Tokens
from chat_core.engine.window import WindowResult
from chat_core.errors import ProviderFailed, StoreUnavailable
from chat_core.llm.completion import (
    ChatProvider,
    ChunkSink,
    Completion,
    StreamInterrupted,
    time_budget_from_context,
)
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.store import conversations as store
from chat_core.store.keys import message_id_for
from chat_core.store.records import MessageRecord, MessageUsage


def ask_model(
    provider: ChatProvider,
    window: WindowResult,
    model: str,
    context: Any,
    options: Mapping[str, Any] | None = None,
    on_chunk: ChunkSink | None = None,
    *,
    conversation: tuple[str, str] | None = None,
) -> tuple[Completion | None, ProviderFailed | None]:
    """The model's answer to the window with the turn's settings (API-11), or its failure (not raised:
    a failed call is a turn too). With `on_chunk` the answer streams (API-14); a stream that stops part
    way is an answer too: what arrived, marked `interrupted`. Content parts kept in S3 are read back
    first (API-17; `conversation` is their (owner, conversation id)); if they cannot be, the model is
    not asked and the turn fails saying so."""
    messages: Any = window.messages
    if conversation is not None:
        try:
            messages = attachments.restore_messages(*conversation, window.messages)
        except StoreUnavailable as exc:
            logger.warning("attachment unavailable; the model was not asked", error=exc.message)
            return None, ProviderFailed(
                f"the model was not asked: {exc.message}", kind="attachment_unavailable"
            )
    budget = time_budget_from_context(context, safety_margin_s=deadlines.STORE_MARGIN_S)
    started = time.monotonic()
    try:
        if on_chunk is None:
            completion = provider.complete(messages, model=model, time_budget_s=budget, options=options)
        else:
            completion = provider.complete(
                messages, model=model, time_budget_s=budget, options=options, on_chunk=on_chunk
            )
    except StreamInterrupted as exc:
        metrics.add_metric(name="StreamsInterrupted", unit=MetricUnit.Count, value=1)
        logger.warning("model stream interrupted", reason=exc.reason)
        return exc.partial, None
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


def reply_message(
    owner: str,
    turn: Turn,
    local_prompt: int,
    completion: Completion | None,
    failure: ProviderFailed | None,
) -> tuple[MessageRecord, tuple[int, int, int], tuple[int, int]]:
    """The assistant message (ok, or error per API-2) with usage as reported and the local count (TOK-6).

    `local_prompt` is the window's local count from the counts stored at write time (TOK-5). A reply
    with tool calls keeps them (content may be null); its count includes names and arguments (TOK-4).
    """
    conversation, model = turn.conversation, turn.model
    reply_seq = required(turn.reply_seq, "the turn's reply slot")
    reply = MessageRecord(
        owner=owner,
        conversation_id=conversation.conversation_id,
        seq=reply_seq,
        message_id=message_id_for(reply_seq),
        role="assistant",
        created_at=now_iso(),
        parent_seq=turn.reply_parent,
    )
    if completion is None:
        failure = required(failure, "the model failure")
        reply = replace(
            reply,
            content="",
            status="error",
            model=model,
            tokens=0,
            usage=MessageUsage(0, 0, 0),
            usage_reported=False,
            local_usage=MessageUsage(local_prompt, 0, local_prompt),
            error={"message": failure.message, "provider_response": failure.provider_response},
        )
        return reply, (0, 0, 0), (local_prompt, 0)

    usage = completion.usage
    calls = completion.tool_calls or None
    local_completion = tokens.count_tokens(completion.content or completion.refusal or "", model)
    for call in calls or []:
        function = call.get("function") or {}
        local_completion += tokens.count_tokens(str(function.get("name") or ""), model)
        local_completion += tokens.count_tokens(str(function.get("arguments") or ""), model)
    content = completion.content if completion.content or not (calls or completion.refusal) else None
    # A refusal goes back to the model as what it said (the window sends it as the message's content).
    counted: dict[str, Any] = {"role": "assistant", "content": content or completion.refusal}
    if calls:
        counted["tool_calls"] = calls
    reply = replace(
        reply,
        content=content,
        status="ok",
        model=completion.model or model,
        tool_calls=calls,
        tokens=count_message(counted, model),
        tokens_encoding=counted_with(model),
        usage=MessageUsage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        usage_reported=completion.usage_reported,
        local_usage=MessageUsage(local_prompt, local_completion, local_prompt + local_completion),
        latency_ms=round(completion.latency_ms, 1),
        finish_reason=completion.finish_reason,
        refusal=completion.refusal,
        extras=completion.extras,
    )
    if completion.interrupted:
        # API-14: a stream that stopped part way: what arrived is stored, marked, never sent to the model
        # again; tool calls cut mid-way cannot be answered, so they are kept aside, not left pending.
        reply = replace(
            reply,
            status="incomplete",
            error={"message": completion.interrupted, "provider_response": None},
        )
        if reply.tool_calls:
            reply = replace(
                reply,
                extras={**(completion.extras or {}), "partial_tool_calls": list(reply.tool_calls)},
                tool_calls=None,
                content=reply.content or "",
            )
    return (
        reply,
        (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        (local_prompt, local_completion),
    )


def record_answer(
    turn: Turn,
    assistant: MessageRecord,
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
    totals = conversation_tokens(turn.conversation, step)
    if completion is None:
        failure = required(failure, "the model failure")
        recorder.model_failure(
            message_id=assistant.message_id,
            model=str(assistant.model),
            error_message=failure.message,
            kind=failure.kind,
            status_code=failure.status_code,
            tokens=step,
        )
        recorder.end("error", error_message=failure.message, conversation_tokens=totals)
    else:
        recorder.model_answer(
            content=assistant.content or completion.refusal or "",
            tool_calls=assistant.tool_calls,
            message_id=assistant.message_id,
            seq=assistant.seq,
            model=str(assistant.model),
            tokens=step,
            usage_reported=completion.usage_reported,
            finish_reason=completion.finish_reason,
            latency_ms=completion.latency_ms,
        )
        if completion.interrupted:
            recorder.end("incomplete", error_message=completion.interrupted, conversation_tokens=totals)
        elif not recorder.awaiting_results:
            recorder.end("ok", conversation_tokens=totals)
    if recorder.awaiting_results:
        return recorder.state.to_json()
    # A turn resumed from the conversation item is closed there; a turn that began and ended in this
    # post never wrote any state (leaving it alone keeps another turn's pending calls intact).
    return None if turn.resumed else store.KEEP
