"""The runtime's model provider: OpenAI-compatible when LLM_BASE_URL is set, else the offline model."""

from __future__ import annotations

from typing import Final

from chat_core.llm.client import OpenAICompatibleProvider
from chat_core.llm.completion import ChatProvider
from chat_core.llm.offline import OfflineProvider
from chat_core.runtime import for_settings
from chat_core.settings import Settings

#: The runtime's provider (`get_provider`); a test may hold a stand-in under this key (`Runtime.provide`).
PROVIDER: Final = "llm.provider"


def new_provider(settings: Settings) -> ChatProvider:
    """OpenAI-compatible when LLM_BASE_URL is set, else the offline model."""
    return OfflineProvider(settings) if settings.offline_model else OpenAICompatibleProvider(settings)


def get_provider(settings: Settings | None = None) -> ChatProvider:
    """The runtime's provider, built once, so the HTTP connection pool survives warm invocations.

    Settings other than the runtime's (a test's) get a provider of their own, built for the call.
    """
    return for_settings(settings).resource(PROVIDER, new_provider)
