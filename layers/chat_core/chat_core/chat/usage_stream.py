"""COST-3: the owners' usage of each day, added up from the table's stream instead of on the post path.

Every priced message (a reply, an appended answer with its usage: `cost_status` set) is an INSERT on the
table's stream; the summarizer's event source mapping already receives exactly those records. For each
(owner, day, model) of a batch, one GetItem and one UpdateItem add the records the day item does not
hold yet (`store.ledger.add_streamed`: a per-shard watermark makes a redelivered record count once). So
a post writes no usage item, one owner's concurrent posts never conflict over it, and the usage always
equals the sum of the priced messages stored; GET /usage and the budget check see a reply once the
stream delivered it (usually within a second or two).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from chat_core.chat import prices
from chat_core.engine.costs import Charge
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.store import ledger

#: The shard name used when an event carries none (a direct call; the template's tumbling window makes
#: Lambda name the shard of every batch).
NO_SHARD: Final = "unnamed-shard"


def priced(record: Mapping[str, Any]) -> tuple[str, str, str, str, Charge] | None:
    """(owner, day, model, sequence number, charge) of a record that stored a priced message, else None."""
    if record.get("eventName") != "INSERT":
        return None
    change = record.get("dynamodb") or {}
    message = ledger.message_of_image(change.get("NewImage"))
    if message is None or message.role != "assistant" or message.cost_status is None:
        return None
    number = str(change.get("SequenceNumber") or "")
    if not number.isdigit():
        return None
    charge = prices.charge_of(message)
    return message.owner, ledger.reply_day(message), charge.model, number, charge


def _shard_of(records: Sequence[Mapping[str, Any]], shard: str | None) -> str:
    """The watermark's name: the stream's label (the end of its ARN) and the shard. A table whose stream
    is turned off and on again gets a new stream, whose sequence numbers start afresh; so does the
    local server's embedded table at each start, whose one shard always has the same id."""
    arn = next((str(r.get("eventSourceARN")) for r in records if r.get("eventSourceARN")), "")
    label = arn.rsplit("/stream/", 1)[1] if "/stream/" in arn else ""
    return f"{label}|{shard or NO_SHARD}"


def record_usage(records: Sequence[Mapping[str, Any]], shard: str | None) -> int:
    """Add the priced messages of one stream batch to their owners' days; returns how many were added
    (records delivered before and already counted add nothing). StoreUnavailable propagates: the
    batch is retried, and what was added already is not added again."""
    groups: dict[tuple[str, str, str], list[tuple[str, Charge]]] = {}
    for record in records:
        found = priced(record)
        if found is not None:
            owner, day, model, number, charge = found
            groups.setdefault((owner, day, model), []).append((number, charge))
    now = time.time()
    added = 0
    position = _shard_of(records, shard)
    for (owner, day, model), charges in groups.items():
        added += ledger.add_streamed(owner, day, model, charges, position, now)
    if groups:
        metrics.add_metric(name="UsageRecorded", unit=MetricUnit.Count, value=added)
        logger.info("usage recorded from the stream", records=len(records), days=len(groups), added=added)
    return added
