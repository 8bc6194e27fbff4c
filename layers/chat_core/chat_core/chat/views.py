"""The conversation, message and post answers as the API returns them (API-1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chat_core.chat import attachments
from chat_core.chat.rules import pending_calls
from chat_core.engine.costs import micros_to_dollars
from chat_core.store.records import ConversationRecord, MessageRecord


@dataclass(frozen=True)
class PostOutcome:
    """What a post did: the turn's messages (`body`), whether the model failed (the turn is then stored
    as an error turn) and whether the reply could be stored at all (when not, `body` carries it)."""

    body: dict[str, Any]
    model_failed: bool = False
    reply_stored: bool = True
    seq: int = 0  # the first message the post stored (an idempotent replay re-reads seq..last_seq)
    user_seq: int | None = None
    reply_seq: int | None = None
    last_seq: int = 0


def _usage(prompt: int, completion: int, total: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _answer_details(message: MessageRecord, view: dict[str, Any]) -> None:
    """API-10: how the model's answer ended and what else it sent besides text and tool calls."""
    if message.status != "ok":
        return
    if message.finish_reason:
        view["finish_reason"] = message.finish_reason
        if message.finish_reason == "length":
            view["truncated"] = True
    if message.refusal:
        view["refusal"] = message.refusal
        view["content"] = message.content or None
    extras = message.extras if isinstance(message.extras, dict) else {}
    for key in ("annotations", "function_call", "audio", "completion_id", "system_fingerprint"):
        if extras.get(key):
            view[key] = extras[key]
    details = {k: extras[k] for k in ("prompt_tokens_details", "completion_tokens_details") if extras.get(k)}
    if details:
        view["usage_details"] = details


def message_view(message: MessageRecord) -> dict[str, Any]:
    """API-1 message object: assistant messages add model and usage, error ones add error.

    Only when they apply: `tool_calls` (content may then be null), `tool_call_id` and `name` on tool
    results, `pinned: true`; on a model's answer (API-10) `finish_reason`, `truncated: true` when it was
    cut at its length limit, `refusal` (content is then null), and `annotations`, `function_call`,
    `audio`, `usage_details` (cached and reasoning tokens), `completion_id` (the answer's `id`) and
    `system_fingerprint` as the model sent them.
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
    if message.parts:
        # API-15: the content parts as sent; `content` is their text. API-17: a part kept in S3 shows
        # its reference and a presigned URL instead of its bytes.
        parts = list(message.parts)
        where = (message.owner, message.conversation_id)
        view["content_parts"] = (
            attachments.view_parts(parts, *where) if attachments.has_blobs(parts) else parts
        )
    if message.pinned:
        view["pinned"] = True
    if message.metadata is not None:
        view["metadata"] = message.metadata
    if message.role == "assistant":
        usage = message.usage
        view["model"] = message.model
        view["usage"] = (
            _usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
            if usage
            else _usage(0, 0, 0)
        )
        _answer_details(message, view)
        if message.cost_status is not None:
            view["cost"] = cost_view(message.cost_micros, message.cost_status)
        if message.status in ("error", "incomplete"):
            error = message.error if isinstance(message.error, dict) else {}
            view["error"] = {
                "message": error.get("message", ""),
                "provider_response": error.get("provider_response"),
            }
    return view


def cost_view(micros: int | None, status: str | None = None) -> dict[str, Any]:
    """COST-2: a cost for people and programs: integer micro-dollars (None: the model has no price),
    the same in dollars, and how it was found (`reported` usage, `estimated` from the local count,
    `unknown`)."""
    view: dict[str, Any] = {
        "micros": micros,
        "usd": micros_to_dollars(micros) if micros is not None else None,
    }
    if status is not None:
        view["status"] = status
    return view


def conversation_view(conversation: ConversationRecord) -> dict[str, Any]:
    """The conversation object: settings, counts, usage as reported and the local count beside it (TOK-6)."""
    local_prompt, local_completion = (
        conversation.local_prompt_tokens,
        conversation.local_completion_tokens,
    )
    _, pending = pending_calls(conversation)
    return {
        "conversation_id": conversation.conversation_id,
        "key": conversation.conversation_key,
        "title": conversation.title,
        "system_prompt": conversation.system_prompt,
        "model": conversation.model,
        "window_policy": conversation.window_policy,
        "defaults": conversation.defaults or None,
        "message_count": conversation.message_count,
        "usage": _usage(
            conversation.prompt_tokens, conversation.completion_tokens, conversation.total_tokens
        ),
        "local_usage": _usage(local_prompt, local_completion, local_prompt + local_completion),
        # COST-2: what its replies cost so far; `unpriced_calls` replies were of a model without a price.
        "cost": {
            **cost_view(conversation.cost_micros or 0),
            "unpriced_calls": conversation.unpriced_calls,
        },
        "turn_count": conversation.turn_count,
        "pinned_message_ids": [e["message_id"] for e in conversation.pinned or []],
        # Tool calls of the model's last answer still waiting for results (post them to continue).
        "pending_tool_calls": pending,
        "created_at": conversation.created_at,
        "updated_at": conversation.updated_at,
    }


def post_body(
    conversation_id: str,
    recorded: Sequence[MessageRecord],
    user: MessageRecord | None,
    assistant: MessageRecord | None,
    view: Callable[[MessageRecord], dict[str, Any]] = message_view,
) -> dict[str, Any]:
    """`{conversation_id, messages?, user_message, assistant_message}`: `messages` (the tool messages the
    post recorded) only when there were some; `user_message` is null on a post of tool results and
    `assistant_message` null when the turn ended at MAX_TURN_STEPS without asking the model again.
    `view` renders each message (the post's adds `parent_id`, API-18)."""
    body: dict[str, Any] = {"conversation_id": conversation_id}
    if recorded:
        body["messages"] = [view(m) for m in recorded]
    body["user_message"] = view(user) if user is not None else None
    body["assistant_message"] = view(assistant) if assistant is not None else None
    return body
