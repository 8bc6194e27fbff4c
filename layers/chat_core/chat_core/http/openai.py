"""The OpenAI-compatible edge (API-13): `/v1/chat/completions` and `/v1/models` request models, OpenAI's
error shape, and one turn from a Chat Completions request to a chat.completion answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chat_core.chat import completions, post, rate_limit
from chat_core.errors import InvalidInput, TurnEnded
from chat_core.http.api import openai_error_body, openai_status
from chat_core.http.request_commands import post_command
from chat_core.http.schemas import (
    ConversationId,
    ModelName,
    ModelSettingsIn,
    PostMessageIn,
    RecallIn,
    ToolCallId,
    ToolCallIn,
)
from chat_core.http.statuses import status_for

if TYPE_CHECKING:
    from chat_core.llm.completion import ChatProvider

#: The response header (and request header) that names the conversation of a /v1 turn.
CONVERSATION_HEADER: Final = "X-Conversation-Id"


class ChatMessageIn(BaseModel):
    """A Chat Completions message. Keys this service does not use (an echoed `annotations`, `audio`,
    `function_call: null` ...) are ignored, so a client can send back the message objects it got."""

    model_config = ConfigDict(extra="ignore", strict=True, defer_build=True)

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = Field(default=None, max_length=64)
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: ToolCallId | None = None
    refusal: str | None = None


class ConversationRefIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    id: ConversationId


class ChatCompletionIn(ModelSettingsIn):
    """POST /v1/chat/completions: the Chat Completions request, plus `conversation` (an id, or
    `{"id"}`; SDKs send it through `extra_body`)."""

    model: ModelName
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=2000)
    conversation: ConversationId | ConversationRefIn | None = None
    #: MEM-6: recall for this turn (SDKs send it through `extra_body`), as a post's `recall`.
    recall: bool | RecallIn | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    n: int | None = Field(default=None, ge=1, le=1)
    #: OpenAI's own storage flag: every turn here is stored, so it changes nothing.
    store: bool | None = None

    def conversation_id(self) -> str | None:
        if isinstance(self.conversation, ConversationRefIn):
            return self.conversation.id
        return self.conversation


@dataclass(frozen=True)
class CompletionAnswer:
    """What /v1/chat/completions answers: status, body and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def chat_completion(
    owner: str,
    request: ChatCompletionIn,
    *,
    conversation_header: str | None = None,
    idempotency_key: str | None = None,
    context: Any = None,
    provider: ChatProvider | None = None,
    emit: Callable[[dict[str, Any]], None] | None = None,
) -> CompletionAnswer:
    """One turn: the tail rule decides what is new, the post stores it and asks the model, and the
    answer is the model's chat.completion plus `conversation`.

    With `emit` (a `stream: true` request, API-14) the conversation is named before the model is asked
    and each chunk of its answer goes to `emit` as it arrives, with `conversation` added (the usage
    chunk only with `stream_options.include_usage`); an answer that did not stream (a replay) is
    emitted as chunks at the end. The answer returned is then 200 with the chunks already emitted, or
    an error before any chunk. A stream that stops part way is stored with `status: "incomplete"`.
    """
    if request.stream and emit is None:
        raise InvalidInput(
            "stream: true is served by the streaming URL (stack output StreamUrl); this endpoint answers "
            "whole replies",
            field="stream",
        )
    named = request.conversation_id() or conversation_header
    messages = [m.model_dump(exclude_none=True) for m in request.messages]
    plan = completions.plan_turn(owner, messages, named)
    body: dict[str, Any] = {"model": request.model, **request.settings()}
    if plan.conversation_id is not None:
        body["conversation_id"] = plan.conversation_id
    if plan.content is not None:
        body["content"] = plan.content
    if plan.recorded:
        body["messages"] = plan.recorded
    if request.recall is not None:
        body["recall"] = request.recall
    try:
        turn = PostMessageIn.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "messages"
        raise InvalidInput(f"messages: {where}: {first.get('msg', 'invalid')}", field="messages") from exc
    # Everything a post checks before any I/O, before this request writes anything of its own.
    post.check_before_io(post_command(turn), new=plan.conversation_id is None)
    # OPS-4: a turn that writes before its post (the request's system prompt, a stream's new
    # conversation) is counted against the rate limit before that write; any other, by the post.
    admitted = plan.system_prompt is not None or (plan.conversation_id is None and emit is not None)
    if admitted:
        rate_limit.check(owner)
    conversation_id = completions.open_conversation(owner, plan, request.model, create=emit is not None)
    if conversation_id is not None and turn.conversation_id is None:
        turn = turn.model_copy(update={"conversation_id": conversation_id})
    sink: Callable[[dict[str, Any]], None] | None = None
    emitted: list[int] = []
    wants_usage = bool((request.stream_options or {}).get("include_usage"))
    if emit is not None:
        cid, forward = str(conversation_id), emit

        def relay(chunk: dict[str, Any]) -> None:
            if not chunk.get("choices") and not wants_usage:
                return
            emitted.append(1)
            forward({**chunk, "conversation": cid})

        sink = relay

    outcome = post.post_message(
        owner,
        post_command(turn),
        idempotency_key=idempotency_key,
        context=context,
        provider=provider,
        on_chunk=sink,
        admitted=admitted,
    )
    conversation_id = str(outcome.body["conversation_id"])
    headers = {CONVERSATION_HEADER: conversation_id}
    reply = outcome.body.get("assistant_message")
    if reply is None:
        error = TurnEnded("the turn reached MAX_TURN_STEPS model calls; the tool results are stored")
        return CompletionAnswer(
            openai_status(status_for(error)),
            openai_error_body(status_for(error), error.code, error.message),
            headers,
        )
    if outcome.model_failed:
        message = str((reply.get("error") or {}).get("message") or "the model provider failed")
        status = 502
        return CompletionAnswer(status, openai_error_body(status, "provider_failed", message), headers)
    if emit is not None and emitted and reply.get("status") == "incomplete":
        # The model's stream stopped part way: what arrived is stored as incomplete; the client is told
        # in OpenAI's mid-stream error event (the SDKs raise it), then the stream ends.
        reason = str((reply.get("error") or {}).get("message") or "the model's stream stopped")
        emit(openai_error_body(502, "stream_interrupted", f"{reason}; what arrived is stored as incomplete"))
        return CompletionAnswer(200, {}, headers)
    completion = completions.completion_object(conversation_id, reply)
    if emit is not None and not emitted:
        for chunk in completions.stream_chunk(conversation_id, reply):
            if chunk["choices"] or wants_usage:
                emit(chunk)
    if not outcome.reply_stored:
        # The model answered and the reply could not be saved: the caller still gets it (REL-4).
        headers["X-Reply-Stored"] = "false"
    return CompletionAnswer(200, completion, headers)
