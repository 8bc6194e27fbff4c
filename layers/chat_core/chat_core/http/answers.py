"""What the conversation routes answer, as pydantic models: messages, conversations, posts, the tree, the
window, usage and budgets (API-1, API-18..22, COST-2..4). Their names are the schema names of the OpenAPI
document (`chat_core.http.openapi_doc`); `chat_core.http.route_answers` says which route answers which.

Every model is built on first use (`defer_build`), so importing them costs a handler little.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class AnswerModel(BaseModel):
    """Response bodies may grow new fields; clients must ignore what they do not know."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class ErrorDetail(AnswerModel):
    field: str | None = None
    problem: str | None = None


class ErrorInfo(AnswerModel):
    code: str
    message: str
    details: list[ErrorDetail] | None = None


class ErrorOut(BaseModel):
    """`{"error": {"code", "message"[, "details"]}}`: every 4xx and 5xx."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    error: ErrorInfo


class UsageOut(AnswerModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class CostOut(AnswerModel):
    """COST-2: integer micro-dollars (null: the model has no price), the same in dollars, and how it was
    found: `reported` (the provider's usage), `estimated` (the local count) or `unknown`."""

    micros: int | None
    usd: str | None
    status: Literal["reported", "estimated", "unknown"]


class ConversationCostOut(AnswerModel):
    """COST-2: what the conversation's replies cost; `unpriced_calls` were of a model without a price."""

    micros: int
    usd: str
    unpriced_calls: int


class MessageErrorOut(AnswerModel):
    message: str
    provider_response: dict[str, Any] | None = None


class FunctionCallOut(AnswerModel):
    name: str
    arguments: str


class ToolCallOut(AnswerModel):
    """A tool call the model asked for, as the model sent it (OpenAI `tool_calls[]`)."""

    id: str
    type: Literal["function"]
    function: FunctionCallOut


class UsageDetailsOut(AnswerModel):
    """The provider's usage breakdown as it sent it (e.g. cached_tokens, reasoning_tokens)."""

    prompt_tokens_details: dict[str, int] | None = None
    completion_tokens_details: dict[str, int] | None = None


class AudioOut(AnswerModel):
    """A spoken answer: its id and transcript (the audio bytes are not stored)."""

    id: str | None = None
    transcript: str | None = None
    expires_at: int | None = None


class PendingToolCallOut(AnswerModel):
    id: str
    name: str


class BlobOut(AnswerModel):
    """API-17: a content part kept in the blob bucket: the digest of the value as posted, the object's
    size and media type, and a presigned GET URL of the object (valid `expires_in` seconds)."""

    sha256: str
    bytes: int
    media_type: str
    url: str | None = None
    expires_in: int | None = None


class ContentPartOut(AnswerModel):
    """API-15: one content part as posted (`text`, `image_url`, `input_audio` or `file`); a part kept in
    S3 (API-17) has its data left out of `image_url`/`input_audio`/`file` and carries `blob`."""

    type: Literal["text", "image_url", "input_audio", "file"]
    text: str | None = None
    image_url: dict[str, Any] | None = None
    input_audio: dict[str, Any] | None = None
    file: dict[str, Any] | None = None
    blob: BlobOut | None = None


class MessageOut(AnswerModel):
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


class ConversationOut(AnswerModel):
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


class ConversationPageOut(AnswerModel):
    items: list[ConversationOut]
    next_cursor: str | None


class ConversationDetailOut(ConversationOut):
    messages: list[MessageOut]
    next_cursor: str | None


class PostMessageOut(AnswerModel):
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


class TreeOut(AnswerModel):
    """GET /conversations/{id}/tree: one page of every message, in seq order."""

    conversation_id: str
    active_message_id: str | None
    messages: list[TreeMessageOut]
    next_cursor: str | None


class ActiveOut(ConversationOut):
    """PUT /conversations/{id}/active: the conversation, and the message its active path now ends at."""

    active_message_id: str


class AppendedOut(AnswerModel):
    """API-19: the messages stored, in order."""

    conversation_id: str
    messages: list[MessageOut]


class DeletedOut(AnswerModel):
    """API-20: the messages removed (the message and the results of its tool calls; empty when it was
    removed before)."""

    conversation_id: str
    deleted: list[MessageOut]


class AmountOut(AnswerModel):
    micros: int
    usd: str


class UsageRowOut(AnswerModel):
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


class UsageDayOut(AnswerModel):
    date: str
    models: list[UsageRowOut]
    totals: UsageRowOut


class LimitsOut(AnswerModel):
    """COST-4: limits in effect; null is no limit."""

    daily_tokens: int | None
    daily_usd: str | None
    monthly_tokens: int | None
    monthly_usd: str | None


class SpentOut(AmountOut):
    tokens: int


class ReachedOut(AnswerModel):
    window: Literal["daily", "monthly"]
    limit: Literal["tokens", "cost"]


class BudgetOut(AnswerModel):
    limits: LimitsOut
    today: SpentOut
    this_month: SpentOut
    daily_resets_at: str
    monthly_resets_at: str
    over: bool
    reached: list[ReachedOut]


class UsageReportOut(AnswerModel):
    """COST-3: GET /usage: the user's days by model, the range's totals, the budget as it stands."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)
    user_id: str
    from_: str = Field(alias="from")
    to: str
    days: list[UsageDayOut]
    models: list[UsageRowOut]
    totals: UsageRowOut
    budget: BudgetOut


class BudgetSetOut(AnswerModel):
    """COST-4: PUT /budgets/{user_id}; `warning` when budgets are not enforced in this deployment."""

    user_id: str
    budget: BudgetOut
    warning: str | None = None


class WindowOut(AnswerModel):
    messages: list[dict[str, Any]]
    #: API-11: what the model call would carry besides the messages (tools, temperature, ...).
    settings: dict[str, Any]
    stats: dict[str, Any]
    #: WIN-6: `entries` (each stored message the window could use: tokens, state, reason, pinned,
    #: tool_group, preview; and its facts and other-conversations blocks, `block`), `summary` (from_seq,
    #: to_seq, tokens, text, included) and `budget` (context_length, reserve_tokens, token_budget,
    #: tokens_used).
    inspect: dict[str, Any]
