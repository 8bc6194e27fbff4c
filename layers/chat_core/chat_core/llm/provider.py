"""The model client: the only code in chat_core that talks to a model (OpenAI-compatible HTTP or offline)."""

from __future__ import annotations

import email.utils
import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Literal, Protocol, runtime_checkable

import httpx

from chat_core import __version__
from chat_core.engine import tokens
from chat_core.engine.text import repaired, repaired_value
from chat_core.errors import ChatError, ProviderFailed
from chat_core.settings import Settings, get_settings

FailureKind = Literal["http_error", "timeout", "malformed", "connection", "too_large", "configuration"]

#: Keys of the OpenAI chat format; everything else on a message (tokens, pinned, message_id, seq, ...)
#: is our bookkeeping and is never sent to the model.
OPENAI_MESSAGE_KEYS: Final = ("role", "content", "name", "tool_calls", "tool_call_id")

#: Body text kept in a failure record. DynamoDB items are capped at 400 KB; 32 KB leaves room for the
#: conversation's own attributes and for the headers and attempt log kept beside it.
MAX_RECORDED_BODY_BYTES: Final = 32 * 1024
_MAX_RECORDED_HEADER_CHARS: Final = 512
_MAX_ERROR_DETAIL_CHARS: Final = 300
_HEADERS_OF_INTEREST: Final = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "retry-after",
        "retry-after-ms",
        "x-request-id",
        "request-id",
        "openai-model",
        "openai-processing-ms",
        "openai-version",
        "cf-ray",
        "server",
        "date",
    }
)
_RETRYABLE_STATUS: Final = frozenset({429}) | frozenset(range(500, 600))

OFFLINE_MODEL_NAME: Final = "offline-model"
OFFLINE_REPLY_PREFIX: Final = "[offline model]"


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

    `content` is "" when the model sent `content: null` (e.g. an answer made only of `tool_calls`);
    `raw` keeps the body exactly as parsed. `usage_reported` is False when the provider sent no usage
    or only part of it (TOK-6): the missing numbers are 0 and the caller stores its local count beside.
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


@runtime_checkable
class ChatProvider(Protocol):
    """Anything that turns a list of chat messages into a `Completion` or raises `ProviderFailed`."""

    def complete(
        self, messages: list[dict[str, Any]], *, model: str, time_budget_s: float | None = None
    ) -> Completion: ...


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


# -- the OpenAI-compatible HTTP provider --------------------------------------------------------------


@dataclass(frozen=True)
class _Received:
    """One HTTP exchange as received: status, headers, body bytes read (capped)."""

    status_code: int
    headers: httpx.Headers
    body: bytes
    over_limit: bool


class _AttemptFailed(Exception):
    """One attempt failed; `retryable` says whether another attempt could succeed."""

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind,
        retryable: bool,
        received: _Received | None = None,
        error: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: FailureKind = kind
        self.retryable = retryable
        self.received = received
        self.error = error
        self.retry_after_s = retry_after_s


_client_lock = threading.Lock()
_shared_client: httpx.Client | None = None


def _http_client() -> httpx.Client:
    """One pooled client per process, so warm invocations reuse open connections to the provider."""
    global _shared_client
    with _client_lock:
        if _shared_client is None or _shared_client.is_closed:
            _shared_client = httpx.Client(
                follow_redirects=False,
                limits=httpx.Limits(max_connections=20, max_keepalive_connections=10, keepalive_expiry=60),
                headers={"User-Agent": f"chat-history-service/{__version__}"},
            )
        return _shared_client


