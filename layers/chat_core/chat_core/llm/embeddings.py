"""Embeddings for semantic recall (MEM-48): the runtime's embedder and the offline stand-in.

`get_embedder()` is the runtime's embedder: the provider at EMBEDDINGS_BASE_URL, else LLM_BASE_URL
(`llm.embeddings_http`, its
OpenAI-compatible `POST /embeddings`), or, with no provider configured, the offline stand-in
(`OfflineEmbeddings`: deterministic, no network). This module loads no HTTP client: the window routes
import it, and only a deployment that turns semantic recall on with a provider loads one, when the first
embedding is asked for (the one documented lazy import, tests/unit/test_package_layout.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from chat_core.engine import tokens
from chat_core.llm.offline import OFFLINE_DIMENSIONS, OFFLINE_EMBEDDINGS_MODEL, offline_vector
from chat_core.runtime import for_settings
from chat_core.settings import Settings, get_settings

#: The runtime's embedder (`get_embedder`); a test may hold a stand-in under this key.
EMBEDDER: Final = "llm.embeddings"


@dataclass(frozen=True)
class Embeddings:
    """The vectors of the inputs, in order, and what they cost: the model that answered, the input
    tokens (as the provider reported them, else counted here), and how many requests it took."""

    vectors: list[list[float]]
    model: str
    prompt_tokens: int
    usage_reported: bool
    requests: int
    latency_ms: float


class Embedder(Protocol):
    def embed(
        self, texts: Sequence[str], *, model: str, time_budget_s: float | None = None
    ) -> Embeddings: ...


def batches(texts: Sequence[str], size: int) -> list[Sequence[str]]:
    """`texts` in runs of at most `size` (the inputs of one request)."""
    step = max(1, size)
    return [texts[i : i + step] for i in range(0, len(texts), step)]


class OfflineEmbeddings:
    """The embeddings stand-in used when EMBEDDINGS_BASE_URL and LLM_BASE_URL are unset: `offline_vector`
    of each input, the local token count as its usage (model "offline-embeddings", priced at nothing)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else get_settings()

    def embed(self, texts: Sequence[str], *, model: str, time_budget_s: float | None = None) -> Embeddings:
        started = time.monotonic()
        dims = self.settings.recall_embeddings_dimensions or OFFLINE_DIMENSIONS
        vectors = [offline_vector(text, dims) for text in texts]
        used = sum(tokens.count_tokens(text, model) for text in texts)
        requests = len(batches(list(texts), self.settings.recall_embeddings_batch))
        latency = round((time.monotonic() - started) * 1000, 1)
        return Embeddings(vectors, OFFLINE_EMBEDDINGS_MODEL, used, True, requests, latency)


def new_embedder(settings: Settings) -> Embedder:
    """The provider's embeddings at EMBEDDINGS_BASE_URL or LLM_BASE_URL, else the offline stand-in."""
    if not settings.embeddings_url:
        return OfflineEmbeddings(settings)
    from chat_core.llm.embeddings_http import OpenAICompatibleEmbeddings

    return OpenAICompatibleEmbeddings(settings)


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The runtime's embedder, built once (its HTTP pool is the chat provider's)."""
    return for_settings(settings).resource(EMBEDDER, new_embedder)


def enabled(settings: Settings | None = None) -> bool:
    """Whether semantic recall is configured (RECALL_EMBEDDINGS_MODEL)."""
    return bool((settings or get_settings()).recall_embeddings_model)
