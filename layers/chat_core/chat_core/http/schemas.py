"""Request bodies of the HTTP API as pydantic models, validated at the edge before any I/O."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

from chat_core.chat.policy import MAX_POLICY_MESSAGES
from chat_core.http.conversation_ids import bare_id

MAX_TITLE_CHARS = 200
MAX_SYSTEM_PROMPT_CHARS = 20_000
MAX_POLICY_CHARS = 1_000_000
MAX_POLICY_TOKENS = 2_000_000
MAX_FACTS_TOKENS = 8_000

ModelName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]*$"),
]
#: A conversation id in a body: bare or in OpenAI's form (`conv_<id>`), the stored (bare) id once read.
ConversationId = Annotated[str, BeforeValidator(bare_id), StringConstraints(min_length=1, max_length=64)]


class _Strict(BaseModel):
    """Unknown fields are an error (a typo such as "contnet" must not be silently ignored)."""

    # defer_build: a model is built when first used, not at import (PERF-1, cold start): each handler
    # pays only for the models it validates.
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class FactsPolicyIn(_Strict):
    """MEM-35: the window's block of known facts: at most `max_tokens` of the window's budget (a budget of
    its own when the policy has no token budget); `extract: false` keeps this conversation's turns out of
    fact extraction (MEM-31)."""

    max_tokens: int | None = Field(default=None, ge=1, le=MAX_FACTS_TOKENS)
    extract: bool | None = None


class RecallIn(_Strict):
    """MEM-6: recall's share of the window: up to `max_tokens` tokens of older relevant messages (with a
    policy that has no token budget, a budget of its own); `scope` "all" also searches the caller's
    newest other conversations."""

    max_tokens: int | None = Field(default=None, ge=1, le=MAX_POLICY_TOKENS)
    scope: Literal["conversation", "all"] = "conversation"
    #: MEM-51: re-rank recall's candidates with embeddings (when the deployment configures a model).
    semantic: bool | None = None


class WindowPolicyIn(_Strict):
    """A conversation's own window policy (WIN-3), instead of the seed-003 default (WIN-2).

    Limits count the current message; the system prompt is not counted by the caps. With `max_tokens`,
    messages are counted in chat format with `method` (stored exact counts are reused when "exact").
    `recall` (MEM-6) adds older messages relevant to the current one: `true` for the default share, or
    a RecallIn; a policy of `recall` alone keeps the default limits.
    """

    max_messages: int | None = Field(default=None, ge=1, le=MAX_POLICY_MESSAGES)
    max_chars: int | None = Field(default=None, ge=1, le=MAX_POLICY_CHARS)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_POLICY_TOKENS)
    method: Literal["estimate", "approx", "exact"] = "exact"
    #: MEM-35: a block of the owner's known facts (`true`: up to 256 tokens).
    facts: bool | FactsPolicyIn | None = None
    recall: bool | RecallIn | None = None

    @model_validator(mode="after")
    def _some_limit(self) -> WindowPolicyIn:
        no_limit = self.max_messages is None and self.max_chars is None and self.max_tokens is None
        if no_limit and not self.recall:
            raise ValueError("a window policy needs at least one of max_messages, max_chars, max_tokens")
        return self


#: OpenAI's rule for function names.
ToolName = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
MetadataKey = Annotated[str, StringConstraints(min_length=1, max_length=64)]
MetadataValue = Annotated[str, StringConstraints(max_length=512)]
StopSequence = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class FunctionDefinitionIn(_Strict):
    """A function the model may call; `parameters` is a JSON Schema object, sent as given."""

    name: ToolName
    description: str | None = Field(default=None, max_length=8_192)
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDefinitionIn(_Strict):
    """One entry of `tools` (Chat Completions format)."""

    type: Literal["function"]
    function: FunctionDefinitionIn


class NamedFunctionIn(_Strict):
    name: ToolName


class NamedToolChoiceIn(_Strict):
    """`tool_choice` forcing one function (it must be one of the turn's `tools`)."""

    type: Literal["function"]
    function: NamedFunctionIn


class JsonSchemaFormatIn(_Strict):
    name: Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True, populate_by_name=True)


