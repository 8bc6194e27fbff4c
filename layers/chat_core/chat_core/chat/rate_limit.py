"""OPS-4: the per-user rate limit of the routes that call the model.

Each user may start RATE_LIMIT_PER_MINUTE model-calling requests (a post, an edit, a regeneration, a
Chat Completions turn, streamed or not) per UTC minute; 0 turns the limit off (no DynamoDB call at all).
The check runs where the post starts its own work (`chat.post`, beside the budget check), before
anything is written or the model asked, and is one conditional UpdateItem that checks and counts
together (`store.rate_windows`). A request over the limit is refused with 429 `rate_limited` and a
Retry-After of the seconds left in the minute.

A retry answered from its Idempotency-Key's record (a replay) is not counted: the post looks that record
up first. Every other request that passes the check counts, including one that then fails. A Chat
Completions turn that writes before its post (the request's system prompt, a streamed turn's new
conversation) is counted before that write instead, replay or not.
"""

from __future__ import annotations

import math
import time
from typing import Final

from chat_core.errors import RateLimited
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import rate_windows

#: The length of a window, in seconds: windows are whole UTC minutes.
WINDOW_SECONDS: Final = 60


def check(owner: str, settings: Settings | None = None, now: float | None = None) -> None:
    """Count one model-calling request of `owner`, or refuse it (RateLimited, 429) when the caller has
    started RATE_LIMIT_PER_MINUTE of them this minute. Nothing at all while the limit is off."""
    settings = settings or get_settings()
    limit = settings.rate_limit_per_minute
    if limit <= 0:
        return
    now = time.time() if now is None else now
    start = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
    ends = start + WINDOW_SECONDS
    # The item outlives its window by one more, then DynamoDB's TTL removes it.
    if rate_windows.count_request(owner, start, limit, expires_at=ends + WINDOW_SECONDS):
        return
    retry_after = max(1, math.ceil(ends - now))
    metrics.add_metric(name="RateLimitRefusals", unit=MetricUnit.Count, value=1)
    logger.info("request refused: rate limit reached", limit=limit, retry_after=retry_after)
    raise RateLimited(
        f"rate limit reached: {limit} model-calling requests a minute; the model was not asked and nothing "
        f"was stored. Retry after {retry_after} s",
        limit=limit,
        retry_after=retry_after,
    )
