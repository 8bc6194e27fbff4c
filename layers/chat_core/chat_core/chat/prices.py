"""COST-1: the price table in effect: the built-in one, overlaid by the deployment's own.

A deployment changes prices without a code change: the `PRICES` environment variable (template
parameter `PriceOverrides`, a stack update) or the SSM parameter named by `PRICES_PARAMETER` (template
parameter `PricesParameter`), read again after `PRICES_CACHE_SECONDS` (300 s), so a `aws ssm
put-parameter` reaches every function within five minutes with no deploy at all. Both hold JSON:
`{"model": {"input": 2.5, "cached_input": 1.25, "output": 10}}`, dollars per 1M tokens; the SSM
parameter wins over `PRICES` for a model both name. An override that cannot be read or parsed is
logged as an error and left out (the other prices stay in effect): a pricing typo never stops posts.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

from chat_core.engine import costs
from chat_core.engine.costs import Charge, Price, TokenUse
from chat_core.errors import InvalidInput
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.runtime import current, for_settings
from chat_core.settings import Settings, get_settings
from chat_core.store import ledger
from chat_core.store.records import MessageRecord

#: The runtime's SSM provider of the price parameter (it caches the value for PRICES_CACHE_SECONDS).
PRICES_SSM: Final = "chat.prices.ssm"
#: The runtime's parsed overrides, by (source, text): each text is parsed (and a bad one logged) once.
PARSED_OVERRIDES: Final = "chat.prices.parsed"


def _overrides(text: str, source: str) -> dict[str, Price]:
    parsed: dict[tuple[str, str], dict[str, Price]] = current().resource(PARSED_OVERRIDES, lambda _: {})
    cached = parsed.get((source, text))
    if cached is not None:
        return cached
    try:
        table = costs.parse_prices(json.loads(text), source=source)
    except (ValueError, InvalidInput) as exc:
        message = exc.message if isinstance(exc, InvalidInput) else f"not JSON ({exc})"
        logger.error("price override ignored", source=source, error=message)
        metrics.add_metric(name="PriceOverrideErrors", unit=MetricUnit.Count, value=1)
        table = {}
    parsed[(source, text)] = table
    return table


def _parameter_text(settings: Settings) -> str:
    name = settings.prices_parameter
    if not name:
        return ""
    from aws_lambda_powertools.utilities.parameters import GetParameterError

    provider = for_settings(settings).resource(PRICES_SSM, _new_ssm)
    try:
        value = provider.get(name, max_age=settings.prices_cache_seconds)
    except GetParameterError as exc:
        logger.error("price parameter unreadable; built-in prices used", parameter=name, error=str(exc))
        metrics.add_metric(name="PriceOverrideErrors", unit=MetricUnit.Count, value=1)
        return ""
    return value if isinstance(value, str) else ""


def _new_ssm(settings: Settings) -> Any:
    from aws_lambda_powertools.utilities.parameters import SSMProvider
    from botocore.config import Config

    return SSMProvider(boto_config=Config(region_name=settings.region, connect_timeout=2, read_timeout=3))


def price_table(settings: Settings | None = None) -> dict[str, Price]:
    """Built-in prices, then `PRICES`, then the SSM parameter's (a later source wins per model)."""
    settings = settings or get_settings()
    table = dict(costs.builtin_table()[1])
    if settings.prices:
        table.update(_overrides(settings.prices, "PRICES"))
    parameter = _parameter_text(settings)
    if parameter:
        table.update(_overrides(parameter, f"SSM parameter {settings.prices_parameter}"))
    return table


def charge(
    model: str,
    prompt: int,
    completion: int,
    details: Any = None,
    *,
    estimated: bool = False,
    settings: Settings | None = None,
) -> Charge:
    """The charge of one model call at the prices in effect (COST-1)."""
    use = TokenUse.from_usage(prompt, completion, details if isinstance(details, dict) else None)
    return costs.charge_for(model, use, price_table(settings), estimated=estimated)


def cost_message(
    message: MessageRecord, *, estimated: bool, settings: Settings | None = None
) -> tuple[MessageRecord, Charge]:
    """COST-2: price an assistant message's model call: the message with it recorded (`cost_micros`,
    `cost_status`) and the charge, from its reported usage and breakdowns, or (`estimated`) from its
    local count."""
    found = costs.charge_for(
        str(message.model or ""),
        ledger.use_of(message, estimated),
        price_table(settings),
        estimated=estimated,
    )
    return replace(message, cost_micros=found.cost_micros, cost_status=found.status), found


def charge_of(message: MessageRecord) -> Charge:
    """The charge recorded on a priced message (`cost_message` ran on it)."""
    return ledger.charge_of(message)