class ResponseFormatIn(_Strict):
    """`response_format`: text, JSON mode, or a JSON Schema the reply must follow."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormatIn | None = None

    @model_validator(mode="after")
    def _schema_with_its_type(self) -> ResponseFormatIn:
        if (self.type == "json_schema") != (self.json_schema is not None):
            raise ValueError('json_schema is required with type "json_schema" and only with it')
        return self


class ModelSettingsIn(_Strict):
    """API-11: the Chat Completions request fields that make sense per turn, sent to the model as given
    (the reply size lowered to the model's limit). The same fields are a conversation's `defaults`."""

    tools: list[ToolDefinitionIn] | None = Field(default=None, max_length=128)
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoiceIn | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: StopSequence | list[StopSequence] | None = Field(default=None)
    seed: int | None = None
    response_format: ResponseFormatIn | None = None
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None
    user: str | None = Field(default=None, max_length=256)
    metadata: dict[MetadataKey, MetadataValue] | None = Field(default=None, max_length=16)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    logit_bias: (
        dict[
            Annotated[str, StringConstraints(pattern=r"^[0-9]{1,7}$")], Annotated[int, Field(ge=-100, le=100)]
        ]
        | None
    ) = Field(default=None, max_length=300)
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)

    @model_validator(mode="after")
    def _one_reply_size(self) -> ModelSettingsIn:
        if self.max_tokens is not None and self.max_completion_tokens is not None:
            raise ValueError("send max_tokens or max_completion_tokens, not both")
        if isinstance(self.stop, list) and not 1 <= len(self.stop) <= 4:
            raise ValueError("stop takes 1 to 4 sequences")
        return self

    def settings(self) -> dict[str, Any]:
        """The fields this body set, as JSON (nested objects as given); an explicit null is kept (it
        removes a default)."""
        fields = set(MODEL_SETTING_FIELDS) & self.model_fields_set
        return self.model_dump(mode="json", include=fields, by_alias=True, exclude_unset=True)


#: The per-turn Chat Completions fields (API-11), in the order docs/api.md lists them.
MODEL_SETTING_FIELDS: tuple[str, ...] = tuple(ModelSettingsIn.model_fields)


#: API-21: a caller-chosen conversation key (a framework's session id): unique per user.
ConversationKey = Annotated[
    str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:@+=~-]+$")
]


class ConversationSettingsIn(_Strict):
    """A new conversation's settings: `PUT /conversation-keys/{key}` uses them when it creates one."""

    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    system_prompt: str | None = Field(default=None, max_length=MAX_SYSTEM_PROMPT_CHARS)
    model: ModelName | None = None
    window_policy: WindowPolicyIn | None = None
    #: API-12: settings every post of the conversation sends unless the post says otherwise.
    defaults: ModelSettingsIn | None = None


class CreateConversationIn(ConversationSettingsIn):
    """POST /conversations; `key` (API-21) names it for `GET/PUT /conversation-keys/{key}`."""

    key: ConversationKey | None = None


class UpdateConversationIn(_Strict):
    """PATCH /conversations/{id} (API-12): the fields given change; `null` clears an optional one."""

    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    system_prompt: str | None = Field(default=None, max_length=MAX_SYSTEM_PROMPT_CHARS)
    model: ModelName | None = None
    window_policy: WindowPolicyIn | None = None
    defaults: ModelSettingsIn | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateConversationIn:
        if not self.model_fields_set:
            raise ValueError("nothing to change: give title, system_prompt, model, window_policy or defaults")
        if "model" in self.model_fields_set and self.model is None:
            raise ValueError("model cannot be null (a conversation always has a model)")
        return self


#: A tool call id as models make them ("call_abc123"): printable, no spaces.
ToolCallId = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]


class ToolFunctionIn(_Strict):
    """The function a tool call invokes; `arguments` is the JSON string the model wrote (kept verbatim)."""

    name: ToolName
    #: Checked by chat_core: at most 32 KiB (UTF-8), else 422 tool_payload_too_large.
    arguments: str


class ToolCallIn(_Strict):
    """One entry of an assistant message's `tool_calls` (OpenAI format)."""

    id: ToolCallId
    type: Literal["function"] = "function"
    function: ToolFunctionIn


