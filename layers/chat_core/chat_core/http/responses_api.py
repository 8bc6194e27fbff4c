"""The Responses API's edge (RSP-2..RSP-4): the request model, its translation into a post's Chat
Completions settings, and the Response object the `openai` SDK parses.

A request field we do not serve is a 400 that names it, never dropped: the accepted fields are listed
in `ResponseCreateIn`, any other is refused by `unsupported`. A response's settings (`tools`,
`temperature`, `instructions`, ...) are echoed as the request gave them, OpenAI's defaults for the
others; the ones it set are kept with its answer (`answered_settings`, chat.response_settings), so a
response read back shows the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from chat_core.chat.response_items import response_id
from chat_core.errors import InvalidInput
from chat_core.http.conversation_ids import openai_id
from chat_core.http.response_objects import ResponseObject
from chat_core.http.schemas import ConversationId, MetadataKey, MetadataValue, ModelName, RecallIn
from chat_core.store.keys import seq_in_message_id

#: Fields OpenAI's API has that this service refuses by name when they are set.
REFUSED: Final = (
    "background",
    "prompt",
    "max_tool_calls",
    "service_tier",
    "prompt_cache_retention",
    "prompt_cache_options",
    "top_logprobs",
    "conversation_id",
)


#: The request fields a Response object shows as its settings, kept with the answer when set.
ANSWERED: Final = frozenset(
    {
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "max_output_tokens",
        "text",
        "reasoning",
        "truncation",
        "metadata",
        "user",
        "safety_identifier",
        "prompt_cache_key",
    }
)


class ConversationParamIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)
    id: ConversationId


class ContextManagementIn(BaseModel):
    """RSP-10: compact the conversation before the turn once its input passes `compact_threshold`
    tokens."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)
    type: Literal["compaction"]
    compact_threshold: int = Field(ge=1)


class ResponseCreateIn(BaseModel):
    """POST /v1/responses (and /v1/responses/input_tokens): the fields served; others are kept aside
    (`model_extra`) and refused by name."""

    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)

    model: ModelName | None = None
    input: str | list[dict[str, Any]] | None = None
    instructions: str | None = Field(default=None, max_length=100_000)
    previous_response_id: str | None = Field(default=None, max_length=128)
    conversation: ConversationId | ConversationParamIn | None = None
    store: bool | None = None
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = Field(default=None, max_length=128)
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    metadata: dict[MetadataKey, MetadataValue] | None = Field(default=None, max_length=16)
    text: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    include: list[str] | None = None
    user: str | None = Field(default=None, max_length=256)
    safety_identifier: str | None = Field(default=None, max_length=256)
    prompt_cache_key: str | None = Field(default=None, max_length=256)
    context_management: list[ContextManagementIn] | None = Field(default=None, max_length=1)
    #: MEM-6: recall for this response's window (our extension; SDKs send it through `extra_body`).
    recall: bool | RecallIn | None = None

    def conversation_id(self) -> str | None:
        if isinstance(self.conversation, ConversationParamIn):
            return self.conversation.id
        return self.conversation

    def unsupported(self) -> None:
        """RSP-2: a field we do not serve, set, is a 400 naming it."""
        extra = {k: v for k, v in (self.model_extra or {}).items() if v is not None}
        if extra.get("background") is False:
            extra.pop("background")
        if extra:
            names = ", ".join(sorted(extra))
            raise InvalidInput(f"unsupported parameter(s): {names}", field=sorted(extra)[0])


def _tool(tool: Mapping[str, Any], index: int) -> dict[str, Any]:
    if tool.get("type") != "function":
        raise InvalidInput(
            f"tools[{index}]: tools of type {tool.get('type')!r} are not supported (only function tools)",
            field="tools",
        )
    unknown = set(tool) - {"type", "name", "description", "parameters", "strict"}
    if unknown or not isinstance(tool.get("name"), str):
        raise InvalidInput(
            f"tools[{index}]: a function tool takes name, description, parameters, strict", field="tools"
        )
    function = {
        k: tool[k] for k in ("name", "description", "parameters", "strict") if tool.get(k) is not None
    }
    return {"type": "function", "function": function}


def _tool_choice(choice: str | Mapping[str, Any]) -> Any:
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise InvalidInput("tool_choice: auto, none, required or a function", field="tool_choice")
        return choice
    if choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise InvalidInput(
        f"tool_choice of type {choice.get('type')!r} is not supported (auto, none, required or a function)",
        field="tool_choice",
    )


def _response_format(text: Mapping[str, Any]) -> dict[str, Any] | None:
    unknown = {k for k, v in text.items() if v is not None} - {"format"}
    if unknown:
        raise InvalidInput(f"text: unsupported field(s): {', '.join(sorted(unknown))}", field="text")
    form = text.get("format")
    if form is None:
        return None
    kind = form.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        schema = {k: form[k] for k in ("name", "schema", "strict", "description") if form.get(k) is not None}
        return {"type": "json_schema", "json_schema": schema}
    raise InvalidInput(f"text.format of type {kind!r} is not supported", field="text.format")


