"""Edit and regenerate (API-18): posts that continue from another message than the active leaf.

An edit continues from the edited user message's parent (a new user message beside it, then the model's
answer); a regeneration from the replaced answer's parent (a new answer beside it). Both move the active
leaf to their answer. Messages are never rewritten: a branch is new messages whose parent is an older
one, and the conversation's `active_leaf` says which path is active (see store/tree.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chat_core.chat.commands import PostMessage
from chat_core.chat.paths import find_target
from chat_core.chat.post import post_message
from chat_core.chat.turns import Branch
from chat_core.chat.views import PostOutcome
from chat_core.errors import InvalidInput
from chat_core.observability import MetricUnit, metrics
from chat_core.store import tree

if TYPE_CHECKING:
    from chat_core.llm.completion import ChatProvider, ChunkSink


def edit_message(
    owner: str,
    conversation_id: str,
    message_id: str,
    request: PostMessage,
    *,
    idempotency_key: str | None = None,
    context: Any = None,
    provider: ChatProvider | None = None,
    on_chunk: ChunkSink | None = None,
) -> PostOutcome:
    """POST .../messages/{message_id}/edit: a new user message beside `message_id` (same parent), and
    the model's answer to it on the new branch, which becomes the active path."""
    _, target = find_target(owner, conversation_id, message_id)
    if target.role != "user":
        raise InvalidInput(
            f"message {message_id!r} is a {target.role} message; only a user message can be edited "
            "(regenerate an answer instead)",
            field="message_id",
        )
    branch = Branch("edit", target, tree.parent_seq(target))
    metrics.add_metric(name="MessagesEdited", unit=MetricUnit.Count, value=1)
    return post_message(
        owner,
        request,
        idempotency_key=idempotency_key,
        context=context,
        provider=provider,
        on_chunk=on_chunk,
        branch=branch,
    )


def regenerate_message(
    owner: str,
    conversation_id: str,
    message_id: str,
    request: PostMessage,
    *,
    idempotency_key: str | None = None,
    context: Any = None,
    provider: ChatProvider | None = None,
    on_chunk: ChunkSink | None = None,
) -> PostOutcome:
    """POST .../messages/{message_id}/regenerate: a new answer beside the answer `message_id`, from the
    same context (the path up to the message it answered); the new answer's branch becomes active."""
    _, target = find_target(owner, conversation_id, message_id)
    if target.role != "assistant":
        raise InvalidInput(
            f"message {message_id!r} is a {target.role} message; only an answer can be regenerated "
            "(edit a user message instead)",
            field="message_id",
        )
    parent = tree.parent_seq(target)
    if parent == tree.ROOT:
        raise InvalidInput("this answer replies to no message: there is nothing to answer again")
    metrics.add_metric(name="AnswersRegenerated", unit=MetricUnit.Count, value=1)
    return post_message(
        owner,
        request,
        idempotency_key=idempotency_key,
        context=context,
        provider=provider,
        on_chunk=on_chunk,
        branch=Branch("regenerate", target, parent),
    )