class AssistantMessageIn(_Strict):
    """An assistant step an agent records: text, tool calls, or both (`content` may be null with calls)."""

    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ToolCallIn] | None = Field(default=None, min_length=1, max_length=30)

    @model_validator(mode="after")
    def _says_something(self) -> AssistantMessageIn:
        if not self.content and not self.tool_calls:
            raise ValueError("an assistant message needs content or tool_calls")
        return self


class ToolMessageIn(_Strict):
    """The result of one tool call; `tool_call_id` names the call it answers."""

    role: Literal["tool"]
    tool_call_id: ToolCallId
    #: Checked by chat_core: at most 32 KiB (UTF-8), else 422 tool_payload_too_large.
    content: str


RecordedMessageIn = Annotated[AssistantMessageIn | ToolMessageIn, Field(discriminator="role")]


class TextPartIn(_Strict):
    type: Literal["text"]
    text: str


class ImageUrlIn(_Strict):
    #: An http(s) URL, or a `data:` URL within the parts' size cap (API-15).
    url: Annotated[str, StringConstraints(min_length=1)]
    detail: Literal["auto", "low", "high"] | None = None


class ImagePartIn(_Strict):
    type: Literal["image_url"]
    image_url: ImageUrlIn


class InputAudioIn(_Strict):
    data: str  # base64
    format: Literal["wav", "mp3"]


class AudioPartIn(_Strict):
    type: Literal["input_audio"]
    input_audio: InputAudioIn


class FileIn(_Strict):
    file_id: str | None = None
    file_data: str | None = None  # base64, or a data URL
    filename: str | None = Field(default=None, max_length=255)

    @model_validator(mode="after")
    def _names_a_file(self) -> FileIn:
        if not self.file_id and not self.file_data:
            raise ValueError("a file part needs file_id or file_data")
        return self


class FilePartIn(_Strict):
    type: Literal["file"]
    file: FileIn


#: API-15: one part of a user message's content (Chat Completions format).
ContentPartIn = Annotated[TextPartIn | ImagePartIn | AudioPartIn | FilePartIn, Field(discriminator="type")]


class PostMessageIn(ModelSettingsIn):
    """POST /messages: no conversation_id creates the conversation on this first message (API-1).

    `messages` records agent steps before `content`: assistant messages with `tool_calls` and one `tool`
    result per call. While the model's last answer waits for tool results, a post carries only those
    results in `messages` (no `content`) and the model answers them (the same turn goes on).
    The Chat Completions settings of ModelSettingsIn apply to this turn (API-11).
    """

    conversation_id: ConversationId | None = None
    #: Checked by chat_core before any I/O: 1..5000 characters, else 422 message_too_long (API-3); or a
    #: list of content parts (API-15) whose text is held to the same limit.
    content: str | list[ContentPartIn] | None = Field(default=None)
    model: ModelName | None = None
    messages: list[RecordedMessageIn] | None = Field(default=None, min_length=1, max_length=30)
    #: MEM-6: recall for this post only, over the conversation's own window policy (`false` turns it off).
    recall: bool | RecallIn | None = None

    @model_validator(mode="after")
    def _something_to_post(self) -> PostMessageIn:
        if self.content is None and not self.messages:
            raise ValueError(
                "content is required (only a post of tool results in `messages` may leave it out)"
            )
        return self


def content_text(content: str | list[Any] | None) -> str | None:
    """The content's text: the string, or the text parts joined by newlines (None without content)."""
    if content is None or isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, TextPartIn))


def content_parts(content: str | list[Any] | None) -> list[dict[str, Any]] | None:
    """The content parts as sent (API-15), or None for plain text content."""
    if content is None or isinstance(content, str):
        return None
    return [part.model_dump(mode="json", exclude_none=True) for part in content]


class PinMessageIn(_Strict):
    """PATCH /conversations/{id}/messages/{message_id}: pin (keep in every window) or unpin."""

    pinned: bool


class BuildWindowIn(ModelSettingsIn):
    """POST /conversations/{id}/window: the prospective message, optionally under another policy and
    with the settings a post would send (tools are counted in the window, the reply size kept free)."""

    #: Checked by chat_core before any I/O: 1..5000 characters, else 422 message_too_long (API-3); or
    #: content parts (API-15).
    content: str | list[ContentPartIn]
    model: ModelName | None = None
    window_policy: WindowPolicyIn | None = None


