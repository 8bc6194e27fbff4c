"""The OpenAI-compatible HTTP client: one pooled httpx client, retries, and failures recorded whole."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import httpx

from chat_core import __version__
from chat_core.engine.text import repaired, repaired_value
from chat_core.errors import ChatError, ProviderFailed
from chat_core.llm.api_key import resolve_api_key
from chat_core.llm.completion import (
    MAX_RECORDED_BODY_BYTES,
    ChunkSink,
    Completion,
    FailureKind,
    StreamInterrupted,
    to_openai_messages,
)
from chat_core.llm.parsing import (
    content_text,
    describe,
    error_detail,
    parse_extras,
    parse_refusal,
    parse_tool_calls,
    parse_usage,
    retry_after,
)
from chat_core.llm.streaming import StreamAccumulator, StreamStopped, read_events
from chat_core.runtime import current
from chat_core.settings import Settings, get_settings

_MAX_RECORDED_HEADER_CHARS: Final = 512
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


#: The runtime's pooled HTTP client (`_http_client`).
HTTP_POOL: Final = "llm.client.http_pool"


def new_http_client(settings: Settings) -> httpx.Client:
    """A pooled HTTP client for the provider (its timeouts are set per request)."""
    return httpx.Client(
        follow_redirects=False,
        limits=httpx.Limits(max_connections=20, max_keepalive_connections=10, keepalive_expiry=60),
        headers={"User-Agent": f"chat-history-service/{__version__}"},
    )


def _http_client() -> httpx.Client:
    """The runtime's pooled client, so warm invocations reuse open connections to the provider."""
    return current().resource(HTTP_POOL, new_http_client, close=httpx.Client.close)


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
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        time_budget_s: float | None = None,
        options: Mapping[str, Any] | None = None,
        on_chunk: ChunkSink | None = None,
    ) -> Completion:
        """Ask the model; raises ProviderFailed with the provider's response on every kind of failure.

        With `on_chunk` the request asks for a stream (`stream: true`, usage in the last chunk) and each
        chunk is handed over as it arrives (API-14); no attempt is retried once a chunk was handed over,
        and a stream that stops part way raises StreamInterrupted with what arrived.

        `time_budget_s` is the wall time the whole call (all attempts and waits) may take, usually
        `time_budget_from_context(lambda_context)`. No attempt is started that cannot finish in it.
        """
        started = time.monotonic()
        deadline = None if time_budget_s is None else started + max(0.0, time_budget_s)
        model = model or self.settings.llm_model
        body = {k: v for k, v in (options or {}).items() if k not in ("model", "messages", "stream")}
        body.update(model=model, messages=to_openai_messages(messages))
        if on_chunk is not None:
            body["stream"] = True
            body["stream_options"] = {**dict(body.get("stream_options") or {}), "include_usage": True}
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
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
                if on_chunk is None:
                    received = self._send(payload, headers, attempt_timeout, deadline)
                else:
                    received = self._send_stream(payload, headers, attempt_timeout, deadline, on_chunk)
                completion = self._parse(received, model)
            except StreamStopped as stopped:
                try:
                    partial = self._parse(stopped.received, model)
                except _AttemptFailed:  # what arrived does not read as an answer: keep nothing of it
                    empty = json.dumps(StreamAccumulator().body()).encode("utf-8")
                    partial = self._parse(_Received(200, httpx.Headers(), empty, False), model)
                latency = round((time.monotonic() - started) * 1000, 1)
                raise StreamInterrupted(
                    stopped.reason,
                    replace(partial, latency_ms=latency, attempts=number, interrupted=stopped.reason),
                ) from stopped
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
                error=describe(exc),
            ) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise _AttemptFailed(
                f"LLM_BASE_URL {self.base_url!r} is not an http(s) URL",
                kind="configuration",
                retryable=False,
                error=describe(exc),
            ) from exc
        except httpx.TransportError as exc:
            received = None if status is None else _Received(status, resp_headers, bytes(body), False)
            raise _AttemptFailed(
                f"could not reach the model provider at {self._where()}: {describe(exc)}",
                kind="connection",
                retryable=True,
                received=received,
                error=describe(exc),
            ) from exc
        return _Received(status, resp_headers, bytes(body), over_limit=False)

    def _send_stream(
        self,
        payload: bytes,
        headers: Mapping[str, str],
        attempt_timeout: float,
        deadline: float | None,
        on_chunk: ChunkSink,
    ) -> _Received:
        """A streamed attempt: Server-Sent Events read line by line, each chunk handed to `on_chunk`;
        the answer folded into the body a non-streamed answer has. An error status, or a provider that
        answers without streaming, is read as a whole (`_send`'s rules)."""
        client = self._client if self._client is not None else _http_client()
        # A stream may run as long as the caller's whole budget (a long reply through a function URL
        # outlasts one attempt's timeout); a stalled one is caught by the read timeout between chunks.
        attempt_deadline = deadline if deadline is not None else math.inf
        limit = max(1, self.settings.llm_max_response_bytes)
        stream_headers = {**headers, "Accept": "text/event-stream"}
        folded = StreamAccumulator()
        status: int | None = None
        resp_headers = httpx.Headers()

        def arrived() -> _Received:
            return _Received(200, resp_headers, json.dumps(folded.body()).encode("utf-8"), False)

        try:
            with client.stream(
                "POST",
                self.url,
                content=payload,
                headers=stream_headers,
                timeout=self._timeouts(attempt_timeout),
            ) as response:
                status, resp_headers = response.status_code, response.headers
                if not 200 <= status < 300 or "text/event-stream" not in resp_headers.get("content-type", ""):
                    body = bytearray()
                    for chunk in response.iter_bytes(chunk_size=65536):
                        body += chunk
                        if len(body) > limit:
                            return _Received(status, resp_headers, bytes(body[: limit + 1]), over_limit=True)
                    return _Received(status, resp_headers, bytes(body), over_limit=False)
                read_events(response.iter_lines(), folded, on_chunk, limit, attempt_deadline, arrived)
        except httpx.TransportError as exc:
            if folded.chunks == 0:
                raise _AttemptFailed(
                    f"could not stream from the model provider at {self._where()}: {describe(exc)}",
                    kind="timeout" if isinstance(exc, httpx.TimeoutException) else "connection",
                    retryable=True,
                    error=describe(exc),
                ) from exc
            raise StreamStopped(f"the model's stream broke ({describe(exc)})", arrived()) from exc
        if folded.finish_reason is None:
            raise StreamStopped("the model's stream ended before the model finished", arrived())
        return arrived()

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
                json_error = describe(exc)
        if not 200 <= status < 300:
            detail = error_detail(data)
            raise _AttemptFailed(
                f"model provider answered HTTP {status}" + (f": {detail}" if detail else ""),
                kind="http_error",
                retryable=status in _RETRYABLE_STATUS,
                received=received,
                retry_after_s=retry_after(received.headers) if status in _RETRYABLE_STATUS else None,
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
            detail = error_detail(data)
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
            content = content_text(message)
            refusal = parse_refusal(message)
            tool_calls = parse_tool_calls(message.get("tool_calls"))
        except ValueError as exc:
            raise malformed(str(exc)) from exc
        finish_reason = choice.get("finish_reason")
        usage, reported = parse_usage(data.get("usage"))
        extras = parse_extras(message, data.get("usage"), data)
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
            refusal=repaired(refusal) if refusal is not None else None,
            extras=repaired_value(extras) if extras is not None else None,
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
