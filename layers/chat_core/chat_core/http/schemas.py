"""Request bodies of the HTTP API as pydantic models, validated at the edge before any I/O."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from chat_core.chat.policy import MAX_POLICY_MESSAGES

MAX_TITLE_CHARS = 200
MAX_SYSTEM_PROMPT_CHARS = 20_000
MAX_POLICY_CHARS = 1_000_000
MAX_POLICY_TOKENS = 2_000_000

ModelName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]*$"),
]
ConversationId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class _Strict(BaseModel):
    """Unknown fields are an error (a typo such as "contnet" must not be silently ignored)."""

    # defer_build: a model is built when first used, not at import (PERF-1, cold start): each handler
    # pays only for the models it validates.
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class WindowPolicyIn(_Strict):
    """A conversation's own window policy (WIN-3), instead of the seed-003 default (WIN-2).

    Limits count the current message; the system prompt is not counted by the caps. With `max_tokens`,
    messages are counted in chat format with `method` (stored exact counts are reused when "exact").
    """

    max_messages: int | None = Field(default=None, ge=1, le=MAX_POLICY_MESSAGES)
    max_chars: int | None = Field(default=None, ge=1, le=MAX_POLICY_CHARS)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_POLICY_TOKENS)
    method: Literal["estimate", "approx", "exact"] = "exact"

    @model_validator(mode="after")
    def _some_limit(self) -> WindowPolicyIn:
        if self.max_messages is None and self.max_chars is None and self.max_tokens is None:
            raise ValueError("a window policy needs at least one of max_messages, max_chars, max_tokens")
        return self


class CreateConversationIn(_Strict):
    """POST /conversations."""

    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    system_prompt: str | None = Field(default=None, max_length=MAX_SYSTEM_PROMPT_CHARS)
    model: ModelName | None = None
    window_policy: WindowPolicyIn | None = None


#: OpenAI's rule for function names.
ToolName = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]
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


class PostMessageIn(_Strict):
    """POST /messages: no conversation_id creates the conversation on this first message (API-1).

    `messages` records agent steps before `content`: assistant messages with `tool_calls` and one `tool`
    result per call. While the model's last answer waits for tool results, a post carries only those
    results in `messages` (no `content`) and the model answers them (the same turn goes on).
    """

    conversation_id: ConversationId | None = None
    #: Checked by chat_core before any I/O: 1..5000 characters, else 422 message_too_long (API-3).
    content: str | None = None
    model: ModelName | None = None
    messages: list[RecordedMessageIn] | None = Field(default=None, min_length=1, max_length=30)

    @model_validator(mode="after")
    def _something_to_post(self) -> PostMessageIn:
        if self.content is None and not self.messages:
            raise ValueError(
                "content is required (only a post of tool results in `messages` may leave it out)"
            )
        return self

    def recorded(self) -> list[dict[str, Any]]:
        """The recorded messages as OpenAI-format dicts (absent optional keys left out)."""
        return [m.model_dump(exclude_none=True) for m in self.messages or []]


class PinMessageIn(_Strict):
    """PATCH /conversations/{id}/messages/{message_id}: pin (keep in every window) or unpin."""

    pinned: bool


class BuildWindowIn(_Strict):
    """POST /conversations/{id}/window: the prospective message, optionally under another policy."""

    #: Checked by chat_core before any I/O: 1..5000 characters, else 422 message_too_long (API-3).
    content: str
    model: ModelName | None = None
    window_policy: WindowPolicyIn | None = None
