"""COST-4: per-user budgets, daily and monthly, in tokens and/or cost, checked before the model is asked.

Windows are UTC: a day ends at midnight, a month on its last day. A post that would start while its
caller has reached a limit (spent >= limit) is refused with 429 `budget_exceeded` and a Retry-After
until that window resets, before it writes anything. A post already running finishes and is recorded,
so a budget can be passed by the replies of the posts that were running when it was reached (one reply
for a user who posts one at a time). Costs of models without a price count toward token limits only.

Limits: the deployment's defaults (BUDGET_DAILY_TOKENS, BUDGET_DAILY_USD, BUDGET_MONTHLY_TOKENS,
BUDGET_MONTHLY_USD), overridden per user by an administrator (PUT /budgets/{user_id}): a number, or
null for "no limit". The check reads the month's usage items and the user's budget item in one Query,
only when budgets are on (a default is set, or BUDGETS_ENABLED=true for per-user limits only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from chat_core.engine.costs import micros_to_dollars
from chat_core.errors import BudgetExceeded
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import ledger
from chat_core.store.ledger import BudgetRecord, UsageDayRecord

#: The limits a budget item may set, and how each is written in a request (cost limits in dollars).
LIMIT_KEYS: Final = ("daily_tokens", "daily_usd", "monthly_tokens", "monthly_usd")


@dataclass(frozen=True)
class Limits:
    """Limits in effect for one user; None is "no limit"."""

    daily_tokens: int | None = None
    daily_micros: int | None = None
    monthly_tokens: int | None = None
    monthly_micros: int | None = None

    def to_view(self) -> dict[str, Any]:
        def usd(micros: int | None) -> str | None:
            return None if micros is None else micros_to_dollars(micros)

        return {
            "daily_tokens": self.daily_tokens,
            "daily_usd": usd(self.daily_micros),
            "monthly_tokens": self.monthly_tokens,
            "monthly_usd": usd(self.monthly_micros),
        }


def _or_none(value: int) -> int | None:
    return value if value > 0 else None


def default_limits(settings: Settings) -> Limits:
    return Limits(
        daily_tokens=_or_none(settings.budget_daily_tokens),
        daily_micros=_or_none(settings.budget_daily_micros),
        monthly_tokens=_or_none(settings.budget_monthly_tokens),
        monthly_micros=_or_none(settings.budget_monthly_micros),
    )


def limits_for(settings: Settings, item: BudgetRecord | None) -> Limits:
    """The defaults, with what an administrator set for this user over them (stored as the request
    wrote it: tokens as integers, costs as integer micro-dollars under `*_micros`)."""
    given: Mapping[str, Any] = item.limits if item is not None else {}
    names = {f.name for f in fields(Limits)}
    overrides = {k: None if v is None else int(v) for k, v in given.items() if k in names}
    return replace(default_limits(settings), **overrides)


def day_of(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%d")


def month_start(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-01")


def next_day(now: datetime) -> datetime:
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=1)


def next_month(now: datetime) -> datetime:
    first = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (first + timedelta(days=32)).replace(day=1)


@dataclass(frozen=True)
class Standing:
    """A user's budget as it stands: limits, what was spent today and this month, when each resets."""

    limits: Limits
    day_tokens: int
    day_micros: int
    month_tokens: int
    month_micros: int
    now: datetime

    def reached(self) -> list[tuple[str, str, int, int]]:
        """Every limit reached: (window, what, spent, limit)."""
        checks = (
            ("daily", "tokens", self.day_tokens, self.limits.daily_tokens),
            ("daily", "cost", self.day_micros, self.limits.daily_micros),
            ("monthly", "tokens", self.month_tokens, self.limits.monthly_tokens),
            ("monthly", "cost", self.month_micros, self.limits.monthly_micros),
        )
        return [
            (window, what, spent, limit)
            for window, what, spent, limit in checks
            if limit is not None and spent >= limit
        ]

    def resets_at(self, window: str) -> datetime:
        return next_day(self.now) if window == "daily" else next_month(self.now)

    def to_view(self) -> dict[str, Any]:
        reached = self.reached()
        return {
            "limits": self.limits.to_view(),
            "today": {
                "tokens": self.day_tokens,
                "usd": micros_to_dollars(self.day_micros),
                "micros": self.day_micros,
            },
            "this_month": {
                "tokens": self.month_tokens,
                "usd": micros_to_dollars(self.month_micros),
                "micros": self.month_micros,
            },
            "daily_resets_at": _iso(next_day(self.now)),
            "monthly_resets_at": _iso(next_month(self.now)),
            "over": bool(reached),
            "reached": [{"window": w, "limit": what} for w, what, _, _ in reached],
        }


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def standing(
    days: Sequence[UsageDayRecord], item: BudgetRecord | None, settings: Settings, now: datetime
) -> Standing:
    """The standing from the month's day items (as `usage.read_since(month_start)` returns them)."""
    today = day_of(now)
    month = month_start(now)[:7]
    this_month = [d for d in days if str(d.day or "").startswith(month)]
    day_tokens, day_micros = ledger.sum_days([d for d in this_month if d.day == today])
    month_tokens, month_micros = ledger.sum_days(this_month)
    return Standing(limits_for(settings, item), day_tokens, day_micros, month_tokens, month_micros, now)


def read_standing(owner: str, settings: Settings, now: datetime | None = None) -> Standing:
    """One Query: the month's usage and the budget item."""
    now = now or datetime.now(UTC)
    days, item = ledger.read_since(owner, month_start(now))
    return standing(days, item, settings, now)


def check(owner: str, settings: Settings | None = None, now: datetime | None = None) -> None:
    """Refuse a post (BudgetExceeded, 429) when its caller has reached a limit. No read at all while
    budgets are off; one Query when they are on."""
    settings = settings or get_settings()
    if not settings.budgets_on:
        return
    current = read_standing(owner, settings, now)
    reached = current.reached()
    if not reached:
        return
    window, what, spent, limit = max(reached, key=lambda r: current.resets_at(r[0]))
    resets = current.resets_at(window)
    retry_after = max(1, math.ceil((resets - current.now).total_seconds()))
    amount = (
        f"{micros_to_dollars(spent)} of {micros_to_dollars(limit)}"
        if what == "cost"
        else f"{spent} of {limit} tokens"
    )
    metrics.add_metric(name="BudgetRefusals", unit=MetricUnit.Count, value=1)
    logger.info("post refused: budget reached", window=window, limit=what)
    raise BudgetExceeded(
        f"{window} {what} budget reached: {amount} spent; the model was not asked and nothing was stored. "
        f"It resets at {_iso(resets)}",
        window=window,
        limit=what,
        retry_after=retry_after,
    )
