"""POST /v1/responses/compact (RSP-10): the input, or the conversation a response continued, folded into
its summary by the summarizer (`chat.compaction`), answered as OpenAI's compaction: one `compaction`
item a later request passes back as input."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chat_core.chat import compaction, compaction_items, rate_limit, response_items, responses
from chat_core.chat.create import new_conversation
from chat_core.chat.navigation import set_active
from chat_core.errors import InvalidInput
from chat_core.http.response_objects import CompactionItemOut, CompactionObject, UsageOut
from chat_core.http.responses_api import ResponseCreateIn
from chat_core.http.schemas import ModelName
from chat_core.store.records import SummaryRecord


class CompactIn(BaseModel):
    """The request: `model` (required, the summarizer's model), `input` and/or `previous_response_id`.
    `instructions` and `prompt_cache_key` are accepted and not used: the summarizer has its own."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    model: ModelName
    input: str | list[dict[str, Any]] | None = None
    previous_response_id: str | None = Field(default=None, max_length=128)
    instructions: str | None = Field(default=None, max_length=100_000)
    prompt_cache_key: str | None = Field(default=None, max_length=256)


def compaction_item(conversation_id: str, summary: SummaryRecord) -> dict[str, Any]:
    content = compaction_items.encode(conversation_id, summary.from_seq, summary.to_seq, summary.text)
    item = CompactionItemOut(id=f"cmp_{conversation_id}_{summary.to_seq}", encrypted_content=content)
    return item.model_dump(mode="json")


def compact_before_turn(
    owner: str,
    request: ResponseCreateIn,
    plan: responses.ResponsePlan,
    conversation_id: str | None,
    model: str,
    context: Any,
) -> dict[str, Any] | None:
    """RSP-10, `context_management`: when the turn's input (its conversation's window, as
    `input_tokens` counts it) passes the threshold, the conversation up to the post is compacted first
    (the post's window then carries the summary instead of what it folded). The compaction item the
    response shows before its answer, or None."""
    threshold = next((c.compact_threshold for c in request.context_management or []), None)
    if threshold is None or conversation_id is None:
        return None
    tokens, _ = responses.count_input(owner, plan, model)
    if tokens <= threshold:
        return None
    conversation = responses.live(owner, conversation_id)
    leaf = conversation.active_leaf if conversation.active_leaf is not None else conversation.next_seq - 1
    if leaf < 1:
        return None
    done = compaction.compact(owner, conversation_id, until_seq=leaf, model=model, context=context)
    return compaction_item(conversation_id, done.summary) if done.summary is not None else None


def compact_response(
    owner: str, request: CompactIn, idempotency_key: str | None, context: Any
) -> dict[str, Any]:
    """The compaction of the request's conversation (new when it continues none): its input appended,
    then everything up to its newest message folded into the conversation's summary."""
    if request.input is None and request.previous_response_id is None:
        raise InvalidInput("input or previous_response_id is required", field="input")
    given = response_items.input_messages(request.input if request.input is not None else [])
    rate_limit.check(owner)  # OPS-4: a model call the caller asked for
    if request.previous_response_id is not None:
        conversation, answer = responses.previous_answer(owner, request.previous_response_id)
        conversation_id = conversation.conversation_id
        leaf = conversation.active_leaf if conversation.active_leaf is not None else conversation.next_seq - 1
        if answer.seq != leaf:
            set_active(owner, conversation_id, answer.message_id)
        until = answer.seq
        if given.system:
            raise InvalidInput(
                "system items start a conversation; with previous_response_id send messages only",
                field="input",
            )
    else:
        system = "\n\n".join(given.system) or None
        conversation_id = new_conversation(owner, model=request.model, system_prompt=system).conversation_id
        until = 0
    if given.messages:
        key = f"{idempotency_key}:compact" if idempotency_key is not None else None
        responses.append_items(owner, conversation_id, given.messages, key)
        live = responses.live(owner, conversation_id)
        until = live.active_leaf if live.active_leaf is not None else live.next_seq - 1
    if until < 1:
        raise InvalidInput("nothing to compact: the input holds no message", field="input")
    done = compaction.compact(owner, conversation_id, until_seq=until, model=request.model, context=context)
    summary = done.summary
    if summary is None:
        raise InvalidInput("nothing to compact: no message could be summarized", field="input")
    usage = UsageOut(
        input_tokens=done.input_tokens,
        output_tokens=done.output_tokens,
        total_tokens=done.input_tokens + done.output_tokens,
    )
    answer_body = CompactionObject(
        id=f"resp_cmp_{conversation_id}_{summary.to_seq}",
        created_at=int(time.time()),
        output=[compaction_item(conversation_id, summary)],
        usage=usage,
    )
    return answer_body.model_dump(mode="json")
