"""Reading a provider's answer: its text, tool calls, usage, error detail and Retry-After."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any, Final

import httpx

from chat_core.llm.completion import Usage

_MAX_ERROR_DETAIL_CHARS: Final = 300

# -- parsing helpers -----------------------------------------------------------------------------------


def describe(exc: BaseException) -> str:
    text = str(exc) or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {text}"[:_MAX_ERROR_DETAIL_CHARS]


def error_detail(data: Any) -> str:
    """The human message inside an OpenAI-style error body, if there is one."""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    if isinstance(error, dict):
        error = error.get("message") or error.get("type") or error.get("code")
    if error is None:
        error = data.get("message") or data.get("detail")
    return str(error)[:_MAX_ERROR_DETAIL_CHARS] if error else ""


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from `retry-after-ms` (OpenAI) or `Retry-After` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def content_text(message: Mapping[str, Any]) -> str:
    """The answer's text: `content` as a string, the text parts of a content-part list, "" for null."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Some servers answer with content parts; the text parts are the answer.
        parts = []
        for part in content:
            if not isinstance(part, dict):
                raise ValueError("choices[0].message.content has a part that is not an object")
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
        return "".join(parts)
    raise ValueError(f"choices[0].message.content is {type(content).__name__}, expected a string or null")


def parse_refusal(message: Mapping[str, Any]) -> str | None:
    """API-10: the model's refusal (`message.refusal`), or None when it did not refuse."""
    refusal = message.get("refusal")
    if refusal is None or refusal == "":
        return None
    if not isinstance(refusal, str):
        raise ValueError(f"choices[0].message.refusal is {type(refusal).__name__}, expected a string or null")
    return refusal


#: Usage breakdowns kept as the provider sent them (numbers only).
USAGE_DETAIL_KEYS: Final = ("prompt_tokens_details", "completion_tokens_details")
#: What of `message.audio` is kept: the transcript and the id a later request can refer to, not the bytes.
AUDIO_KEYS: Final = ("id", "transcript", "expires_at")


def _numbers(value: Any) -> dict[str, int] | None:
    if not isinstance(value, Mapping):
        return None
    kept = {
        str(k): int(v)
        for k, v in value.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer() and v >= 0
    }
    return kept or None


def parse_extras(
    message: Mapping[str, Any], usage: Any, body: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """API-10: what else the model answered: annotations, a legacy function_call, audio (transcript, not
    bytes), the usage breakdowns (cached and reasoning tokens), and the answer's own `id` (as
    `completion_id`) and `system_fingerprint`. None when there is nothing."""
    extras: dict[str, Any] = {}
    for key, kept_as in (("id", "completion_id"), ("system_fingerprint", "system_fingerprint")):
        value = (body or {}).get(key)
        if isinstance(value, str) and value and len(value) <= 256:
            extras[kept_as] = value
    annotations = message.get("annotations")
    if isinstance(annotations, list) and annotations:
        extras["annotations"] = annotations
    function_call = message.get("function_call")
    if isinstance(function_call, Mapping) and function_call:
        extras["function_call"] = dict(function_call)
    audio = message.get("audio")
    if isinstance(audio, Mapping):
        kept = {key: audio[key] for key in AUDIO_KEYS if audio.get(key) is not None}
        if kept:
            extras["audio"] = kept
    if isinstance(usage, Mapping):
        for key in USAGE_DETAIL_KEYS:
            numbers = _numbers(usage.get(key))
            if numbers:
                extras[key] = numbers
    return extras or None


def parse_tool_calls(value: Any) -> list[dict[str, Any]] | None:
    if value is None or value == []:
        return None
    if not isinstance(value, list):
        raise ValueError("choices[0].message.tool_calls is not a list")
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(value):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"tool_calls[{index}] has no function name")
        arguments = function.get("arguments", "")
        if isinstance(arguments, dict | list):
            # A few servers send parsed arguments; the OpenAI format is a JSON string.
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(arguments, str):
            raise ValueError(f"tool_calls[{index}].function.arguments is not a string")
        call_id = call.get("id")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id else f"call_{index}",
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    return calls


def parse_usage(value: Any) -> tuple[Usage, bool]:
    """TOK-6: numbers as reported; a missing or invalid number is 0 and marks usage as not reported."""
    if not isinstance(value, dict):
        return Usage(), False
    numbers: dict[str, int] = {}
    complete = True
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        raw = value.get(key)
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
            numbers[key] = raw
        else:
            numbers[key] = 0
            complete = False
    return Usage(**numbers), complete
