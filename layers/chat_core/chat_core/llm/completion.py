"""What a model call returns (Completion, Usage), the provider protocol, the time a call may take."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal, Protocol, runtime_checkable

FailureKind = Literal["http_error", "timeout", "malformed", "connection", "too_large", "configuration"]

#: Keys of the OpenAI chat format; everything else on a message (tokens, pinned, message_id, seq, ...)
#: is our bookkeeping and is never sent to the model.
OPENAI_MESSAGE_KEYS: Final = ("role", "content", "name", "tool_calls", "tool_call_id")

#: Body text kept in a failure record. DynamoDB items are capped at 400 KB; 32 KB leaves room for the
#: conversation's own attributes and for the headers and attempt log kept beside it.
MAX_RECORDED_BODY_BYTES: Final = 32 * 1024

# -- public data --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """Token usage of one completion, as the provider reported it (zeros where it reported nothing)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Completion:
    """One model answer.

    `content` is "" when the model sent `content: null` (an answer made only of `tool_calls`, a refusal,
    a reply cut at its length limit before any text); `refusal` is the model's refusal text, kept apart
    from `content` (API-10). `extras` is everything else the model answered that a caller may need
    (API-10): `annotations`, a legacy `function_call`, `audio` (id, transcript, expires_at; not the
    audio bytes), and the usage breakdown `prompt_tokens_details` / `completion_tokens_details`
    (cached and reasoning tokens); None when there is none. `raw` keeps the body exactly as parsed.
    `usage_reported` is False when the provider sent no usage or only part of it (TOK-6): the missing
    numbers are 0 and the caller stores its local count beside.
    """

    content: str
    model: str
    usage: Usage
    usage_reported: bool
    tool_calls: list[dict[str, Any]] | None
    finish_reason: str | None
    raw: dict[str, Any]
    latency_ms: float
    offline: bool = False
    attempts: int = 1
    request_id: str | None = None
    refusal: str | None = None
    extras: dict[str, Any] | None = None
    #: Why a streamed answer stopped before the model finished (the stream broke, the caller went
    #: away, the time ran out); None for a whole answer. What arrived is kept (API-14).
    interrupted: str | None = None


#: Called with each chunk of a streamed answer, as the provider sent it (a Chat Completions chunk).
ChunkSink = Callable[[dict[str, Any]], None]


class StreamInterrupted(Exception):
    """A streamed answer stopped part way; `partial` is what arrived, as a Completion."""

    def __init__(self, reason: str, partial: Completion) -> None:
        super().__init__(reason)
        self.reason = reason
        self.partial = partial


@runtime_checkable
class ChatProvider(Protocol):
    """Anything that turns a list of chat messages into a `Completion` or raises `ProviderFailed`."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        time_budget_s: float | None = None,
        options: Mapping[str, Any] | None = None,
        on_chunk: ChunkSink | None = None,
    ) -> Completion:
        """`options`: further Chat Completions request fields (e.g. `max_completion_tokens`), sent as given;
        they never replace `model` or `messages`. With `on_chunk` the answer is streamed: each chunk is
        handed over as it arrives, and a stream that stops part way raises StreamInterrupted."""
        ...


def to_openai_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as the model must see them: OpenAI keys only, absent optional keys left out."""
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError(f"message {index} must be a mapping with a string 'role'")
        clean: dict[str, Any] = {"role": message["role"], "content": message.get("content")}
        for key in OPENAI_MESSAGE_KEYS[2:]:
            value = message.get(key)
            if value is not None:
                clean[key] = value
        out.append(clean)
    return out


def time_budget_from_context(
    context: object | None, *, safety_margin_s: float = 2.0, cap_s: float | None = None
) -> float | None:
    """The time a model call may take inside a Lambda invocation: remaining time minus a margin.

    The margin leaves room to store the answer (or the failure) after the call. `cap_s` bounds it
    further, e.g. by what is left of API Gateway's 30 s integration timeout when the function's own
    timeout is longer. None when there is neither a context that knows its remaining time nor a cap.
    """
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    budget = float(remaining()) / 1000.0 - safety_margin_s if callable(remaining) else None
    if cap_s is not None:
        budget = cap_s if budget is None else min(budget, cap_s)
    return None if budget is None else max(0.0, budget)
