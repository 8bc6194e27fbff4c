"""TOK-4: tokens of chat messages and whole prompts, as OpenAI's chat format bills them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal, get_args

from chat_core.engine.tokens.approx import approx_tokens
from chat_core.engine.tokens.chat_families import (
    CHAT_FORMATS,
    NON_TEXT_PART_TOKENS,
    TEXT_PART_TYPES,
    FamilyChatFormat,
)
from chat_core.engine.tokens.chat_mistral import MISTRAL_SP_FORMATS
from chat_core.engine.tokens.encodings import (
    check_encoding_name,
    encoding_for_model,
    estimate_message_tokens,
    get_encoding,
)
from chat_core.errors import InvalidInput

# ---------------------------------------------------------------------------------- TOK-4 chat format

#: Every open family's chat format, by tokenizer name.
FAMILY_FORMATS: Final[dict[str, FamilyChatFormat]] = {**CHAT_FORMATS, **MISTRAL_SP_FORMATS}

Method = Literal["estimate", "approx", "exact"]
_METHODS: Final[tuple[str, ...]] = get_args(Method)

# OpenAI cookbook, "How to count tokens with tiktoken" (gpt-3.5-turbo-0613 and later, gpt-4, gpt-4o):
TOKENS_PER_MESSAGE: Final = 3  # <|start|>, <|message|>, <|end|> around every message; the role is text
TOKENS_PER_NAME: Final = 1  # a "name" field costs its text plus one
REPLY_PRIMING_TOKENS: Final = 3  # every reply is primed with <|start|>assistant<|message|>
# Not in the cookbook: each tool call's framing (call id/type wrapper around name and arguments),
# a deliberately small constant; name and arguments themselves are counted as text.
TOKENS_PER_TOOL_CALL: Final = 3


def message_counter(
    method: Method = "exact", *, model: str | None = None, encoding: str | None = None
) -> Callable[[Mapping[str, Any]], int]:
    """A reusable TOK-4 counter of one message: `counter(message) -> tokens` with the framing overhead.

    method: "estimate" applies TOK-1 to every text part, "approx" approx_tokens(), "exact" count_tokens().
    The encoding (given, else the model's) is resolved here once; an exact counter loads it on first use.
    """
    text_tokens = _text_counter(method, model=model, encoding=encoding)
    family = _family_format(method, model=model, encoding=encoding)
    if family is not None:
        family_message = family.message
        return lambda message: family_message(message, text_tokens)
    return lambda message: _count_message(message, text_tokens)


def reply_priming_tokens(
    method: Method = "exact", *, model: str | None = None, encoding: str | None = None
) -> int:
    """Tokens a prompt costs once, on top of its messages: OpenAI's REPLY_PRIMING_TOKENS, or for an open
    family (counted "exact" or "approx") its begin-of-text token and the header that primes the reply."""
    family = _family_format(method, model=model, encoding=encoding)
    if family is None:
        return REPLY_PRIMING_TOKENS
    return family.priming(_text_counter(method, model=model, encoding=encoding))


def _family_format(method: str, *, model: str | None, encoding: str | None) -> FamilyChatFormat | None:
    if method == "estimate":
        return None  # TOK-1 estimates keep the OpenAI framing: they never depend on the model
    return FAMILY_FORMATS.get(encoding if encoding is not None else encoding_for_model(model))


def count_message_tokens(
    message: Mapping[str, Any],
    *,
    method: Method = "exact",
    model: str | None = None,
    encoding: str | None = None,
) -> int:
    """TOK-4: tokens of one message in chat format.

    3 per message + role + content text + (name + 1) + per tool call (3 + function name + arguments).
    Tool results (role "tool") are their content plus the per-message overhead; tool_call_id and
    bookkeeping keys (tokens, pinned, message_id, seq, ...) are not counted. Content may be a str,
    None, or a list of parts: text parts count as text, other parts NON_TEXT_PART_TOKENS each.
    A stored "tokens" value is not consulted here: this function is what computes it (TOK-5).
    """
    return message_counter(method, model=model, encoding=encoding)(message)


def count_chat_tokens(
    messages: Iterable[Mapping[str, Any]],
    *,
    method: Method = "exact",
    model: str | None = None,
    encoding: str | None = None,
) -> int:
    """TOK-4: tokens of a whole prompt: the sum of count_message_tokens() plus reply_priming_tokens()."""
    counter = message_counter(method, model=model, encoding=encoding)
    priming = reply_priming_tokens(method, model=model, encoding=encoding)
    return sum(counter(message) for message in messages) + priming


def _text_counter(method: str, *, model: str | None, encoding: str | None) -> Callable[[str], int]:
    if method == "estimate":
        return estimate_message_tokens
    if method not in _METHODS:
        raise ValueError(f"unknown counting method {method!r}; use one of {', '.join(_METHODS)}")
    name = encoding if encoding is not None else encoding_for_model(model)
    check_encoding_name(name)
    if method == "approx":
        return lambda text: approx_tokens(text, name)

    def exact(text: str) -> int:
        return len(get_encoding(name).encode_ordinary(text)) if text else 0

    return exact


def _count_message(message: Mapping[str, Any], text_tokens: Callable[[str], int]) -> int:
    if not isinstance(message, Mapping):
        raise InvalidInput(f"a message must be a JSON object, got {type(message).__name__}")
    total = TOKENS_PER_MESSAGE
    role = message.get("role")
    if role:
        total += text_tokens(_as_text(role, "role"))
    total += _content_tokens(message.get("content"), text_tokens)
    name = message.get("name")
    if name:
        total += text_tokens(_as_text(name, "name")) + TOKENS_PER_NAME
    tool_calls = message.get("tool_calls")
    if tool_calls:
        if not isinstance(tool_calls, list | tuple):
            raise InvalidInput(f"tool_calls must be a list, got {type(tool_calls).__name__}")
        for call in tool_calls:
            total += _tool_call_tokens(call, text_tokens)
    function_call = message.get("function_call")  # the pre-tools single-call form
    if function_call:
        total += _tool_call_tokens({"function": function_call}, text_tokens)
    return total


def _content_tokens(content: Any, text_tokens: Callable[[str], int]) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list | tuple):
        total = 0
        for part in content:
            if isinstance(part, str):
                total += text_tokens(part)
            elif isinstance(part, Mapping):
                if part.get("type", "text") in TEXT_PART_TYPES:
                    text = part.get("text", part.get("refusal"))
                    total += text_tokens(_as_text(text, "content part text")) if text is not None else 0
                else:
                    total += NON_TEXT_PART_TOKENS
            else:
                raise InvalidInput(f"a content part must be an object or a string, got {type(part).__name__}")
        return total
    raise InvalidInput(
        f"message content must be a string, a list of content parts or null, got {type(content).__name__}"
    )


def _tool_call_tokens(call: Any, text_tokens: Callable[[str], int]) -> int:
    if not isinstance(call, Mapping):
        raise InvalidInput(f"a tool call must be an object, got {type(call).__name__}")
    function = call.get("function") or {}
    if not isinstance(function, Mapping):
        raise InvalidInput(f"a tool call's function must be an object, got {type(function).__name__}")
    name = function.get("name") or ""
    arguments = function.get("arguments") or ""
    if isinstance(arguments, Mapping | list):
        # Some clients hand over parsed arguments; the model sees them as compact JSON text.
        arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return (
        TOKENS_PER_TOOL_CALL
        + text_tokens(_as_text(name, "tool call name"))
        + text_tokens(_as_text(arguments, "tool call arguments"))
    )


def _as_text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
