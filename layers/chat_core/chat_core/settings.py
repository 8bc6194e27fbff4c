"""The settings in effect: those of the process's runtime (`chat_core.runtime`).

`Settings` and how they are read from the environment live in `chat_core.config`; every module asks
`get_settings()` here, which is the current runtime's settings (read once, when the runtime is built).
"""

from __future__ import annotations

from chat_core.config import Settings
from chat_core.runtime import current

__all__ = ["Settings", "get_settings"]


def get_settings() -> Settings:
    """The current runtime's settings (a runtime built from the environment on first use)."""
    return current().settings
