"""The read-only routes: list conversations, one conversation with its messages, the turn log."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chat_core.chat import paths
from chat_core.chat.paging import decode_cursor, encode_cursor
from chat_core.chat.rules import check_id, not_found
from chat_core.chat.views import conversation_view
from chat_core.observability import MetricUnit, metrics
from chat_core.store import conversations as store
from chat_core.store.keys import (
    EVENT_SK_PREFIX,
    MESSAGE_SK_PREFIX,
    META_SK,
    conversation_pk,
    is_valid_id,
    owner_pk,
    turn_prefix,
)

LIST_SCOPE = "conversations"


MESSAGES_SCOPE = "messages"


EVENTS_SCOPE = "events"


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
    """GET /conversations/{id}: the conversation and one page of its active path's messages, oldest
    first, each with its `parent_id` (API-18; deleted messages left out)."""
    check_id(conversation_id)
    pk = conversation_pk(owner, conversation_id)
    scope = f"{MESSAGES_SCOPE}:{conversation_id}"

    def mine(key: Mapping[str, str]) -> bool:
        return set(key) == {"pk", "sk"} and key["pk"] == pk and key["sk"].startswith(MESSAGE_SK_PREFIX)

    start = decode_cursor(owner, scope, cursor, mine) if cursor is not None else None
    conversation = store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        raise not_found(conversation_id)
    messages, last_key = paths.path_page(owner, conversation, limit, start)
    metrics.add_metric(name="ConversationsRead", unit=MetricUnit.Count, value=1)
    view = conversation_view(conversation)
    view["messages"] = messages
    view["next_cursor"] = encode_cursor(owner, scope, last_key) if last_key else None
    return view


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
    check_id(conversation_id)
    pk = conversation_pk(owner, conversation_id)
    scope = f"{EVENTS_SCOPE}:{conversation_id}:{'*' if turn is None else turn}"
    prefix = EVENT_SK_PREFIX if turn is None else turn_prefix(turn)

    def mine(key: Mapping[str, str]) -> bool:
        return set(key) == {"pk", "sk"} and key["pk"] == pk and key["sk"].startswith(prefix)

    start = decode_cursor(owner, scope, cursor, mine) if cursor is not None else None
    conversation = store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        raise not_found(conversation_id)
    page = store.page_events(owner, conversation_id, limit, start, turn=turn)
    metrics.add_metric(name="EventsRead", unit=MetricUnit.Count, value=1)
    return EventsPage(
        lines=[event.to_line() for event in page.items],
        next_cursor=encode_cursor(owner, scope, page.last_key) if page.last_key else None,
    )
