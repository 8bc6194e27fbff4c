"""The Conversations API's edge (RSP-6): request models and the conversation object.

A Responses conversation is one of our conversations, under the same id. Its `metadata` (16 keys,
64/512 characters, as OpenAI's) is kept as the `metadata` of the conversation's default settings
(API-12), so every post of the conversation sends it to the model as Chat Completions' `metadata`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chat_core.chat import response_items, responses, update
from chat_core.chat.commands import ConversationSettings, UpdateConversation
from chat_core.chat.create import new_conversation
from chat_core.http.conversation_ids import openai_id
from chat_core.http.schemas import MetadataKey, MetadataValue
from chat_core.store.records import ConversationRecord


class ConversationCreateIn(BaseModel):
    """POST /v1/conversations: up to 20 items to start with, and metadata."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    items: list[dict[str, Any]] | None = Field(default=None, max_length=20)
    metadata: dict[MetadataKey, MetadataValue] | None = Field(default=None, max_length=16)


class ConversationUpdateIn(BaseModel):
    """POST /v1/conversations/{id}: the metadata, replaced whole."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    metadata: dict[MetadataKey, MetadataValue] = Field(max_length=16)


class ConversationItemsIn(BaseModel):
    """POST /v1/conversations/{id}/items: 1 to 20 items, stored as they are (no model call)."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    items: list[dict[str, Any]] = Field(min_length=1, max_length=20)


def conversation_object(conversation: ConversationRecord) -> dict[str, Any]:
    created = datetime.fromisoformat(conversation.created_at.replace("Z", "+00:00"))
    return {
        "id": openai_id(conversation.conversation_id),
        "object": "conversation",
        "created_at": int(created.timestamp()),
        "metadata": responses.conversation_metadata(conversation),
    }


def _defaults(conversation: ConversationRecord | None, metadata: dict[str, str]) -> dict[str, Any] | None:
    current = dict(conversation.defaults) if conversation is not None and conversation.defaults else {}
    if metadata:
        current["metadata"] = metadata
    else:
        current.pop("metadata", None)
    return current or None


def create_conversation(
    owner: str, request: ConversationCreateIn, idempotency_key: str | None
) -> dict[str, Any]:
    """A new conversation with the request's items appended (one write for them, no model call)."""
    messages = response_items.input_messages(request.items or []) if request.items else None
    system = "\n\n".join(messages.system) if messages is not None else ""
    conversation = new_conversation(
        owner, system_prompt=system or None, defaults=_defaults(None, dict(request.metadata or {}))
    )
    if messages is not None and messages.messages:
        key = f"{idempotency_key}:items" if idempotency_key is not None else None
        responses.append_items(owner, conversation.conversation_id, messages.messages, key)
    return conversation_object(conversation)


def update_metadata(owner: str, conversation_id: str, request: ConversationUpdateIn) -> dict[str, Any]:
    conversation = responses.live(owner, conversation_id)
    defaults = _defaults(conversation, dict(request.metadata))
    changes = UpdateConversation(frozenset({"defaults"}), ConversationSettings(defaults=defaults))
    update.update_conversation(owner, conversation_id, changes)
    return conversation_object(responses.live(owner, conversation_id))