def post_settings(request: ResponseCreateIn) -> dict[str, Any]:
    """RSP-2: the request's settings as a post's Chat Completions settings (API-11)."""
    settings: dict[str, Any] = {}
    if request.tools:
        settings["tools"] = [_tool(t, i) for i, t in enumerate(request.tools)]
    if request.tool_choice is not None:
        settings["tool_choice"] = _tool_choice(request.tool_choice)
    for name in ("parallel_tool_calls", "temperature", "top_p", "user"):
        if getattr(request, name) is not None:
            settings[name] = getattr(request, name)
    if request.max_output_tokens is not None:
        settings["max_completion_tokens"] = request.max_output_tokens
    if request.text:
        form = _response_format(request.text)
        if form is not None:
            settings["response_format"] = form
    if request.reasoning:
        if request.reasoning.get("summary") or request.reasoning.get("generate_summary"):
            raise InvalidInput(
                "reasoning.summary is not supported (the model's reasoning is not returned)",
                field="reasoning",
            )
        if request.reasoning.get("effort") is not None:
            settings["reasoning_effort"] = request.reasoning["effort"]
    return settings


def _epoch(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())


def usage_object(answer: Mapping[str, Any]) -> dict[str, Any]:
    usage = answer.get("usage") or {}
    details = answer.get("usage_details") or {}
    cached = (details.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (details.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": int(cached)},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": int(reasoning)},
        "total_tokens": int(usage.get("total_tokens") or prompt + completion),
    }


def answered_settings(request: ResponseCreateIn) -> dict[str, Any]:
    """The settings the request set that its Response shows (kept with the answer, RSP-2)."""
    return request.model_dump(mode="json", exclude_none=True, include=set(ANSWERED))


def echo(given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings a Response object shows: those `given` (a request's, or those kept with its
    answer), else OpenAI's defaults."""
    given = given or {}
    text = given.get("text") or {}
    return {
        "instructions": given.get("instructions"),
        "max_output_tokens": given.get("max_output_tokens"),
        "max_tool_calls": None,
        "metadata": given.get("metadata") or {},
        "parallel_tool_calls": given.get("parallel_tool_calls", True),
        "reasoning": {"effort": (given.get("reasoning") or {}).get("effort"), "summary": None},
        "service_tier": "default",
        "store": given.get("store", True),
        "temperature": given.get("temperature", 1.0),
        "text": {"format": text.get("format") or {"type": "text"}, "verbosity": "medium"},
        "tool_choice": given.get("tool_choice", "auto"),
        "tools": given.get("tools") or [],
        "top_logprobs": 0,
        "top_p": given.get("top_p", 1.0),
        # No truncation given: the conversation's window policy chooses, as "auto" (RSP-2).
        "truncation": given.get("truncation", "auto"),
        "user": given.get("user"),
        "safety_identifier": given.get("safety_identifier"),
        "prompt_cache_key": given.get("prompt_cache_key"),
        "background": False,
        "context_management": given.get("context_management"),
    }


def status_of(answer: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """(status, error, incomplete_details) of a stored answer."""
    if answer.get("status") == "error":
        message = str((answer.get("error") or {}).get("message") or "the model provider failed")
        return "failed", {"code": "server_error", "message": message}, None
    if answer.get("status") == "incomplete":
        message = str((answer.get("error") or {}).get("message") or "the model's stream stopped")
        return "incomplete", {"code": "stream_interrupted", "message": message}, {"reason": "interrupted"}
    if answer.get("finish_reason") == "length":
        return "incomplete", None, {"reason": "max_output_tokens"}
    if answer.get("finish_reason") == "content_filter":
        return "incomplete", None, {"reason": "content_filter"}
    return "completed", None, None


def response_object(
    conversation_id: str,
    answer: Mapping[str, Any],
    output: list[dict[str, Any]],
    *,
    settings: Mapping[str, Any] | None = None,
    previous_id: str | None = None,
) -> dict[str, Any]:
    """RSP-2: the Response object of a stored answer (`ResponseObject`); `settings` those its request set
    (see `echo`). The answer is stored once the model has answered: its time is `completed_at`."""
    status, error, incomplete = status_of(answer)
    stored_at = _epoch(str(answer["created_at"]))
    body: dict[str, Any] = {
        "id": response_id(conversation_id, seq_in_message_id(str(answer["message_id"])) or 0),
        "created_at": stored_at,
        "completed_at": stored_at if status == "completed" else None,
        "status": status,
        "error": error,
        "incomplete_details": incomplete,
        "model": answer.get("model"),
        "output": output,
        "previous_response_id": previous_id,
        "conversation": {"id": openai_id(conversation_id)},
        "usage": usage_object(answer),
    }
    body.update(echo(settings))
    return ResponseObject.model_validate(body).wire()


def in_progress_object(
    request: ResponseCreateIn, provisional_id: str, model: str, created: int
) -> dict[str, Any]:
    """The Response a stream starts with (`response.created`), before the answer is stored."""
    body: dict[str, Any] = {
        "id": provisional_id,
        "created_at": created,
        "status": "in_progress",
        "model": model,
        "previous_response_id": request.previous_response_id,
    }
    body.update(echo(request.model_dump(mode="json", exclude_none=True)))
    return ResponseObject.model_validate(body).wire()


def list_page(items: list[dict[str, Any]], *, after: str | None, limit: int, order: str) -> dict[str, Any]:
    """OpenAI's list object over items (oldest first as given): `order`, `after` an item id, `limit`."""
    if not 1 <= limit <= 100:
        raise InvalidInput("limit: 1 to 100", field="limit")
    if order not in ("asc", "desc"):
        raise InvalidInput("order: asc or desc", field="order")
    ordered = items if order == "asc" else items[::-1]
    if after is not None:
        ids = [item["id"] for item in ordered]
        if after not in ids:
            raise InvalidInput(f"after: no item {after!r} in this list", field="after")
        ordered = ordered[ids.index(after) + 1 :]
    page = ordered[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(ordered) > limit,
    }
