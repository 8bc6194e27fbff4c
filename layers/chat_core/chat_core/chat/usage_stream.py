"""COST-3: the owners' usage of each day, added up from the table's stream instead of on the post path.

Every priced message (a reply, an appended answer with its usage: `cost_status` set) is an INSERT on the
table's stream, and so is a reply carrying its turn's other calls (`charges`, MEM-50: the current
message's embedding); the summarizer's event source mapping already receives exactly those records. For
each (owner, day, model) of a batch, one GetItem and one UpdateItem add the records the day item does not
hold yet (`store.ledger.add_streamed`: a per-shard watermark makes a redelivered record count once). So
with budgets off a post writes no usage item, one owner's concurrent posts never conflict over it, and
the usage always equals the sum of the priced messages stored; GET /usage sees a reply once the stream
delivered it (usually within a second or two). With budgets on (COST-4) the post counts its own reply in
the transaction that stores it and marks it `counted`: the stream leaves such a message out, so each
message is counted by exactly one of the two.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from chat_core.engine.costs import Charge
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.store import ledger

#: The shard name used when an event carries none (a direct call; the template's tumbling window makes
#: Lambda name the shard of every batch).
NO_SHARD: Final = "unnamed-shard"


def priced(record: Mapping[str, Any]) -> list[tuple[str, str, str, str, Charge]]:
    """(owner, day, model, sequence number, charge) of each model call a record that stored a priced
    message carries: the reply's own, and the turn's other calls it carries (MEM-50: the current
    message's embedding), all on the reply's day. Empty for any other record, and for a message the
    transaction that stored it counted already (`counted`, budgets on)."""
    if record.get("eventName") != "INSERT":
        return []
    change = record.get("dynamodb") or {}
    message = ledger.message_of_image(change.get("NewImage"))
    if message is None or message.counted:
        return []  # COST-4: counted by the transaction that stored it
    number = str(change.get("SequenceNumber") or "")
    if not number.isdigit():
        return []
    day = ledger.reply_day(message)
    return [(message.owner, day, charge.model, number, charge) for charge in ledger.charges_of(message)]


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
        for owner, day, model, number, charge in priced(record):
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
