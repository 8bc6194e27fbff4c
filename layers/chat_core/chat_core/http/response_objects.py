"""The objects the Responses routes answer (RSP-2, RSP-5), one pydantic model each: the Response (whole,
read back, and each snapshot a stream's events carry), its function tools, its usage, and the
compaction (`POST /v1/responses/compact`). Every field of OpenAI's API reference and of the Open
Responses specification is present with its documented type and default, whatever transport carries it
(JSON, Server-Sent Events, a socket's messages).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")


class FunctionToolOut(_Out):
    """A function tool as a Response shows it: `description`, `parameters` and `strict` always present
    (null when the request did not set them; `strict` unset is not enforced here)."""

    type: Literal["function"] = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ConversationRefOut(_Out):
    id: str


class InputTokensDetailsOut(_Out):
    cached_tokens: int = 0


class OutputTokensDetailsOut(_Out):
    reasoning_tokens: int = 0


class UsageOut(_Out):
    input_tokens: int
    input_tokens_details: InputTokensDetailsOut = Field(default_factory=InputTokensDetailsOut)
    output_tokens: int
    output_tokens_details: OutputTokensDetailsOut = Field(default_factory=OutputTokensDetailsOut)
    total_tokens: int


class ReasoningOut(_Out):
    effort: str | None = None
    summary: str | None = None


class TextOut(_Out):
    format: dict[str, Any] = Field(default_factory=lambda: {"type": "text"})
    verbosity: Literal["low", "medium", "high"] = "medium"


class ContextManagementOut(_Out):
    """A `context_management` entry of the request, as the Response echoes it."""

    type: Literal["compaction"] = "compaction"
    compact_threshold: int | None = None


class ResponseObject(_Out):
    """The Response object: `completed_at` is the time the answer was stored, once completed (null while
    in progress or when it failed); the sampling penalties are OpenAI's defaults (0), this service sends
    none."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    completed_at: int | None = None
    status: Literal["completed", "failed", "in_progress", "cancelled", "queued", "incomplete"]
    error: dict[str, Any] | None = None
    incomplete_details: dict[str, Any] | None = None
    model: str
    output: list[dict[str, Any]] = Field(default_factory=list)
    previous_response_id: str | None = None
    conversation: ConversationRefOut | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    parallel_tool_calls: bool = True
    reasoning: ReasoningOut = Field(default_factory=ReasoningOut)
    service_tier: str = "default"
    store: bool = True
    temperature: float = 1.0
    text: TextOut = Field(default_factory=TextOut)
    tool_choice: str | dict[str, Any] = "auto"
    tools: list[FunctionToolOut] = Field(default_factory=list)
    top_logprobs: int = 0
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    truncation: Literal["auto", "disabled"] = "auto"
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    background: bool = False
    #: Compaction the request asked for (our answer to `context_management`): what it was, and whether
    #: this response compacted the conversation before its turn.
    context_management: list[ContextManagementOut] | None = None
    usage: UsageOut | None = None

    def wire(self) -> dict[str, Any]:
        """As JSON: every field present (null where unset), as the specification requires."""
        unset = {"context_management"} if self.context_management is None else None
        return self.model_dump(mode="json", exclude=unset)


class CompactionItemOut(_Out):
    """A `compaction` item: opaque, self-contained; a later request passes it back as input."""

    type: Literal["compaction"] = "compaction"
    id: str
    encrypted_content: str
    created_by: str | None = None


class CompactionObject(_Out):
    """POST /v1/responses/compact's answer."""

    id: str
    object: Literal["response.compaction"] = "response.compaction"
    created_at: int
    output: list[dict[str, Any]]
    usage: UsageOut
