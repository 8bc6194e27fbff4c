"""Request bodies of the HTTP API as pydantic models, validated at the edge before any I/O."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

MAX_TITLE_CHARS = 200
MAX_SYSTEM_PROMPT_CHARS = 20_000
MAX_POLICY_MESSAGES = 200
MAX_POLICY_CHARS = 1_000_000
MAX_POLICY_TOKENS = 2_000_000

ModelName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]*$"),
]
ConversationId = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class _Strict(BaseModel):
    """Unknown fields are an error (a typo such as "contnet" must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", strict=True)


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


class PostMessageIn(_Strict):
    """POST /messages: no conversation_id creates the conversation on this first message (API-1)."""

    conversation_id: ConversationId | None = None
    #: Checked by chat_core before any I/O: 1..5000 characters, else 422 message_too_long (API-3).
    content: str
    model: ModelName | None = None


class BuildWindowIn(_Strict):
    """POST /conversations/{id}/window: the prospective message, optionally under another policy."""

    #: Checked by chat_core before any I/O: 1..5000 characters, else 422 message_too_long (API-3).
    content: str
    model: ModelName | None = None
    window_policy: WindowPolicyIn | None = None
