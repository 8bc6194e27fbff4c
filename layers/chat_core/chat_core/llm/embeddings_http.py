"""Embeddings from the provider (MEM-48): its OpenAI-compatible `POST {EMBEDDINGS_BASE_URL}/embeddings`
(EMBEDDINGS_BASE_URL unset: the chat model's LLM_BASE_URL).

Inputs go in batches of RECALL_EMBEDDINGS_BATCH per request, through the runtime's pooled HTTP client
(the chat provider's); a 429, a 5xx or a transport error is retried like a chat call (LLM_MAX_RETRIES,
jittered backoff, within the caller's time budget); every failure raises ProviderFailed with what the
provider sent. Loaded only when semantic recall is on with a provider (`llm.embeddings.new_embedder`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import httpx

from chat_core.engine import tokens
from chat_core.errors import ChatError, ProviderFailed
from chat_core.llm.api_key import resolve_api_key, resolve_embeddings_api_key
from chat_core.llm.client import _http_client, _Received, provider_response_record
from chat_core.llm.embeddings import Embeddings, batches
from chat_core.llm.parsing import describe, error_detail, retry_after
from chat_core.settings import Settings, get_settings

_RETRYABLE: Final = frozenset({429}) | frozenset(range(500, 600))


class OpenAICompatibleEmbeddings:
    """`POST {EMBEDDINGS_BASE_URL or LLM_BASE_URL}/embeddings`, `encoding_format: float`, `dimensions`
    when configured."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings if settings is not None else get_settings()
        base_url = self.settings.embeddings_url
        if not base_url:
            raise ValueError("OpenAICompatibleEmbeddings needs EMBEDDINGS_BASE_URL or LLM_BASE_URL")
        self.url = f"{base_url.rstrip('/')}/embeddings"
        self._client = client
        self._sleep = sleep
        self._rng = random.Random()  # noqa: S311 - jitter, not crypto

    def embed(self, texts: Sequence[str], *, model: str, time_budget_s: float | None = None) -> Embeddings:
        started = time.monotonic()
        deadline = None if time_budget_s is None else started + max(0.0, time_budget_s)
        vectors: list[list[float]] = []
        used = 0
        reported = True
        answered = model
        requests = 0
        for batch in batches(list(texts), self.settings.recall_embeddings_batch):
            data, requests_made = self._request(batch, model, deadline)
            requests += requests_made
            found, count = _vectors(data, len(batch), self.url)
            vectors.extend(found)
            if count is None:
                reported = False
                used += sum(tokens.count_tokens(t, model) for t in batch)
            else:
                used += count
            if isinstance(data.get("model"), str) and data["model"]:
                answered = data["model"]
        return Embeddings(
            vectors, answered, used, reported, requests, round((time.monotonic() - started) * 1000, 1)
        )

    def _request(
        self, batch: Sequence[str], model: str, deadline: float | None
    ) -> tuple[dict[str, Any], int]:
        body: dict[str, Any] = {"model": model, "input": list(batch), "encoding_format": "float"}
        if self.settings.recall_embeddings_dimensions:
            body["dimensions"] = self.settings.recall_embeddings_dimensions
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", **self._auth(model)}
        client = self._client if self._client is not None else _http_client()
        attempts = 1 + max(0, self.settings.llm_max_retries)
        for number in range(1, attempts + 1):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise self._failed("no time left to call the embeddings model", "timeout", model, None)
            timeout = self.settings.llm_timeout_seconds
            if remaining is not None:
                timeout = min(timeout, remaining)
            received: _Received | None = None
            wait: float | None = None
            try:
                response = client.post(
                    self.url,
                    content=payload,
                    headers=headers,
                    timeout=httpx.Timeout(
                        timeout, connect=min(self.settings.llm_connect_timeout_seconds, timeout)
                    ),
                )
                body_bytes = response.content
                over = len(body_bytes) > self.settings.llm_max_response_bytes
                received = _Received(
                    response.status_code,
                    response.headers,
                    body_bytes[: self.settings.llm_max_response_bytes + 1],
                    over,
                )
            except httpx.TimeoutException as exc:
                failure = self._failed(
                    f"the embeddings model timed out: {describe(exc)}", "timeout", model, None
                )
            except httpx.TransportError as exc:
                failure = self._failed(
                    f"could not reach the embeddings model: {describe(exc)}", "connection", model, None
                )
            else:
                status = received.status_code
                if 200 <= status < 300 and not received.over_limit:
                    try:
                        data = json.loads(received.body.decode("utf-8"))
                    except (UnicodeDecodeError, ValueError) as exc:
                        raise self._failed(
                            f"the embeddings model sent a body that is not JSON ({describe(exc)})",
                            "malformed",
                            model,
                            received,
                        ) from exc
                    if not isinstance(data, dict):
                        raise self._failed(
                            "the embeddings answer is not a JSON object", "malformed", model, received
                        )
                    return data, number
                if received.over_limit:
                    raise self._failed(
                        "the embeddings answer is over the read limit", "too_large", model, received
                    )
                try:
                    detail = error_detail(json.loads(received.body.decode("utf-8")))
                except (UnicodeDecodeError, ValueError):
                    detail = None
                failure = self._failed(
                    f"the embeddings model answered HTTP {status}" + (f": {detail}" if detail else ""),
                    "http_error",
                    model,
                    received,
                )
                if status not in _RETRYABLE:
                    raise failure
                wait = retry_after(received.headers)
            if number == attempts:
                raise failure
            pause = (
                wait
                if wait is not None
                else min(8.0, 0.5 * 2 ** (number - 1)) * (0.5 + self._rng.random() / 2)
            )
            if deadline is not None and time.monotonic() + pause >= deadline:
                raise failure
            self._sleep(pause)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _failed(self, message: str, kind: str, model: str, received: _Received | None) -> ProviderFailed:
        record = provider_response_record(received, url=self.url.split("?", 1)[0])
        record["model"] = model
        return ProviderFailed(
            message,
            provider_response=record,
            status_code=received.status_code if received is not None else None,
            kind=kind,
        )

    def _auth(self, model: str) -> dict[str, str]:
        # Another address than the chat model's gets its own key (MEM-56), never the chat model's.
        resolve = resolve_embeddings_api_key if self.settings.embeddings_base_url else resolve_api_key
        try:
            key = resolve(self.settings)
        except ChatError as exc:
            raise ProviderFailed(
                exc.message, provider_response={"error": exc.message, "model": model}, kind="configuration"
            ) from exc
        return {"Authorization": f"Bearer {key}"} if key else {}


def _vectors(data: dict[str, Any], expected: int, url: str) -> tuple[list[list[float]], int | None]:
    """The vectors of an answer in input order, and its reported input tokens (None: not reported)."""
    items = data.get("data")
    if not isinstance(items, list) or len(items) != expected:
        raise ProviderFailed(
            f"the embeddings answer holds {len(items) if isinstance(items, list) else 'no'} vectors "
            f"for {expected} inputs",
            provider_response={"url": url, "body": str(data)[:2000]},
            kind="malformed",
        )
    ordered = sorted(items, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
    vectors: list[list[float]] = []
    for item in ordered:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
            raise ProviderFailed(
                "an embedding in the answer is not a list of numbers",
                provider_response={"url": url},
                kind="malformed",
            )
        vectors.append([float(x) for x in vector])
    usage = data.get("usage")
    count = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return vectors, int(count) if isinstance(count, int) and count >= 0 else None
