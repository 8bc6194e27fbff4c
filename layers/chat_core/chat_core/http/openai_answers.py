"""What the OpenAI-compatible routes answer (API-13), as pydantic models named as in the OpenAPI document."""

from typing import Any

from pydantic import BaseModel, ConfigDict

from chat_core.http.answers import AnswerModel, AudioOut, FunctionCallOut, ToolCallOut


class OpenAIErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorOut(BaseModel):
    """OpenAI's error shape, on the /v1 routes only (API-13)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    error: OpenAIErrorInfo


class ChatCompletionMessageOut(AnswerModel):
    role: str
    content: str | None
    refusal: str | None
    tool_calls: list[ToolCallOut] | None = None
    function_call: FunctionCallOut | None = None
    annotations: list[dict[str, Any]] | None = None
    audio: AudioOut | None = None


class ChatCompletionChoiceOut(AnswerModel):
    index: int
    message: ChatCompletionMessageOut
    finish_reason: str
    logprobs: dict[str, Any] | None


class ChatCompletionUsageOut(AnswerModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: dict[str, int] | None = None
    completion_tokens_details: dict[str, int] | None = None


class ChatCompletionOut(AnswerModel):
    """POST /v1/chat/completions: the chat.completion the model answered, plus `conversation`."""

    id: str
    object: str
    created: int
    model: str
    choices: list[ChatCompletionChoiceOut]
    usage: ChatCompletionUsageOut
    system_fingerprint: str | None = None
    conversation: str


class ModelOut(AnswerModel):
    id: str
    object: str
    created: int
    owned_by: str


class ModelListOut(AnswerModel):
    object: str
    data: list[ModelOut]