# ------------------------------------------------------------------------ branches and history (API-18)

#: A message id as the service makes them (checked by chat_core; a malformed one is 404 like unknown).
MessageId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


def _as_post(conversation_id: str, fields: ModelSettingsIn, **extra: Any) -> PostMessageIn:
    """The post an edit or a regeneration runs (its fields are validated already)."""
    values = {name: getattr(fields, name) for name in ModelSettingsIn.model_fields}
    return PostMessageIn.model_construct(conversation_id=conversation_id, messages=None, **values, **extra)


class EditMessageIn(ModelSettingsIn):
    """POST /conversations/{id}/messages/{message_id}/edit: the user message's new content (text or
    content parts, held to a post's limits) and this turn's settings; the model answers on the new branch."""

    content: str | list[ContentPartIn]
    model: ModelName | None = None

    def as_post(self, conversation_id: str) -> PostMessageIn:
        return _as_post(conversation_id, self, content=self.content, model=self.model)


class RegenerateIn(ModelSettingsIn):
    """POST /conversations/{id}/messages/{message_id}/regenerate: optional settings for the new answer."""

    model: ModelName | None = None

    def as_post(self, conversation_id: str) -> PostMessageIn:
        return _as_post(conversation_id, self, content=None, model=self.model)


class SetActiveIn(_Strict):
    """PUT /conversations/{id}/active: the message the active path ends at."""

    message_id: MessageId


class UsageIn(_Strict):
    """An appended answer's usage as its model reported it."""

    prompt_tokens: int = Field(ge=0, le=10_000_000)
    completion_tokens: int = Field(ge=0, le=10_000_000)
    total_tokens: int | None = Field(default=None, ge=0, le=20_000_000)
    #: COST-1: the breakdowns (cached and reasoning tokens) the model reported, priced with the rest.
    prompt_tokens_details: dict[str, int] | None = None
    completion_tokens_details: dict[str, int] | None = None


#: API-22: what a framework keeps with a message (ids, item types, metadata of its own): stored and read
#: back as given, never sent to a model; at most MAX_METADATA_BYTES as JSON (checked by chat_core).
MessageMetadata = dict[str, Any]


class AppendUserIn(_Strict):
    role: Literal["user"]
    #: Held to a post's limits (API-3, API-15).
    content: str | list[ContentPartIn]
    metadata: MessageMetadata | None = None


class AppendSystemIn(_Strict):
    """A system note: kept in the history at its place (the conversation's system prompt stays first)."""

    role: Literal["system"]
    content: str
    metadata: MessageMetadata | None = None


class AppendAssistantIn(AssistantMessageIn):
    """An answer given elsewhere: its text and/or tool calls, the model and the usage it reported. The
    text may be empty (`""`: a step that said nothing, such as a reasoning item a framework keeps)."""

    model: ModelName | None = None
    usage: UsageIn | None = None
    refusal: str | None = None
    metadata: MessageMetadata | None = None

    @model_validator(mode="after")
    def _says_something(self) -> AppendAssistantIn:
        if self.content is None and not self.tool_calls and not self.refusal:
            raise ValueError("an assistant message needs content, tool_calls or refusal")
        return self


class AppendToolIn(ToolMessageIn):
    metadata: MessageMetadata | None = None


AppendMessageIn = Annotated[
    AppendUserIn | AppendSystemIn | AppendAssistantIn | AppendToolIn, Field(discriminator="role")
]


class AppendMessagesIn(_Strict):
    """POST /conversations/{id}/messages: messages stored as given at the end of the active path, with
    no model call (agent frameworks, imports). Tool results must answer calls still open on the path."""

    messages: list[AppendMessageIn] = Field(min_length=1, max_length=30)


class BudgetIn(_Strict):
    """COST-4: one user's limits (PUT /budgets/{user_id}). Each is a number, or null for no limit; a
    limit left out follows the deployment's default."""

    daily_tokens: int | None = Field(default=None, ge=0, le=10**15)
    daily_usd: float | None = Field(default=None, ge=0, le=10**9)
    monthly_tokens: int | None = Field(default=None, ge=0, le=10**15)
    monthly_usd: float | None = Field(default=None, ge=0, le=10**9)
