"""GET /usage and PUT /budgets/{user_id} (COST-3, COST-4): a user's daily usage and cost by model, and
their budget; administrators (the JWT group or scope ADMIN_GROUP names) may read and set anyone's."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any, Final

from chat_core.chat import budgets
from chat_core.chat.views import cost_view
from chat_core.errors import Forbidden, InvalidInput
from chat_core.settings import get_settings
from chat_core.store import ledger
from chat_core.store.keys import is_valid_owner
from chat_core.store.ledger import BudgetRecord, UsageDayRecord

MAX_DAYS: Final = 366


def _day(value: str | None, name: str, default: date) -> date:
    if value is None:
        return default
    try:
        if len(value) != len("YYYY-MM-DD"):
            raise ValueError(value)
        return date.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be a date as YYYY-MM-DD, got {value!r}", field=name) from exc


def _whose(caller: str, user: str | None, admin: bool) -> str:
    if user is None or user == caller:
        return caller
    if not admin:
        raise Forbidden(
            "only an administrator may read or set another user's usage and budget "
            "(a JWT group or scope named by the deployment's ADMIN_GROUP)"
        )
    if not is_valid_owner(user):
        raise InvalidInput("user must be a user id (1-512 characters, no control characters)", field="user")
    return user


def _model_view(day: UsageDayRecord) -> dict[str, Any]:
    return {
        "model": day.model,
        "calls": day.calls,
        "prompt_tokens": day.prompt_tokens,
        "cached_tokens": day.cached_tokens,
        "completion_tokens": day.completion_tokens,
        "reasoning_tokens": day.reasoning_tokens,
        "total_tokens": day.prompt_tokens + day.completion_tokens,
        "cost": cost_view(day.cost_micros),
        "unpriced_calls": day.unpriced_calls,
        "estimated_calls": day.estimated_calls,
    }


def _sum(rows: list[dict[str, Any]]) -> dict[str, Any]:
    micros = sum(int(r["cost"]["micros"]) for r in rows)
    keys = (
        "calls",
        "prompt_tokens",
        "cached_tokens",
        "completion_tokens",
        "reasoning_tokens",
        "total_tokens",
    )
    return {
        **{key: sum(int(r[key]) for r in rows) for key in keys},
        "cost": cost_view(micros),
        "unpriced_calls": sum(int(r["unpriced_calls"]) for r in rows),
        "estimated_calls": sum(int(r["estimated_calls"]) for r in rows),
    }


def usage_report(
    caller: str,
    *,
    user: str | None = None,
    first: str | None = None,
    last: str | None = None,
    admin: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """GET /usage: the user's totals per UTC day and model from `first` to `last` (default: today), the
    totals of the range by model, and the budget as it stands today."""
    now = now or datetime.now(UTC)
    owner = _whose(caller, user, admin)
    today = now.astimezone(UTC).date()
    last_day = _day(last, "to", today)
    first_day = _day(first, "from", last_day if last is not None else today)
    if first_day > last_day:
        raise InvalidInput("from must not be after to", field="from")
    if (last_day - first_day).days + 1 > MAX_DAYS:
        raise InvalidInput(f"ask for at most {MAX_DAYS} days at once", field="from")
    items = ledger.read_days(owner, first_day.isoformat(), last_day.isoformat())
    days: dict[str, list[dict[str, Any]]] = {}
    by_model: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        row = _model_view(item)
        days.setdefault(str(item.day), []).append(row)
        by_model.setdefault(str(item.model), []).append(row)
    settings = get_settings()
    return {
        "user_id": owner,
        "from": first_day.isoformat(),
        "to": last_day.isoformat(),
        "days": [{"date": day, "models": rows, "totals": _sum(rows)} for day, rows in sorted(days.items())],
        "models": [{**_sum(rows), "model": model} for model, rows in sorted(by_model.items())],
        "totals": _sum([row for rows in days.values() for row in rows]),
        "budget": budgets.read_standing(owner, settings, now).to_view(),
    }


def _limit(body: Mapping[str, Any], key: str) -> tuple[str, int | None]:
    value = body[key]
    stored = key.replace("_usd", "_micros")
    if value is None:
        return stored, None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidInput(f"{key} must be a number of zero or more, or null for no limit", field=key)
    if key.endswith("_usd"):
        return stored, round(float(value) * 1_000_000)
    if not float(value).is_integer():
        raise InvalidInput(f"{key} must be a whole number of tokens", field=key)
    return stored, int(value)


def set_budget(caller: str, user: str, body: Mapping[str, Any], *, admin: bool) -> dict[str, Any]:
    """PUT /budgets/{user_id} (administrators): the user's limits, replacing what was set before. Each
    of `daily_tokens`, `daily_usd`, `monthly_tokens`, `monthly_usd` is a number, or null for no limit;
    a limit left out follows the deployment's default."""
    if not admin:
        raise Forbidden(
            "only an administrator may set budgets (a JWT group or scope named by the deployment's "
            "ADMIN_GROUP)"
        )
    owner = _whose(caller, user, admin)
    unknown = sorted(set(body) - set(budgets.LIMIT_KEYS))
    if unknown:
        raise InvalidInput(
            f"unknown fields {unknown}; a budget has {list(budgets.LIMIT_KEYS)}", field=unknown[0]
        )
    limits = dict(_limit(body, key) for key in budgets.LIMIT_KEYS if key in body)
    now = datetime.now(UTC)
    ledger.put_limits(
        BudgetRecord(
            owner=owner,
            limits=limits,
            updated_at=now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            updated_by=caller,
        )
    )
    settings = get_settings()
    answer = {"user_id": owner, "budget": budgets.read_standing(owner, settings, now).to_view()}
    if not settings.budgets_on:
        answer["warning"] = (
            "budgets are off in this deployment: set a default budget or BUDGETS_ENABLED=true "
            "(template parameter BudgetsEnabled) for this one to be enforced"
        )
    return answer