class OpenAICompatibleProvider:
    """`POST {LLM_BASE_URL}/chat/completions` with bounded, budget-aware retries (API-2, TOK-6)."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        min_attempt_seconds: float = 1.0,
        backoff_base_seconds: float = 0.5,
        backoff_max_seconds: float = 8.0,
    ) -> None:
        self.settings = settings if settings is not None else get_settings()
        if not self.settings.llm_base_url:
            raise ValueError("OpenAICompatibleProvider needs settings.llm_base_url (LLM_BASE_URL)")
        self.base_url = self.settings.llm_base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self._client = client
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 - jitter, not crypto
        self.min_attempt_seconds = min_attempt_seconds
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds

    # -- the call ---------------------------------------------------------------------------------

    def complete(
        self, messages: list[dict[str, Any]], *, model: str, time_budget_s: float | None = None
    ) -> Completion:
        """Ask the model; raises ProviderFailed with the provider's response on every kind of failure.

        `time_budget_s` is the wall time the whole call (all attempts and waits) may take, usually
        `time_budget_from_context(lambda_context)`. No attempt is started that cannot finish in it.
        """
        started = time.monotonic()
        deadline = None if time_budget_s is None else started + max(0.0, time_budget_s)
        model = model or self.settings.llm_model
        payload = json.dumps(
            {"model": model, "messages": to_openai_messages(messages)}, ensure_ascii=False
        ).encode("utf-8")
        attempts: list[dict[str, Any]] = []
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        headers.update(self._auth_header(model))

        max_attempts = 1 + max(0, self.settings.llm_max_retries)
        for number in range(1, max_attempts + 1):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise self._failed(
                    "no time left to call the model within the caller's time budget",
                    kind="timeout",
                    model=model,
                    attempts=attempts,
                )
            attempt_timeout = self.settings.llm_timeout_seconds
            if remaining is not None:
                attempt_timeout = min(attempt_timeout, remaining)
            attempt_started = time.monotonic()
            try:
                received = self._send(payload, headers, attempt_timeout, deadline)
                completion = self._parse(received, model)
            except _AttemptFailed as failure:
                elapsed = time.monotonic() - attempt_started
                entry: dict[str, Any] = {
                    "attempt": number,
                    "status_code": failure.received.status_code if failure.received else None,
                    "kind": failure.kind,
                    "elapsed_ms": round(elapsed * 1000, 1),
                }
                if failure.error:
                    entry["error"] = failure.error
                attempts.append(entry)
                wait = self._retry_wait(failure, number, max_attempts, elapsed, deadline)
                if wait is None:
                    raise self._failed(
                        failure.message if number == 1 else f"{failure.message} (after {number} attempts)",
                        kind=failure.kind,
                        model=model,
                        attempts=attempts,
                        received=failure.received,
                        error=failure.error,
                    ) from failure
                entry["retry_in_s"] = round(wait, 3)
                self._sleep(wait)
                continue
            return replace(
                completion, latency_ms=round((time.monotonic() - started) * 1000, 1), attempts=number
            )
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    # -- retry policy -----------------------------------------------------------------------------

    def _retry_wait(
        self,
        failure: _AttemptFailed,
        number: int,
        max_attempts: int,
        elapsed: float,
        deadline: float | None,
    ) -> float | None:
        """Seconds to wait before the next attempt, or None when there must be no next attempt."""
        if not failure.retryable or number >= max_attempts:
            return None
        backoff = min(self.backoff_max_seconds, self.backoff_base_seconds * 2.0 ** (number - 1))
        # "Equal jitter": never zero (so a struggling provider gets a pause), never in lockstep.
        wait = backoff * (0.5 + self._rng.random() / 2)
        if failure.retry_after_s is not None:
            wait = failure.retry_after_s
        if deadline is None:
            return wait if wait <= 60.0 else None
        # A retry must have at least as long as the attempt that just failed took (and a floor), so
        # it can finish; otherwise fail now and leave the time to the caller to record the failure.
        needed = max(self.min_attempt_seconds, elapsed)
        if time.monotonic() + wait + needed > deadline:
            return None
        return wait

    # -- HTTP -------------------------------------------------------------------------------------

    def _timeouts(self, attempt_timeout: float) -> httpx.Timeout:
        # httpx timeouts are per phase; split the attempt so connect + first byte stays within it.
        connect = min(self.settings.llm_connect_timeout_seconds, attempt_timeout / 4)
        read = max(0.001, attempt_timeout - connect)
        return httpx.Timeout(connect=connect, read=read, write=read, pool=connect)

    def _send(
        self, payload: bytes, headers: Mapping[str, str], attempt_timeout: float, deadline: float | None
    ) -> _Received:
        client = self._client if self._client is not None else _http_client()
        attempt_deadline = time.monotonic() + attempt_timeout
        if deadline is not None:
            attempt_deadline = min(attempt_deadline, deadline)
        limit = max(1, self.settings.llm_max_response_bytes)
        status: int | None = None
        resp_headers = httpx.Headers()
        body = bytearray()
        try:
            with client.stream(
                "POST", self.url, content=payload, headers=headers, timeout=self._timeouts(attempt_timeout)
            ) as response:
                status, resp_headers = response.status_code, response.headers
                # Decoded bytes are counted, so a compressed bomb is stopped too.
                for chunk in response.iter_bytes(chunk_size=65536):
                    body += chunk
                    if len(body) > limit:
                        return _Received(status, resp_headers, bytes(body[: limit + 1]), over_limit=True)
                    if time.monotonic() > attempt_deadline:
                        raise httpx.ReadTimeout("response body still arriving at the deadline")
        except httpx.TimeoutException as exc:
            received = None if status is None else _Received(status, resp_headers, bytes(body), False)
            phase = (
                "connecting to"
                if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)
                else "waiting for"
            )
            raise _AttemptFailed(
                f"model provider timed out ({phase} {self._where()} after {attempt_timeout:.1f}s)",
                kind="timeout",
                retryable=True,
                received=received,
                error=_describe(exc),
            ) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise _AttemptFailed(
                f"LLM_BASE_URL {self.base_url!r} is not an http(s) URL",
                kind="configuration",
                retryable=False,
                error=_describe(exc),
            ) from exc
        except httpx.TransportError as exc:
            received = None if status is None else _Received(status, resp_headers, bytes(body), False)
            raise _AttemptFailed(
                f"could not reach the model provider at {self._where()}: {_describe(exc)}",
                kind="connection",
                retryable=True,
                received=received,
                error=_describe(exc),
            ) from exc
        return _Received(status, resp_headers, bytes(body), over_limit=False)

    def _where(self) -> str:
        """The provider's address without credentials or query, for messages and records."""
        try:
            url = httpx.URL(self.base_url)
        except httpx.InvalidURL:
            return self.base_url.split("?", 1)[0]
        port = f":{url.port}" if url.port else ""
        return f"{url.scheme}://{url.host}{port}{url.path}"

    # -- parsing ----------------------------------------------------------------------------------

    def _parse(self, received: _Received, model: str) -> Completion:
        status = received.status_code
        if received.over_limit and 200 <= status < 300:
            raise _AttemptFailed(
                f"model provider response (HTTP {status}) is larger than the "
                f"{self.settings.llm_max_response_bytes} byte limit (LLM_MAX_RESPONSE_BYTES)",
                kind="too_large",
                retryable=False,
                received=received,
            )
        data: Any = None
        json_error: str | None = "body exceeds the read limit"
        if not received.over_limit:
            try:
                data = json.loads(received.body.decode("utf-8"))
                json_error = None
            except (UnicodeDecodeError, ValueError) as exc:
                json_error = _describe(exc)
        if not 200 <= status < 300:
            detail = _error_detail(data)
            raise _AttemptFailed(
                f"model provider answered HTTP {status}" + (f": {detail}" if detail else ""),
                kind="http_error",
                retryable=status in _RETRYABLE_STATUS,
                received=received,
                retry_after_s=_retry_after(received.headers) if status in _RETRYABLE_STATUS else None,
            )

        def malformed(why: str) -> _AttemptFailed:
            return _AttemptFailed(
                f"model provider sent a malformed response (HTTP {status}): {why}",
                kind="malformed",
                retryable=False,
                received=received,
            )

        if json_error is not None:
            raise malformed(f"body is not JSON ({json_error})")
        if not isinstance(data, dict):
            raise malformed(f"body is JSON {type(data).__name__}, expected an object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            detail = _error_detail(data)
            if detail:
                # Some gateways answer 200 with an error object instead of an error status.
                raise _AttemptFailed(
                    f"model provider returned an error: {detail}",
                    kind="http_error",
                    retryable=False,
                    received=received,
                )
            raise malformed(
                "no 'choices' in the body" if choices is None else "'choices' is empty or not a list"
            )
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise malformed("choices[0].message is missing or not an object")
        try:
            content = _content_text(message)
            tool_calls = _tool_calls(message.get("tool_calls"))
        except ValueError as exc:
            raise malformed(str(exc)) from exc
        finish_reason = choice.get("finish_reason")
        usage, reported = _usage(data.get("usage"))
        reply_model = data.get("model")
        request_id = received.headers.get("x-request-id") or received.headers.get("request-id")
        # A model may answer text no UTF-8 store takes (an unpaired surrogate escaped in its JSON): it is
        # repaired here, so the paid reply is stored rather than failing at write time.
        return Completion(
            content=repaired(content),
            model=repaired(reply_model) if isinstance(reply_model, str) and reply_model else model,
            usage=usage,
            usage_reported=reported,
            tool_calls=repaired_value(tool_calls),
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            raw=data,
            latency_ms=0.0,
            request_id=request_id,
        )

    # -- failure record ---------------------------------------------------------------------------

    def _failed(
        self,
        message: str,
        *,
        kind: FailureKind,
        model: str,
        attempts: list[dict[str, Any]],
        received: _Received | None = None,
        error: str | None = None,
    ) -> ProviderFailed:
        record = provider_response_record(received, url=f"{self._where()}/chat/completions", error=error)
        record["model"] = model
        record["attempts"] = attempts
        return ProviderFailed(
            message,
            provider_response=record,
            status_code=received.status_code if received is not None else None,
            kind=kind,
        )

    # -- API key ----------------------------------------------------------------------------------

    def _auth_header(self, model: str) -> dict[str, str]:
        try:
            key = resolve_api_key(self.settings)
        except ChatError as exc:
            raise ProviderFailed(
                exc.message,
                provider_response={"error": exc.message, "model": model, "attempts": []},
                status_code=None,
                kind="configuration",
            ) from exc
        return {"Authorization": f"Bearer {key}"} if key else {}


def provider_response_record(
    received: _Received | None, *, url: str | None = None, error: str | None = None
) -> dict[str, Any]:
    """What the provider sent, JSON-ready and capped so it fits in a DynamoDB item beside the message."""
    record: dict[str, Any] = {"status_code": None, "headers": {}, "body": None, "truncated": False}
    if url is not None:
        record["url"] = url
    if error is not None:
        record["error"] = error[:_MAX_RECORDED_HEADER_CHARS]
    if received is None:
        return record
    record["status_code"] = received.status_code
    record["headers"] = {
        name: value[:_MAX_RECORDED_HEADER_CHARS]
        for name, value in received.headers.items()
        if name in _HEADERS_OF_INTEREST or name.startswith("x-ratelimit-")
    }
    body = received.body
    record["body_bytes_read"] = len(body)
    if received.over_limit or len(body) > MAX_RECORDED_BODY_BYTES:
        # Cut on a byte boundary, then drop a split multi-byte character at the end.
        record["body"] = body[:MAX_RECORDED_BODY_BYTES].decode("utf-8", "ignore")
        record["truncated"] = True
        return record
    text = body.decode("utf-8", "replace")
    try:
        record["body"] = json.loads(text, parse_float=str, parse_constant=str)
    except ValueError:
        record["body"] = text
    return record


# -- parsing helpers -----------------------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    text = str(exc) or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {text}"[:_MAX_ERROR_DETAIL_CHARS]


def _error_detail(data: Any) -> str:
    """The human message inside an OpenAI-style error body, if there is one."""
    if not isinstance(data, dict):
        return ""
    error = data.get("error")
    if isinstance(error, dict):
        error = error.get("message") or error.get("type") or error.get("code")
    if error is None:
        error = data.get("message") or data.get("detail")
    return str(error)[:_MAX_ERROR_DETAIL_CHARS] if error else ""


def _retry_after(headers: httpx.Headers) -> float | None:
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


def _content_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        refusal = message.get("refusal")
        return refusal if isinstance(refusal, str) else ""
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


def _tool_calls(value: Any) -> list[dict[str, Any]] | None:
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


def _usage(value: Any) -> tuple[Usage, bool]:
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


# -- API key from the environment, SSM Parameter Store or Secrets Manager ------------------------------

_key_lock = threading.Lock()
_key_stores: dict[tuple[str, str], Any] = {}
_SECRET_JSON_KEYS: Final = ("api_key", "apiKey", "LLM_API_KEY", "key", "token")
_ARN_REGION: Final = re.compile(r"^arn:aws[a-z-]*:(?:secretsmanager|ssm):([a-z0-9-]+):")


def api_key_source(reference: str) -> tuple[Literal["ssm", "secretsmanager"], str, str | None]:
    """Where LLM_API_KEY_PARAMETER points: (service, name or ARN, region from the ARN if any).

    `arn:aws:secretsmanager:...` and `secret:NAME` are Secrets Manager; `ssm:NAME`, an SSM ARN or a
    plain name such as `/chat/llm-api-key` are SSM Parameter Store.
    """
    ref = reference.strip()
    match = _ARN_REGION.match(ref)
    region = match.group(1) if match else None
    if ref.startswith("secret:"):
        return "secretsmanager", ref.removeprefix("secret:"), None
    if ref.startswith("arn:") and ":secretsmanager:" in ref:
        return "secretsmanager", ref, region
    return "ssm", ref.removeprefix("ssm:"), region


def resolve_api_key(settings: Settings) -> str | None:
    """The API key: from LLM_API_KEY_PARAMETER (SSM/Secrets Manager, cached) if set, else LLM_API_KEY.

    Raises ChatError with a clear message when the parameter cannot be read.
    """
    reference = settings.llm_api_key_parameter
    if not reference:
        return settings.llm_api_key
    service, name, region = api_key_source(reference)
    store = _key_store(service, region or settings.region)
    # Imported here: only deployments that keep the key in AWS pay for the import.
    from aws_lambda_powertools.utilities.parameters import GetParameterError, TransformParameterError

    try:
        if service == "ssm":
            value = store.get(name, decrypt=True, max_age=settings.llm_api_key_cache_seconds)
        else:
            value = store.get(name, max_age=settings.llm_api_key_cache_seconds)
    except (GetParameterError, TransformParameterError) as exc:
        raise ChatError(
            f"could not read the model API key from {reference!r} (LLM_API_KEY_PARAMETER): {_describe(exc)}"
        ) from exc
    key = _key_from_value(value)
    if not key:
        raise ChatError(f"the model API key stored at {reference!r} (LLM_API_KEY_PARAMETER) is empty")
    return key


def _key_store(service: str, region: str) -> Any:
    from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
    from botocore.config import Config

    with _key_lock:
        store = _key_stores.get((service, region))
        if store is None:
            # Short timeouts: the key fetch shares the caller's time budget with the model call.
            config = Config(
                region_name=region, connect_timeout=2, read_timeout=3, retries={"max_attempts": 2}
            )
            store = (
                SSMProvider(boto_config=config) if service == "ssm" else SecretsProvider(boto_config=config)
            )
            _key_stores[(service, region)] = store
        return store


def _key_from_value(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("{"):
        # A secret holding JSON ({"api_key": "..."}) is common in Secrets Manager.
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict):
            for key in _SECRET_JSON_KEYS:
                candidate = data.get(key)
                if isinstance(candidate, str):
                    return candidate.strip()
            strings = [str(v) for v in data.values() if isinstance(v, str)]
            return strings[0].strip() if len(strings) == 1 else None
    return text


# -- the offline model --------------------------------------------------------------------------------


class OfflineProvider:
    """A deterministic built-in model used when LLM_BASE_URL is unset.

    Every reply starts with "[offline model]" and reports what it received (how many messages, how
    many tokens, the last user message and the one before it), so a user can see the history being
    carried without a real model. Usage is the local exact count (tiktoken, TOK-2/TOK-4) of the
    messages and of the reply, with a TOK-1 estimate as fallback, and is marked `usage_reported=True`:
    the offline model is the provider here and it does report usage, so the "usage present" path of
    TOK-6 is what a local user sees.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else get_settings()

    def complete(
        self, messages: list[dict[str, Any]], *, model: str, time_budget_s: float | None = None
    ) -> Completion:
        started = time.monotonic()
        model = model or self.settings.llm_model
        sent = to_openai_messages(messages)
        prompt_tokens = _local_chat_tokens(sent, model)
        content = self._reply(sent, prompt_tokens)
        completion_tokens = _local_text_tokens(content, model)
        usage = Usage(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens)
        digest = hashlib.sha256(json.dumps(sent, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        raw: dict[str, Any] = {
            "id": f"offline-{digest[:16]}",
            "object": "chat.completion",
            "model": OFFLINE_MODEL_NAME,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": usage.to_dict(),
        }
        return Completion(
            content=content,
            model=OFFLINE_MODEL_NAME,
            usage=usage,
            usage_reported=True,
            tool_calls=None,
            finish_reason="stop",
            raw=raw,
            latency_ms=round((time.monotonic() - started) * 1000, 1),
            offline=True,
        )

    @staticmethod
    def _reply(sent: Sequence[Mapping[str, Any]], prompt_tokens: int) -> str:
        roles = [m["role"] for m in sent]
        user_texts = [_plain_text(m.get("content")) for m in sent if m["role"] == "user"]
        parts = [
            f"{OFFLINE_REPLY_PREFIX} No LLM_BASE_URL is configured, so the built-in offline model answers.",
            f"I received {len(sent)} message{'s' if len(sent) != 1 else ''} ({_role_summary(roles)}), "
            f"{prompt_tokens} tokens in all.",
        ]
        if user_texts:
            parts.append(f"Your message: {_quote(user_texts[-1])}")
        if len(user_texts) > 1:
            parts.append(f"Before that you said: {_quote(user_texts[-2])}")
        return "\n".join(parts)


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _quote(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return f"“{flat}”"
    return f"“{flat[:limit]}…” ({len(text)} characters)"


def _role_summary(roles: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for role in roles:
        counts[role] = counts.get(role, 0) + 1
    return ", ".join(f"{n} {role}" for role, n in counts.items()) or "none"


def _local_chat_tokens(messages: list[dict[str, Any]], model: str) -> int:
    counter = getattr(tokens, "count_chat_tokens", None)
    if callable(counter):
        try:
            return int(counter(messages, model=model))
        except (ChatError, LookupError, ValueError, OSError):
            pass  # the estimate below still gives the user a useful number
    return sum(tokens.estimate_message_tokens(_plain_text(m.get("content"))) for m in messages)


def _local_text_tokens(text: str, model: str) -> int:
    counter = getattr(tokens, "count_tokens", None)
    if callable(counter):
        try:
            return int(counter(text, model))
        except (ChatError, LookupError, ValueError, OSError):
            pass
    return tokens.estimate_message_tokens(text)


# -- one provider per process -------------------------------------------------------------------------

_provider_lock = threading.Lock()
_cached_provider: tuple[Settings, ChatProvider] | None = None


def get_provider(settings: Settings | None = None) -> ChatProvider:
    """The process's provider: OpenAI-compatible when LLM_BASE_URL is set, else the offline model.

    Cached per process (and per settings), so the HTTP connection pool survives warm invocations.
    """
    global _cached_provider
    settings = settings if settings is not None else get_settings()
    with _provider_lock:
        if _cached_provider is not None and _cached_provider[0] == settings:
            return _cached_provider[1]
        provider: ChatProvider = (
            OfflineProvider(settings) if settings.offline_model else OpenAICompatibleProvider(settings)
        )
        _cached_provider = (settings, provider)
        return provider


def reset_provider() -> None:
    """Forget the cached provider, close the pooled HTTP client and drop cached API keys (tests)."""
    global _cached_provider, _shared_client
    with _provider_lock:
        _cached_provider = None
    with _client_lock:
        if _shared_client is not None:
            _shared_client.close()
        _shared_client = None
    with _key_lock:
        _key_stores.clear()
