"""PRV-1..3: run one queued job of a user's data, and queue it again when it stopped for time or waits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chat_core.errors import InvalidInput
from chat_core.privacy import erasure, export, import_run, imports
from chat_core.store import user_jobs


def run(message: dict[str, Any], *, time_left: Callable[[], float] = lambda: float("inf")) -> dict[str, Any]:
    """Run the job a queue message names; a job that stopped part way goes back on the queue."""
    kind, owner = message.get("kind"), message.get("owner")
    if not isinstance(owner, str):
        raise InvalidInput("a job message names its owner", field="owner")
    if kind == erasure.KIND:
        result = erasure.run_erasure(owner, time_left=time_left)
    elif kind == export.KIND:
        result = export.run_export(owner, str(message.get("job_id")), time_left=time_left)
    elif kind == imports.KIND:
        result = import_run.run_import(owner, str(message.get("job_id")), time_left=time_left)
    else:
        raise InvalidInput(f"unknown job kind {kind!r}", field="kind")
    if result["status"] in ("queued", "waiting"):
        user_jobs.enqueue(message, delay=int(result.get("delay", 0)))
    return result
