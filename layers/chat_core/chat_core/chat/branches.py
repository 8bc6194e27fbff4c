"""Edit and regenerate (API-18): posts that continue from another message than the active leaf.

An edit continues from the edited user message's parent (a new user message beside it, then the model's
answer); a regeneration from the replaced answer's parent (a new answer beside it). Both move the active
leaf to their answer. Messages are never rewritten: a branch is new messages whose parent is an older
one, and the conversation's `active_leaf` says which path is active (see store/tree.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, Unpack

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


class PostOptions(TypedDict, total=False):
    """What an edit or a regeneration hands on to the post it runs."""

    idempotency_key: str | None
    context: Any
    provider: ChatProvider | None
    on_chunk: ChunkSink | None


def edit_message(
    owner: str, conversation_id: str, message_id: str, request: PostMessage, **options: Unpack[PostOptions]
) -> PostOutcome:
    """POST .../messages/{message_id}/edit: a new user message beside `message_id` (same parent), and
    the model's answer to it on the new branch, which becomes the active path."""
    _, target = find_target(owner, conversation_id, message_id)
    _check_role(message_id, target.role, "user", "only a user message can be edited")
    metrics.add_metric(name="MessagesEdited", unit=MetricUnit.Count, value=1)
    return post_message(owner, request, branch=Branch("edit", target, tree.parent_seq(target)), **options)


def regenerate_message(
    owner: str, conversation_id: str, message_id: str, request: PostMessage, **options: Unpack[PostOptions]
) -> PostOutcome:
    """POST .../messages/{message_id}/regenerate: a new answer beside the answer `message_id`, from the
    same context (the path up to the message it answered); the new answer's branch becomes active."""
    _, target = find_target(owner, conversation_id, message_id)
    _check_role(message_id, target.role, "assistant", "only an answer can be regenerated")
    parent = tree.parent_seq(target)
    if parent == tree.ROOT:
        raise InvalidInput("this answer replies to no message: there is nothing to answer again")
    metrics.add_metric(name="AnswersRegenerated", unit=MetricUnit.Count, value=1)
    return post_message(owner, request, branch=Branch("regenerate", target, parent), **options)


#: What to do instead, when the message is of the other role.
_INSTEAD = {"user": "regenerate an answer instead", "assistant": "edit a user message instead"}


def _check_role(message_id: str, found: str, role: str, rule: str) -> None:
    """An edit starts from a user message, a regeneration from an answer: 422 for another role."""
    if found != role:
        raise InvalidInput(
            f"message {message_id!r} is a {found} message; {rule} ({_INSTEAD[role]})", field="message_id"
        )
