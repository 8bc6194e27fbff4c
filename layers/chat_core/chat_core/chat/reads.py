"""The read-only routes: list conversations, one conversation with its messages, the turn log."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chat_core.chat import paths
from chat_core.chat.paging import decode_cursor, encode_cursor
from chat_core.chat.rules import check_id, not_found
from chat_core.chat.views import conversation_view
from chat_core.observability import MetricUnit, metrics
from chat_core.store import conversations as store
from chat_core.store import turn_reads
from chat_core.store.keys import (
    EVENT_SK_PREFIX,
    MESSAGE_SK_PREFIX,
    META_SK,
    conversation_pk,
    is_valid_id,
    owner_pk,
    turn_prefix,
)
from chat_core.store.records import ConversationRecord

LIST_SCOPE = "conversations"


MESSAGES_SCOPE = "messages"


EVENTS_SCOPE = "events"


def list_conversations(
    owner: str, *, limit: int, cursor: str | None = None, query: str | None = None
) -> dict[str, Any]:
    """GET /conversations: live conversations, `updated_at` newest first, one Query on the sparse index.

    With `query` (API-23) the index is read in pages of SEARCH_PAGE and titles containing every word
    of it (case- and accent-insensitive) are kept; one request reads at most SEARCH_MAX_PAGES pages, so
    a page of results may be short with a `next_cursor` that goes on searching.
    """
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
    metrics.add_metric(name="ConversationsListed", unit=MetricUnit.Count, value=1)
    words = _words(query) if query is not None else []
    if words:
        found, last_key = _search(owner, limit, start, words)
    else:
        page = store.page_conversations(owner, limit, start)
        found, last_key = page.items, page.last_key
    return {
        "items": [conversation_view(c) for c in found],
        "next_cursor": encode_cursor(owner, LIST_SCOPE, last_key) if last_key else None,
    }


SEARCH_PAGE = 100
SEARCH_MAX_PAGES = 10


def _words(text: str) -> list[str]:
    """Text folded for matching: decomposed, accents dropped, casefolded, split into words."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().split()


def _search(
    owner: str, limit: int, start: Mapping[str, str] | None, words: list[str]
) -> tuple[list[ConversationRecord], dict[str, str] | None]:
    """API-23: newest first, the conversations whose title holds every word; the key to go on from."""
    found: list[ConversationRecord] = []
    for _ in range(SEARCH_MAX_PAGES):
        page = store.page_conversations(owner, SEARCH_PAGE, start)
        for index, conversation in enumerate(page.items):
            title = " ".join(_words(conversation.title or ""))
            if all(word in title for word in words):
                found.append(conversation)
                if len(found) == limit:
                    more = index < len(page.items) - 1 or page.last_key is not None
                    return found, conversation.listing_key() if more else None
        if page.last_key is None:
            return found, None
        start = page.last_key
    return found, dict(start) if start else None


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

    One GetItem (the conversation must be the caller's and live), then a Query of the EventItems and one
    of the messages that carry events (store.turn_reads).
    """
    check_id(conversation_id)
    pk = conversation_pk(owner, conversation_id)
    scope = f"{EVENTS_SCOPE}:{conversation_id}:{'*' if turn is None else turn}"
    prefix = EVENT_SK_PREFIX if turn is None else turn_prefix(turn)

    def mine(key: Mapping[str, str]) -> bool:
        if not {"pk", "sk"} <= set(key) <= {"pk", "sk", "msk"} or not key.get(
            "msk", MESSAGE_SK_PREFIX
        ).startswith(MESSAGE_SK_PREFIX):
            return False
        return key["pk"] == pk and key["sk"].startswith(prefix)

    start = decode_cursor(owner, scope, cursor, mine) if cursor is not None else None
    conversation = store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        raise not_found(conversation_id)
    page = turn_reads.page_events(conversation, limit, start, turn=turn)
    metrics.add_metric(name="EventsRead", unit=MetricUnit.Count, value=1)
    return EventsPage(
        lines=page.items,
        next_cursor=encode_cursor(owner, scope, page.last_key) if page.last_key else None,
    )
