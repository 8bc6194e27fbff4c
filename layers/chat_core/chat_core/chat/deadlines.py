"""How long a post may wait for its turn and retry storing its reply, within the invocation's time."""

from __future__ import annotations

import time
from typing import Any

from chat_core.settings import Settings

# Seconds left after the model call to store its answer (TransactWrite #2) before Lambda's deadline.
STORE_MARGIN_S = 3.0


# The least a model call is given: a post waits for its turn only while this still fits.
MIN_MODEL_SECONDS = 5.0


def wait_deadline(context: Any, settings: Settings) -> float:
    """When a post stops waiting for its turn at the conversation (monotonic seconds).

    At most TURN_WAIT_SECONDS, and never so long that the model call and the reply's write no longer
    fit in what is left of the invocation: a post that cannot get its turn answers 409 quickly.
    """
    wait = settings.turn_wait_seconds
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        wait = min(wait, max(1.0, float(remaining()) / 1000.0 - STORE_MARGIN_S - MIN_MODEL_SECONDS))
    return time.monotonic() + wait


def store_deadline(context: Any) -> float:
    """Until when storing the reply may retry a contended conversation before storing it on its own."""
    budget = STORE_MARGIN_S
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        budget = min(budget, max(0.0, float(remaining()) / 1000.0 - 1.0))
    return time.monotonic() + budget
