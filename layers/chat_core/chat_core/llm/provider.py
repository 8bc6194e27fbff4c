"""The process's model provider: OpenAI-compatible when LLM_BASE_URL is set, else the offline model."""

from __future__ import annotations

import threading

from chat_core.llm.api_key import forget_keys
from chat_core.llm.client import OpenAICompatibleProvider, close_shared_client
from chat_core.llm.completion import ChatProvider
from chat_core.llm.offline import OfflineProvider
from chat_core.settings import Settings, get_settings

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
    global _cached_provider
    with _provider_lock:
        _cached_provider = None
    close_shared_client()
    forget_keys()


def reset_process_state() -> None:
    """`chat_core.reset()`: the provider, its HTTP client and cached keys are rebuilt on next use."""
    reset_provider()
