"""What each HTTP route answers, as pydantic models and OpenAPI responses (docs and conformance tests).

`document_responses(document)` rewrites an OpenAPI document built from the Powertools resolvers (which
only know "200" and their own 422 shape) so every operation lists the statuses it really answers: its
success status with the body's schema, and the one error shape of every 4xx/5xx (DES-1). Routes this
module does not know (added later) get a generic "2XX" and the same errors, so they stay documented.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from chat_core.http.api import MAX_IDEMPOTENCY_KEY_CHARS
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema


class _Out(BaseModel):
    """Response bodies may grow new fields; clients must ignore what they do not know."""

    model_config = ConfigDict(extra="allow")


class ErrorDetail(_Out):
    field: str | None = None
    problem: str | None = None


class ErrorInfo(_Out):
    code: str
    message: str
    details: list[ErrorDetail] | None = None


class ErrorOut(BaseModel):
    """`{"error": {"code", "message"[, "details"]}}`: every 4xx and 5xx."""

    model_config = ConfigDict(extra="forbid")
    error: ErrorInfo


class UsageOut(_Out):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CostOut(_Out):
    """COST-2: integer micro-dollars (null: the model has no price), the same in dollars, and how it was
    found: `reported` (the provider's usage), `estimated` (the local count) or `unknown`."""

    micros: int | None
    usd: str | None
    status: Literal["reported", "estimated", "unknown"]


class ConversationCostOut(_Out):
    """COST-2: what the conversation's replies cost; `unpriced_calls` were of a model without a price."""

    micros: int
    usd: str
    unpriced_calls: int


class MessageErrorOut(_Out):
    message: str
    provider_response: dict[str, Any] | None = None


class FunctionCallOut(_Out):
    name: str
    arguments: str


class ToolCallOut(_Out):
    """A tool call the model asked for, as the model sent it (OpenAI `tool_calls[]`)."""

    id: str
    type: Literal["function"]
    function: FunctionCallOut


class UsageDetailsOut(_Out):
    """The provider's usage breakdown as it sent it (e.g. cached_tokens, reasoning_tokens)."""

    prompt_tokens_details: dict[str, int] | None = None
    completion_tokens_details: dict[str, int] | None = None


class AudioOut(_Out):
    """A spoken answer: its id and transcript (the audio bytes are not stored)."""

    id: str | None = None
    transcript: str | None = None
    expires_at: int | None = None


class PendingToolCallOut(_Out):
    id: str
    name: str


class BlobOut(_Out):
    """API-17: a content part kept in the blob bucket: the digest of the value as posted, the object's
    size and media type, and a presigned GET URL of the object (valid `expires_in` seconds)."""

    sha256: str
    bytes: int
    media_type: str
    url: str | None = None
    expires_in: int | None = None


class ContentPartOut(_Out):
    """API-15: one content part as posted (`text`, `image_url`, `input_audio` or `file`); a part kept in
    S3 (API-17) has its data left out of `image_url`/`input_audio`/`file` and carries `blob`."""

    type: Literal["text", "image_url", "input_audio", "file"]
    text: str | None = None
    image_url: dict[str, Any] | None = None
    input_audio: dict[str, Any] | None = None
    file: dict[str, Any] | None = None
    blob: BlobOut | None = None


class MessageOut(_Out):
    """API-1: a stored message; assistant messages add model and usage, failed ones add error. Only when
    they apply: `tool_calls` (content may then be null), `tool_call_id` and `name` on tool results,
    `pinned: true`, and `stored: false` on the reply a 503 reply_not_stored carries. A model's answer
    (API-10) adds `finish_reason`, `truncated: true` when it was cut at its length limit, `refusal`
    (content is then null), and `annotations`, `function_call`, `audio`, `usage_details` as sent."""

    message_id: str
    conversation_id: str
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None
    status: Literal["ok", "error", "incomplete"]
    created_at: str
    model: str | None = None
    usage: UsageOut | None = None
    error: MessageErrorOut | None = None
    tool_calls: list[ToolCallOut] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    #: API-15: a user message's content parts as sent (`content` is their text).
    content_parts: list[ContentPartOut] | None = None
    pinned: Literal[True] | None = None
    stored: Literal[False] | None = None
    finish_reason: str | None = None
    truncated: Literal[True] | None = None
    refusal: str | None = None
    annotations: list[dict[str, Any]] | None = None
    function_call: dict[str, Any] | None = None
    audio: AudioOut | None = None
    usage_details: UsageDetailsOut | None = None
    #: The model's own id of this answer ("chatcmpl-...") and its system fingerprint, as it sent them.
    completion_id: str | None = None
    system_fingerprint: str | None = None
    #: API-18: the message this one follows (null for a first message); left out of a post's answer when
    #: it is a reply still being written. `deleted_at` on a message removed from the path (API-20).
    parent_id: str | None = None
    deleted_at: str | None = None
    #: API-22: what the client kept with an appended message, as given.
    metadata: dict[str, Any] | None = None
    #: COST-2: what a model's answer cost.
    cost: CostOut | None = None


class ConversationOut(_Out):
    conversation_id: str
    #: API-21: the name the caller gave it (`PUT /conversation-keys/{key}`), unique per user.
    key: str | None = None
    title: str | None
    system_prompt: str | None
    model: str
    window_policy: dict[str, Any] | None
    #: API-12: the Chat Completions settings every post sends unless it says otherwise.
    defaults: dict[str, Any] | None
    message_count: int
    usage: UsageOut
    local_usage: UsageOut
    cost: ConversationCostOut
    turn_count: int
    pinned_message_ids: list[str]
    pending_tool_calls: list[PendingToolCallOut]
    created_at: str
    updated_at: str


class ConversationPageOut(_Out):
    items: list[ConversationOut]
    next_cursor: str | None


class ConversationDetailOut(ConversationOut):
    messages: list[MessageOut]
    next_cursor: str | None


class PostMessageOut(_Out):
    """201 (and 502 when the model failed, API-2): the turn. `messages` lists the tool results a post
    recorded; `user_message` is null on a post of tool results; a replay of a turn whose reply was never
    stored has no assistant message."""

    conversation_id: str
    messages: list[MessageOut] | None = None
    user_message: MessageOut | None
    assistant_message: MessageOut | None


class ReplyNotStoredOut(PostMessageOut):
    """503 reply_not_stored: the model answered, its reply could not be saved, and here it is."""

    error: ErrorInfo


class TreeMessageOut(MessageOut):
    """API-18: a message of the tree: its children (ids, oldest first) and whether it is on the active
    path."""

    children: list[str]
    active: bool


class TreeOut(_Out):
    """GET /conversations/{id}/tree: one page of every message, in seq order."""

    conversation_id: str
    active_message_id: str | None
    messages: list[TreeMessageOut]
    next_cursor: str | None


class ActiveOut(ConversationOut):
    """PUT /conversations/{id}/active: the conversation, and the message its active path now ends at."""

    active_message_id: str


class AppendedOut(_Out):
    """API-19: the messages stored, in order."""

    conversation_id: str
    messages: list[MessageOut]


class DeletedOut(_Out):
    """API-20: the messages removed (the message and the results of its tool calls; empty when it was
    removed before)."""

    conversation_id: str
    deleted: list[MessageOut]


class AmountOut(_Out):
    micros: int
    usd: str


class UsageRowOut(_Out):
    """COST-3: calls, tokens and cost of one model (or of all, in totals)."""

    model: str | None = None
    calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost: AmountOut
    unpriced_calls: int
    estimated_calls: int


class UsageDayOut(_Out):
    date: str
    models: list[UsageRowOut]
    totals: UsageRowOut


class LimitsOut(_Out):
    """COST-4: limits in effect; null is no limit."""

    daily_tokens: int | None
    daily_usd: str | None
    monthly_tokens: int | None
    monthly_usd: str | None


class SpentOut(AmountOut):
    tokens: int


class ReachedOut(_Out):
    window: Literal["daily", "monthly"]
    limit: Literal["tokens", "cost"]


class BudgetOut(_Out):
    limits: LimitsOut
    today: SpentOut
    this_month: SpentOut
    daily_resets_at: str
    monthly_resets_at: str
    over: bool
    reached: list[ReachedOut]


class UsageReportOut(_Out):
    """COST-3: GET /usage: the user's days by model, the range's totals, the budget as it stands."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    user_id: str
    from_: str = Field(alias="from")
    to: str
    days: list[UsageDayOut]
    models: list[UsageRowOut]
    totals: UsageRowOut
    budget: BudgetOut


class BudgetSetOut(_Out):
    """COST-4: PUT /budgets/{user_id}; `warning` when budgets are not enforced in this deployment."""

    user_id: str
    budget: BudgetOut
    warning: str | None = None


class WindowOut(_Out):
    messages: list[dict[str, Any]]
    #: API-11: what the model call would carry besides the messages (tools, temperature, ...).
    settings: dict[str, Any]
    stats: dict[str, Any]
    #: WIN-6: `entries` (each stored message the window could use: tokens, state, reason, pinned,
    #: tool_group, preview), `summary` (from_seq, to_seq, tokens, text, included) and `budget`
    #: (context_length, reserve_tokens, token_budget, tokens_used).
    inspect: dict[str, Any]


class EntryOut(_Out):
    """A dialogue line (seed 004 DialogueEntry) as stored."""

    dialogue_id: str
    entry_id: str
    participant_id: str
    role: str
    content: str
    game_tick: int
    seq: int
    created_at: str
    name: str | None = None
    #: DLG-3: who perceived it, present only when that was not every participant of its dialogue.
    audience: list[str] | None = None
    visibility: Literal["public", "private", "whisper"] | None = None
    kind: Literal["join", "leave"] | None = None


class AddEntriesOut(_Out):
    """201 when anything was stored, 200 when every entry_id was stored before (a replay)."""

    world_id: str
    dialogue_id: str
    entries: list[EntryOut]
    created: int
    duplicates: int


class HistoryEntryOut(EntryOut):
    #: DLG-2: the entry's tick on the default calendar as a prompt line shows it, e.g.
    #: "[Time: 5500 Aprimay 2, 1h]".
    game_time: str


class HistoryOut(_Out):
    """Seed 004 HistoricalContext: `primary` (exactly these participants) and `ancillary`; with `for`
    only what that participant perceived (DLG-3). Asked with `for` alone: `witnessed`, everything it
    perceived in any dialogue, instead of the five dialogue fields."""

    world_id: str
    limit: int
    for_: str | None = Field(alias="for")
    participants: list[str] | None = None
    dialogue_id: str | None = None
    primary: list[HistoryEntryOut] | None = None
    ancillary: list[HistoryEntryOut] | None = None
    ancillary_dialogues: list[str] | None = None
    witnessed: list[HistoryEntryOut] | None = None


class WorldOut(_Out):
    world_id: str
    dialogues: int
    created_at: str


class WorldsOut(_Out):
    """DLG-2: GET /worlds: the caller's worlds by id; `next_cursor` is the last id when more remain."""

    items: list[WorldOut]
    next_cursor: str | None


class DialogueOut(_Out):
    dialogue_id: str
    participants: list[str]
    created_at: str


class DialoguesOut(_Out):
    """DLG-2: GET /worlds/{world_id}/dialogues: the world's dialogues by id."""

    world_id: str
    items: list[DialogueOut]
    next_cursor: str | None


class PromptMessageOut(_Out):
    role: Literal["system", "user", "assistant"]
    content: str
    name: str | None = None
    message_id: str | None = None


class PromptOut(_Out):
    """Seed 004 PromptPayload: OpenAI chat messages in send order, and what was kept and dropped."""

    messages: list[PromptMessageOut]
    stats: dict[str, Any]


class WorldDeletedOut(_Out):
    """DLG-4: the world is gone from every route; its items are purged after `purge_after`."""

    world_id: str
    deleted_at: str
    purge_after: str


class DialogueDeletedOut(_Out):
    world_id: str
    dialogue_id: str
    entries_deleted: int


class EntryDeletedOut(_Out):
    world_id: str
    dialogue_id: str
    deleted: EntryOut


class SaveOut(_Out):
    """DLG-5: a save game; `loaded_at` is when it was loaded (null: not loaded)."""

    save_id: str
    game_tick: int
    created_at: str
    loaded_at: str | None


class SaveAnswerOut(SaveOut):
    world_id: str
    #: POST /saves only: whether an earlier save of this id was overwritten.
    replaced: bool | None = None


class SavesOut(_Out):
    world_id: str
    saves: list[SaveOut]


class WorldExportOut(_Out):
    """DLG-6: the export in S3 (gzip JSON Lines) and a presigned GET URL valid `expires_in` seconds."""

    world_id: str
    export_id: str
    url: str | None
    expires_in: int
    content_encoding: Literal["gzip"]
    bytes: int
    dialogues: int
    entries: int


class ImportLineError(_Out):
    line: int
    message: str


class ImportJobOut(_Out):
    """DLG-6: an import job. `status`: awaiting_upload, queued, running, done, failed; `lines_done`:
    lines written so far; `errors`: the first 100 lines refused, `error_count` all of them."""

    world_id: str
    job_id: str
    mode: Literal["restore"]
    status: Literal["awaiting_upload", "queued", "running", "done", "failed"]
    lines_done: int
    bytes_total: int | None = None
    dialogues: int
    entries: int
    errors: list[ImportLineError]
    error_count: int
    runs: int
    created_at: str
    updated_at: str
    finished_at: str | None = None
    #: POST /imports only: where to PUT the file (JSON Lines, plain or gzip), valid for the seconds given.
    upload_url: str | None = None
    upload_expires_in: int | None = None


class ImportOut(_Out):
    world_id: str
    mode: Literal["restore", "merge"]
    dialogues_created: int
    dialogues_merged: int
    entries_created: int
    entries_skipped: int


class OpenAIErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorOut(BaseModel):
    """OpenAI's error shape, on the /v1 routes only (API-13)."""

    model_config = ConfigDict(extra="forbid")
    error: OpenAIErrorInfo


class ChatCompletionMessageOut(_Out):
    role: str
    content: str | None
    refusal: str | None
    tool_calls: list[ToolCallOut] | None = None
    function_call: FunctionCallOut | None = None
    annotations: list[dict[str, Any]] | None = None
    audio: AudioOut | None = None


class ChatCompletionChoiceOut(_Out):
    index: int
    message: ChatCompletionMessageOut
    finish_reason: str
    logprobs: dict[str, Any] | None


class ChatCompletionUsageOut(_Out):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: dict[str, int] | None = None
    completion_tokens_details: dict[str, int] | None = None


class ChatCompletionOut(_Out):
    """POST /v1/chat/completions: the chat.completion the model answered, plus `conversation`."""

    id: str
    object: str
    created: int
    model: str
    choices: list[ChatCompletionChoiceOut]
    usage: ChatCompletionUsageOut
    system_fingerprint: str | None = None
    conversation: str


class ModelOut(_Out):
    id: str
    object: str
    created: int
    owned_by: str


class ModelListOut(_Out):
    object: str
    data: list[ModelOut]


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


_READ = (400, 401, 404, 422, 503)
_WRITE = (400, 401, 404, 409, 413, 415, 422, 503)
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
    "GET /conversation-keys/{key}": RouteDoc(200, ConversationDetailOut, _READ),
    "POST /messages": RouteDoc(
        201,
        PostMessageOut,
        (*_WRITE, 429, 502),
        also={502: PostMessageOut, 503: ReplyNotStoredOut},
        parameters=(_IDEMPOTENCY_KEY,),
    ),
    "GET /conversations": RouteDoc(200, ConversationPageOut, (400, 401, 422, 503)),
    "GET /conversations/{conversation_id}": RouteDoc(200, ConversationDetailOut, _READ),
    "DELETE /conversations/{conversation_id}": RouteDoc(204, None, (401, 404, 503)),
    "PATCH /conversations/{conversation_id}": RouteDoc(200, ConversationOut, _WRITE),
    "POST /conversations/{conversation_id}/window": RouteDoc(200, WindowOut, _WRITE),
    "GET /conversations/{conversation_id}/events": RouteDoc(
        200, None, _READ, media_type="application/x-ndjson", headers=_NEXT_CURSOR
    ),
    "PATCH /conversations/{conversation_id}/messages/{message_id}": RouteDoc(200, MessageOut, _WRITE),
    # Branches and history (API-18..20).
    "POST /conversations/{conversation_id}/messages/{message_id}/edit": RouteDoc(
        201,
        PostMessageOut,
        (*_WRITE, 429, 502),
        also={502: PostMessageOut, 503: ReplyNotStoredOut},
        parameters=(_IDEMPOTENCY_KEY,),
    ),
    "POST /conversations/{conversation_id}/messages/{message_id}/regenerate": RouteDoc(
        201,
        PostMessageOut,
        (*_WRITE, 429, 502),
        also={502: PostMessageOut, 503: ReplyNotStoredOut},
        parameters=(_IDEMPOTENCY_KEY,),
    ),
    "GET /conversations/{conversation_id}/tree": RouteDoc(200, TreeOut, _READ),
    "PUT /conversations/{conversation_id}/active": RouteDoc(200, ActiveOut, _WRITE),
    "POST /conversations/{conversation_id}/messages": RouteDoc(
        201, AppendedOut, _WRITE, parameters=(_IDEMPOTENCY_KEY,)
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
    # Dialogue memory (seed 004).
    "POST /worlds/{world_id}/dialogues/entries": RouteDoc(
        201, AddEntriesOut, _WRITE, also={200: AddEntriesOut}
    ),
    "GET /worlds/{world_id}/history": RouteDoc(200, HistoryOut, _READ),
    "GET /worlds": RouteDoc(200, WorldsOut, _READ),
    # CON-1: the console's page and files (no identity needed; 404 for any other name).
    "GET /console": RouteDoc(200, None, (404,), media_type="text/html"),
    "GET /console/{file+}": RouteDoc(
        200, None, (404,), media_type="text/javascript", more_media=("text/css", "text/html")
    ),
    "GET /worlds/{world_id}/dialogues": RouteDoc(200, DialoguesOut, _READ),
    "POST /worlds/{world_id}/prompt": RouteDoc(200, PromptOut, _WRITE),
    "DELETE /worlds/{world_id}": RouteDoc(200, WorldDeletedOut, (400, 401, 404, 503)),
    "DELETE /worlds/{world_id}/dialogues/{dialogue_id}": RouteDoc(
        200, DialogueDeletedOut, (400, 401, 404, 503)
    ),
    "DELETE /worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}": RouteDoc(
        200, EntryDeletedOut, (400, 401, 404, 503)
    ),
    "POST /worlds/{world_id}/saves": RouteDoc(201, SaveAnswerOut, _WRITE),
    "GET /worlds/{world_id}/saves": RouteDoc(200, SavesOut, _READ),
    "POST /worlds/{world_id}/saves/{save_id}/load": RouteDoc(200, SaveAnswerOut, (400, 401, 404, 409, 503)),
    "DELETE /worlds/{world_id}/saves/{save_id}/load": RouteDoc(200, SaveAnswerOut, (400, 401, 404, 409, 503)),
    "POST /worlds/{world_id}/exports": RouteDoc(201, WorldExportOut, (400, 401, 404, 503)),
    "POST /worlds/{world_id}/imports": RouteDoc(202, ImportJobOut, (400, 401, 404, 409, 503)),
    "POST /worlds/{world_id}/imports/{job_id}/start": RouteDoc(202, ImportJobOut, (400, 401, 404, 409, 503)),
    "GET /worlds/{world_id}/imports/{job_id}": RouteDoc(200, ImportJobOut, (400, 401, 404, 503)),
    "GET /worlds/{world_id}/export": RouteDoc(200, None, _READ, media_type="application/x-ndjson"),
    "POST /worlds/{world_id}/import": RouteDoc(
        201,
        ImportOut,
        _WRITE,
        request_body={
            "required": True,
            "description": "A world export: JSON Lines, one dialogue or entry per line.",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        },
    ),
}

_ERROR_TEXT: Final = {
    400: "Bad input: malformed JSON, a bad cursor or header",
    401: "No caller identity (JWT `sub`, or X-User-Id on the local server)",
    403: "Only an administrator (ADMIN_GROUP) may read or set another user's usage and budget",
    404: "Not found, or not the caller's (isolation answers 404, never 403)",
    405: "Method not allowed on this path",
    409: "Conflict: busy conversation (retry after Retry-After), key in progress, world not empty",
    413: "Request body over the route's size limit",
    415: "The body must be application/json",
    422: "Validation error: the body or a parameter is out of its documented bounds",
    429: "budget_exceeded (COST-4): the caller reached a budget; nothing was stored; Retry-After is when "
    "the window resets",
    502: "The model provider failed; the turn is stored with an error reply (same body as 201)",
    503: "The database is busy or unreachable after retries; retry after Retry-After (on POST /messages, "
    "reply_not_stored: the model answered but its reply could not be saved; the body carries it)",
}
_RETRY_AFTER: Final = {
    "description": "Seconds to wait before retrying.",
    "schema": {"type": "string", "pattern": "^[0-9]+$"},
}
_METHODS: Final = ("get", "put", "post", "delete", "patch", "head", "options")


def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """JSON Schemas of every response model, refs pointing into components/schemas."""
    models: list[type[BaseModel]] = [ErrorOut]
    for doc in ROUTES.values():
        models.append(doc.error_model)
        models += [doc.model] if doc.model is not None else []
        models += list(doc.also.values())
    unique = list(dict.fromkeys(models))
    refs, defs = models_json_schema(
        [(m, "serialization") for m in unique], ref_template="#/components/schemas/{model}"
    )
    return {m.__name__: refs[(m, "serialization")] for m in unique}, defs.get("$defs", {})


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": dict(schema)}}


def _error(status: int, error_ref: Mapping[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"description": _ERROR_TEXT.get(status, "Error"), "content": _json(error_ref)}
    if status in (409, 429, 503):
        response["headers"] = {"Retry-After": {**_RETRY_AFTER, "required": status in (429, 503)}}
    return response


def operation_responses(route_key: str, refs: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAPI `responses` of one route ("METHOD /path" as in template.yaml)."""
    doc = ROUTES.get(route_key)
    error_ref = refs[doc.error_model.__name__ if doc is not None else "ErrorOut"]
    if doc is None:
        # A route this module does not describe yet: any 2xx, and the one error shape otherwise.
        responses: dict[str, Any] = {"2XX": {"description": "Success (see the route's own documentation)"}}
        for status in (*_WRITE, 405):
            responses[str(status)] = _error(status, error_ref)
        return responses
    success: dict[str, Any] = {"description": "Success"}
    if doc.model is not None:
        success["content"] = {doc.media_type: {"schema": dict(refs[doc.model.__name__])}}
    elif doc.media_type != "application/json":
        success["content"] = {m: {"schema": {"type": "string"}} for m in (doc.media_type, *doc.more_media)}
    if doc.headers:
        success["headers"] = copy.deepcopy(dict(doc.headers))
    responses = {str(doc.success): success}
    for status, model in doc.also.items():
        text = _ERROR_TEXT.get(status, "Also success") if status >= 400 else "Success (nothing new stored)"
        if status in doc.errors and status != 502:
            # This status answers either the one error shape or this body (e.g. 503 reply_not_stored).
            response = _error(status, {"anyOf": [error_ref, refs[model.__name__]]})
            response["description"] = text
            responses[str(status)] = response
        else:
            responses[str(status)] = {"description": text, "content": _json(refs[model.__name__])}
    for status in doc.errors:
        responses.setdefault(str(status), _error(status, error_ref))
    return responses


def document_responses(document: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace every operation's responses with what the route really answers (in place; returned)."""
    refs, defs = _schemas()
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in defs.items():
        components[name] = schema
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        components.pop(name, None)
    for path, item in document.get("paths", {}).items():
        for method in [m for m in item if m in _METHODS]:
            route_key = f"{method.upper()} {path}"
            operation = item[method]
            operation["responses"] = operation_responses(route_key, refs)
            doc = ROUTES.get(route_key)
            if doc is None:
                continue
            if doc.request_body is not None and "requestBody" not in operation:
                operation["requestBody"] = copy.deepcopy(dict(doc.request_body))
            names = {(p.get("name"), p.get("in")) for p in operation.get("parameters", [])}
            for parameter in doc.parameters:
                if (parameter["name"], parameter["in"]) not in names:
                    operation.setdefault("parameters", []).append(dict(parameter))
    return document
