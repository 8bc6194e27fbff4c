"""What each HTTP route answers: its success status and body model, the other statuses it answers and with
which body, its errors and the request details the resolvers cannot describe (REL-7, DES-1). The OpenAPI
document (`chat_core.http.openapi_doc`) is written from this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel

from chat_core.http.answers import (
    ActiveOut,
    AppendedOut,
    BudgetSetOut,
    ConversationDetailOut,
    ConversationOut,
    ConversationPageOut,
    DeletedOut,
    ErrorOut,
    MessageOut,
    PostMessageOut,
    ReplyNotStoredOut,
    TreeOut,
    UsageReportOut,
    WindowOut,
)
from chat_core.http.dialogue_answers import (
    AddEntriesOut,
    DialogueDeletedOut,
    DialoguesOut,
    EntryDeletedOut,
    HistoryOut,
    ImportJobOut,
    ImportOut,
    PromptOut,
    SaveAnswerOut,
    SavesOut,
    WorldDeletedOut,
    WorldExportOut,
    WorldsOut,
)
from chat_core.http.limits import MAX_IDEMPOTENCY_KEY_CHARS
from chat_core.http.memory_answers import MemoryItemOut, MemoryNamespacesOut, MemorySearchOut
from chat_core.http.openai_answers import ChatCompletionOut, ModelListOut, OpenAIErrorOut
from chat_core.http.user_data_answers import ErasureOut, ExportOut, UserImportOut


@dataclass(frozen=True)
class RouteDoc:
    """What one route answers: success status and body model (None = no body), errors, extra request docs."""

    success: int
    model: type[BaseModel] | None
    errors: tuple[int, ...]
    media_type: str = "application/json"
    more_media: tuple[str, ...] = ()  # other media types of a bodiless-model success (static files)
    also: Mapping[int, type[BaseModel]] = field(default_factory=dict)  # other statuses with a body
    parameters: tuple[Mapping[str, Any], ...] = ()
    request_body: Mapping[str, Any] | None = None
    headers: Mapping[str, Any] | None = None  # response headers of the success status
    error_model: type[BaseModel] = ErrorOut


READ = (400, 401, 404, 422, 503)
WRITE = (400, 401, 404, 409, 413, 415, 422, 503)
_IDEMPOTENCY_KEY: Final = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "API-6: the same key returns the first result and never stores the message twice.",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY_CHARS},
}

_NEXT_CURSOR: Final = {
    "X-Next-Cursor": {
        "description": "The cursor of the next page (absent on the last page).",
        "schema": {"type": "string"},
    }
}

_CONVERSATION_HEADER: Final = {
    "name": "X-Conversation-Id",
    "in": "header",
    "required": False,
    "description": "API-13: the conversation of this turn (or `conversation` in the body); none creates one.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 64},
}
_CONVERSATION_OUT: Final = {
    "X-Conversation-Id": {
        "description": "The conversation the turn was stored in.",
        "required": True,
        "schema": {"type": "string"},
    }
}

ROUTES: Final[Mapping[str, RouteDoc]] = {
    "POST /conversations": RouteDoc(201, ConversationOut, (400, 401, 409, 413, 415, 422, 503)),
    # API-21: conversations named by a key the caller chooses.
    # A key outside the allowed characters may not even match the route: 404 route_not_found.
    "PUT /conversation-keys/{key}": RouteDoc(
        200, ConversationOut, (400, 401, 404, 409, 413, 415, 422, 503), also={201: ConversationOut}
    ),
    "GET /conversation-keys/{key}": RouteDoc(200, ConversationDetailOut, READ),
    "POST /messages": RouteDoc(
        201,
        PostMessageOut,
        (*WRITE, 429, 502),
        also={502: PostMessageOut, 503: ReplyNotStoredOut},
        parameters=(_IDEMPOTENCY_KEY,),
    ),
    "GET /conversations": RouteDoc(200, ConversationPageOut, (400, 401, 422, 503)),
    "GET /conversations/{conversation_id}": RouteDoc(200, ConversationDetailOut, READ),
    "DELETE /conversations/{conversation_id}": RouteDoc(204, None, (401, 404, 503)),
    "PATCH /conversations/{conversation_id}": RouteDoc(200, ConversationOut, WRITE),
    "POST /conversations/{conversation_id}/window": RouteDoc(200, WindowOut, WRITE),
    "GET /conversations/{conversation_id}/events": RouteDoc(
        200, None, READ, media_type="application/x-ndjson", headers=_NEXT_CURSOR
    ),
    "PATCH /conversations/{conversation_id}/messages/{message_id}": RouteDoc(200, MessageOut, WRITE),
    # Branches and history (API-18..20).
    "POST /conversations/{conversation_id}/messages/{message_id}/edit": RouteDoc(
        201,
        PostMessageOut,
        (*WRITE, 429, 502),
        also={502: PostMessageOut, 503: ReplyNotStoredOut},
        parameters=(_IDEMPOTENCY_KEY,),
    ),
    "POST /conversations/{conversation_id}/messages/{message_id}/regenerate": RouteDoc(
        201,
        PostMessageOut,
        (*WRITE, 429, 502),
        also={502: PostMessageOut, 503: ReplyNotStoredOut},
        parameters=(_IDEMPOTENCY_KEY,),
    ),
    "GET /conversations/{conversation_id}/tree": RouteDoc(200, TreeOut, READ),
    "PUT /conversations/{conversation_id}/active": RouteDoc(200, ActiveOut, WRITE),
    "POST /conversations/{conversation_id}/messages": RouteDoc(
        201, AppendedOut, WRITE, parameters=(_IDEMPOTENCY_KEY,)
    ),
    "DELETE /conversations/{conversation_id}/messages/{message_id}": RouteDoc(
        200, DeletedOut, (400, 401, 404, 409, 503)
    ),
    # OpenAI-compatible (API-13): OpenAI's error shape; bad input is 400, as OpenAI answers it.
    "POST /v1/chat/completions": RouteDoc(
        200,
        ChatCompletionOut,
        (400, 401, 404, 409, 413, 415, 429, 502, 503),
        parameters=(_IDEMPOTENCY_KEY, _CONVERSATION_HEADER),
        headers=_CONVERSATION_OUT,
        error_model=OpenAIErrorOut,
    ),
    "GET /v1/models": RouteDoc(200, ModelListOut, (401,), error_model=OpenAIErrorOut),
    # Costs and budgets (COST-3, COST-4).
    "GET /usage": RouteDoc(200, UsageReportOut, (400, 401, 403, 422, 503)),
    "PUT /budgets/{user_id}": RouteDoc(200, BudgetSetOut, (400, 401, 403, 404, 413, 415, 422, 503)),
    # A user's data (PRV-1, PRV-2): the user themselves or an administrator; jobs, so 202 first.
    "POST /users/{user_id}/erasure": RouteDoc(202, ErasureOut, (400, 401, 403, 404, 503)),
    "GET /users/{user_id}/erasure": RouteDoc(200, ErasureOut, (400, 401, 403, 404, 503)),
    "POST /users/{user_id}/exports": RouteDoc(202, ExportOut, (400, 401, 403, 404, 503)),
    "GET /users/{user_id}/exports/{export_id}": RouteDoc(200, ExportOut, (400, 401, 403, 404, 503)),
    "POST /users/{user_id}/imports": RouteDoc(202, UserImportOut, (400, 401, 403, 404, 503)),
    "POST /users/{user_id}/imports/{import_id}/start": RouteDoc(
        202, UserImportOut, (400, 401, 403, 404, 409, 503)
    ),
    "GET /users/{user_id}/imports/{import_id}": RouteDoc(200, UserImportOut, (400, 401, 403, 404, 503)),
    # Dialogue memory (seed 004).
    "POST /worlds/{world_id}/dialogues/entries": RouteDoc(
        201, AddEntriesOut, WRITE, also={200: AddEntriesOut}
    ),
    "GET /worlds/{world_id}/history": RouteDoc(200, HistoryOut, READ),
    "GET /worlds": RouteDoc(200, WorldsOut, READ),
    # CON-1: the console's page and files (no identity needed; 404 for any other name).
    "GET /console": RouteDoc(200, None, (404,), media_type="text/html"),
    "GET /console/{file+}": RouteDoc(
        200, None, (404,), media_type="text/javascript", more_media=("text/css", "text/html")
    ),
    "GET /worlds/{world_id}/dialogues": RouteDoc(200, DialoguesOut, READ),
    "POST /worlds/{world_id}/prompt": RouteDoc(200, PromptOut, WRITE),
    "DELETE /worlds/{world_id}": RouteDoc(200, WorldDeletedOut, (400, 401, 404, 503)),
    "DELETE /worlds/{world_id}/dialogues/{dialogue_id}": RouteDoc(
        200, DialogueDeletedOut, (400, 401, 404, 503)
    ),
    "DELETE /worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}": RouteDoc(
        200, EntryDeletedOut, (400, 401, 404, 503)
    ),
    "POST /worlds/{world_id}/saves": RouteDoc(201, SaveAnswerOut, WRITE),
    "GET /worlds/{world_id}/saves": RouteDoc(200, SavesOut, READ),
    "POST /worlds/{world_id}/saves/{save_id}/load": RouteDoc(200, SaveAnswerOut, (400, 401, 404, 409, 503)),
    "DELETE /worlds/{world_id}/saves/{save_id}/load": RouteDoc(200, SaveAnswerOut, (400, 401, 404, 409, 503)),
    "POST /worlds/{world_id}/exports": RouteDoc(201, WorldExportOut, (400, 401, 404, 503)),
    "POST /worlds/{world_id}/imports": RouteDoc(202, ImportJobOut, (400, 401, 404, 409, 503)),
    "POST /worlds/{world_id}/imports/{job_id}/start": RouteDoc(202, ImportJobOut, (400, 401, 404, 409, 503)),
    "GET /worlds/{world_id}/imports/{job_id}": RouteDoc(200, ImportJobOut, (400, 401, 404, 503)),
    "GET /worlds/{world_id}/export": RouteDoc(200, None, READ, media_type="application/x-ndjson"),
    # MEM-20..23: memory items by namespace and key (LangGraph's store).
    "PUT /memory/items": RouteDoc(200, MemoryItemOut, (400, 401, 413, 415, 422, 503)),
    "GET /memory/items": RouteDoc(200, MemoryItemOut, READ),
    "DELETE /memory/items": RouteDoc(204, None, (400, 401, 422, 503)),
    "POST /memory/items/search": RouteDoc(200, MemorySearchOut, (400, 401, 413, 415, 422, 503)),
    "POST /memory/items/namespaces": RouteDoc(200, MemoryNamespacesOut, (400, 401, 413, 415, 422, 503)),
    "POST /worlds/{world_id}/import": RouteDoc(
        201,
        ImportOut,
        WRITE,
        request_body={
            "required": True,
            "description": "A world export: JSON Lines, one dialogue or entry per line.",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        },
    ),
}

ERROR_TEXT: Final = {
    400: "Bad input: malformed JSON, a bad cursor or header",
    401: "No caller identity (JWT `sub`, or X-User-Id on the local server)",
    403: "Only an administrator (ADMIN_GROUP) may read or set another user's usage, budget or data",
    404: "Not found, or not the caller's (isolation answers 404, never 403)",
    405: "Method not allowed on this path",
    409: "Conflict: busy conversation (retry after Retry-After), key in progress, world not empty",
    413: "Request body over the route's size limit",
    415: "The body must be application/json",
    422: "Validation error: the body or a parameter is out of its documented bounds",
    429: "budget_exceeded (COST-4): the caller reached a budget, or rate_limited (OPS-4): the caller's "
    "requests to the model this minute reached the limit; nothing was stored; Retry-After is when the "
    "window resets",
    502: "The model provider failed; the turn is stored with an error reply (same body as 201)",
    503: "The database is busy or unreachable after retries; retry after Retry-After (on POST /messages, "
    "reply_not_stored: the model answered but its reply could not be saved; the body carries it)",
}
RETRY_AFTER: Final = {
    "description": "Seconds to wait before retrying.",
    "schema": {"type": "string", "pattern": "^[0-9]+$"},
}
