"""GET /v1/models (API-13): the configured models in OpenAI's list format (no model call, no I/O)."""

from __future__ import annotations

from typing import Any

from chat_core.settings import Settings, get_settings


def models_list(settings: Settings | None = None) -> dict[str, Any]:
    """GET /v1/models: the default model, the summary model and LLM_MODELS, once each."""
    settings = settings or get_settings()
    names = [settings.llm_model, settings.summary_model or "", *settings.llm_models]
    seen: list[str] = []
    for name in names:
        if name and name not in seen:
            seen.append(name)
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": 0, "owned_by": "chat-history"} for name in seen],
    }
