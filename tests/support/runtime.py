"""Tests build the runtime they need instead of resetting process state (chat_core.runtime)."""

from __future__ import annotations

from chat_core.runtime import Runtime, use
from chat_core.settings import Settings


def renew() -> Runtime:
    """A runtime from the environment as it is now, installed in place of the current one (closed)."""
    return install(Runtime.from_env().settings)


def drop() -> None:
    """Close the installed runtime and install none: the next use builds one from the environment as it
    is then (after a test's monkeypatched variables are undone)."""
    previous = use(None)
    if previous is not None:
        previous.close()


def install(settings: Settings) -> Runtime:
    """A runtime of `settings`, installed in place of the current one (closed)."""
    runtime = Runtime.from_settings(settings)
    previous = use(runtime)
    if previous is not None:
        previous.close()
    return runtime
