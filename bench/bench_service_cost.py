"""COST-5: what the service itself costs per 1M posts, from measured item sizes and call counts.

Real `post_message` calls (the model stubbed) on conversations of 10, 1,000 and 10,000 messages; every
DynamoDB request of a post is metered (bench/dynamodb_meter.py): the items each write puts or updates
and the items each read returns, sized by DynamoDB's rules. Request units follow DynamoDB's on-demand
rules; dollars use the list prices below (one region, dated). Model tokens are not in these figures
(they are the model's bill; see GET /usage).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Final

from bench import Section, progress, verdict
from bench.bench_post_path import TABLE, _seed
from bench.bench_storage import FixedReplyModel, _reset_pynamodb, chat_service, message_text
from bench.dynamodb_meter import Tally, item_size, metered, moto_env, moto_fixes

#: AWS list prices, us-east-1, on-demand, as of the date (aws.amazon.com/dynamodb/pricing/on-demand,
#: /lambda/pricing, /api-gateway/pricing). Change them here; docs/costs.md's table follows `make bench`.
PRICES: Final[dict[str, Any]] = {
    "as_of": "2025-08-01",
    "region": "us-east-1",
    "dynamodb_write_request_units_per_million": 0.625,
    "dynamodb_read_request_units_per_million": 0.125,
    "dynamodb_storage_gb_month": 0.25,
    "lambda_gb_second_arm64": 0.0000133334,
    "lambda_requests_per_million": 0.20,
    "http_api_requests_per_million": 1.00,
}
LENGTHS: Final = (10, 1_000, 10_000)
POSTS: Final = 5
OWNER: Final = "bench-user"
MEMORY_GB: Final = 0.5  # template.yaml Globals: MemorySize 512
#: Time a Lambda also bills per DynamoDB round trip (in-region, single-digit ms; an assumption).
ROUND_TRIP_S: Final = 0.008
#: Time the post function waits for the model (billed as Lambda duration; an assumption, varies by model).
MODEL_WAIT_S: Final = 2.0
#: DynamoDB stores 100 bytes of overhead per item (and again per index entry).
ITEM_OVERHEAD: Final = 100


def _request_units(
    tally: Tally, before: dict[tuple[str, str], Stored], after: dict[tuple[str, str], Stored]
) -> tuple[float, float, float, dict[str, float]]:
    """(table write units, index write units, read units, table write units by item kind) of the metered
    requests. A write: 1 unit per KB of the item (the item after an update), 2 in a transaction; the
    listing index (projection ALL) is written too when the item is in it: once when its index key stays,
    twice (a delete and a put) when the write moves it, at 1 unit per KB (index writes are never
    transactional). A read: 1 unit per 4 KB of the items returned by one strongly consistent request."""
    writes = index = 0.0
    kinds: dict[str, float] = {}
    for transactional, _table, key, size in tally.writes:
        where = (key.get("pk", {}).get("S", ""), key.get("sk", {}).get("S", ""))
        now, was = after.get(where), before.get(where)
        if size is None:
            size = now.size if now is not None else 0
        units = (2 if transactional else 1) * max(1, math.ceil(size / 1024))
        writes += units
        kind = _kind(where)
        kinds[kind] = kinds.get(kind, 0.0) + units
        if now is not None and now.index_key is not None:
            moved = was is None or was.index_key != now.index_key
            index += (2 if moved and was is not None else 1) * max(1, math.ceil(now.size / 1024))
    reads = sum(
        max(1, math.ceil(size / 4096)) * (1.0 if consistent else 0.5) for _, size, consistent in tally.reads
    )
    return writes, index, reads, kinds


def _kind(key: tuple[str, str]) -> str:
    """What an item is, from its key (for the breakdown of a post's write units)."""
    from chat_core.store.keys import EVENT_SK_PREFIX, MESSAGE_SK_PREFIX, META_SK

    pk, sk = key
    if pk.startswith("IDEMPOTENCY#"):
        return "idempotency record"
    if "#USAGE" in pk:
        return "usage of the day"
    if sk.startswith(MESSAGE_SK_PREFIX):
        return "message"
    if sk.startswith(EVENT_SK_PREFIX):
        return "turn-log event"
    if sk == META_SK:
        return "conversation"
    return "other"


@dataclass(frozen=True)
class Stored:
    size: int
    index_key: str | None  # gsi1pk|gsi1sk when the item is in the listing index


def _table_bytes(client: Any) -> tuple[int, dict[tuple[str, str], Stored]]:
    """The table's stored bytes (items and their index entries, with DynamoDB's per-item overhead) and
    each item's size and listing-index key by key."""
    items: dict[tuple[str, str], Stored] = {}
    stored = 0
    pages = client.get_paginator("scan").paginate(TableName=TABLE)
    for page in pages:
        for item in page["Items"]:
            size = item_size(item)
            indexed = "gsi1pk" in item and "gsi1sk" in item
            index_key = f"{item['gsi1pk']['S']}|{item['gsi1sk']['S']}" if indexed else None
            items[(item["pk"]["S"], item["sk"]["S"])] = Stored(size, index_key)
            stored += size + ITEM_OVERHEAD
            if indexed:
                stored += size + ITEM_OVERHEAD  # the listing index projects the whole item
    return stored, items


def _measure(length: int, *, budgets: bool, keyed: bool = False) -> dict[str, Any]:
    import boto3
    from chat_core.http.request_commands import post_command
    from chat_core.http.schemas import PostMessageIn
    from chat_core.runtime import Runtime, use
    from moto import mock_aws

    from tests.support.table import create_table
    from tests.support.usage_feed import UsageFeed

    extra = {"BUDGET_DAILY_USD": "1000"} if budgets else {}
    model = FixedReplyModel()
    with moto_env(TABLE_NAME=TABLE, **extra), mock_aws(), chat_service(model) as post:
        create_table(TABLE)
        _reset_pynamodb()
        use(Runtime.from_env())  # a runtime of this run's settings
        client = boto3.client("dynamodb", region_name="us-east-1")
        conversation_id = _seed(client, post, length)
        feed = UsageFeed(TABLE)  # the summarizer's stream deliveries: the usage of the day (COST-3)
        before, was = _table_bytes(client)
        after = before
        units: list[tuple[float, float, float, dict[str, float]]] = []
        streamed: list[tuple[float, float, float, dict[str, float]]] = []
        calls: list[int] = []
        seconds: list[float] = []
        for n in range(POSTS):
            request = PostMessageIn(conversation_id=conversation_id, content=message_text(80_000 + n))
            key = f"bench-{length}-{n}" if keyed else None
            with metered() as tally:
                started = time.process_time()
                post(OWNER, post_command(request), idempotency_key=key)
                seconds.append(time.process_time() - started - tally.server_seconds)
            # Its reply delivered by the stream alone (one post per batch: the most a post costs there).
            with metered() as delivery:
                feed.drain()
            # The table after this post is the table before the next one: one Scan per post.
            after, now = _table_bytes(client)
            units.append(_request_units(tally, was, now))
            streamed.append(_request_units(delivery, was, now))
            calls.append(tally.total_calls)
            was = now
    middle = sorted(units, key=lambda u: u[0])[len(units) // 2]
    return {
        "wru": statistics.median(u[0] for u in units),
        "index_wru": statistics.median(u[1] for u in units),
        "rru": statistics.median(u[2] for u in units),
        "kinds": middle[3],
        "stream_wru": statistics.median(u[0] for u in streamed),
        "stream_rru": statistics.median(u[2] for u in streamed),
        "calls": statistics.median(calls),
        "cpu_s": statistics.median(seconds),
        "stored_bytes": (after - before) / POSTS,
    }


def _dollars(figures: dict[str, float], *, model_wait_s: float) -> dict[str, float]:
    """Dollars per 1M posts, by part."""
    million = 1_000_000
    duration = figures["cpu_s"] + figures["calls"] * ROUND_TRIP_S + model_wait_s
    return {
        "dynamodb_requests": (figures["wru"] + figures["index_wru"])
        * PRICES["dynamodb_write_request_units_per_million"]
        + figures["rru"] * PRICES["dynamodb_read_request_units_per_million"],
        "storage_month": figures["stored_bytes"] * million / 1e9 * PRICES["dynamodb_storage_gb_month"],
        "gb_seconds": duration * MEMORY_GB * million,
        "lambda": duration * MEMORY_GB * million * PRICES["lambda_gb_second_arm64"]
        + PRICES["lambda_requests_per_million"],
        "api": PRICES["http_api_requests_per_million"],
    }


def _budgets_row(off: dict[str, Any], on: dict[str, Any]) -> list[Any]:
    """COST-4: what budgets add to a post (the check's Query; the reply's usage counted in its
    TransactWrite #2), and that the stream then adds nothing for it."""
    calls = on["calls"] - off["calls"]
    wru, rru = on["wru"] - off["wru"], on["rru"] - off["rru"]
    usage = on["kinds"].get("usage of the day", 0.0)
    return [
        "what budgets add per post (1,000 messages)",
        f"{calls:+.0f} call (the check's Query), {wru:+.0f} write units in the table (the reply's usage "
        f"shard: {usage:.0f}, inside TransactWrite #2), {rru:+.1f} read units; the stream's usage update "
        f"then: {on['stream_wru']:.0f} write units (off: {off['stream_wru']:.0f})",
        "1 Query more, no call more to write; nothing counted twice",
        verdict(calls == 1 and usage > 0 and on["stream_wru"] == 0),
    ]


def run() -> list[Section]:
    rows: list[list[Any]] = []
    measured: dict[str, dict[str, float]] = {}
    with moto_fixes():
        for length in LENGTHS:
            progress(f"service cost: {length:,} messages")
            measured[f"{length:,}"] = _measure(length, budgets=False)
        progress("service cost: 1,000 messages with an Idempotency-Key")
        measured["1,000 + Idempotency-Key"] = _measure(1_000, budgets=False, keyed=True)
        progress("service cost: 1,000 messages with budgets on")
        measured["1,000 + budgets"] = _measure(1_000, budgets=True)
    totals = []
    for label, figures in measured.items():
        own = _dollars(figures, model_wait_s=0.0)
        waiting = _dollars(figures, model_wait_s=MODEL_WAIT_S)
        total = own["dynamodb_requests"] + own["lambda"] + own["api"]
        totals.append(total)
        rows.append(
            [
                label,
                f"{figures['calls']:.0f}",
                f"{figures['wru']:.0f} + {figures['index_wru']:.0f} / {figures['rru']:.1f}",
                f"${own['dynamodb_requests']:.2f}",
                f"{figures['stored_bytes'] / 1000:.1f} KB ({figures['stored_bytes'] / 1000:.2f} GB) · "
                f"${own['storage_month']:.2f}/month",
                f"{own['gb_seconds']:,.0f} GB-s · ${own['lambda']:.2f}",
                f"${own['api']:.2f}",
                f"${total:.2f}",
                f"${waiting['dynamodb_requests'] + waiting['lambda'] + waiting['api']:.2f}",
            ]
        )
    plain = totals[: len(LENGTHS)]
    keyed = measured["1,000 + Idempotency-Key"]
    breakdown = ", ".join(f"{kind} {units:.0f}" for kind, units in sorted(keyed["kinds"].items()))
    table_units, all_units = keyed["wru"], keyed["wru"] + keyed["index_wru"]
    flat = max(plain) <= 1.10 * min(plain)
    notes = (
        f"Prices: AWS list prices in {PRICES['region']} as of {PRICES['as_of']} (DynamoDB on-demand "
        f"${PRICES['dynamodb_write_request_units_per_million']}/M write and "
        f"${PRICES['dynamodb_read_request_units_per_million']}/M read request units, "
        f"${PRICES['dynamodb_storage_gb_month']}/GB-month; Lambda arm64 "
        f"${PRICES['lambda_gb_second_arm64']:.10f}".rstrip("0")
        + f"/GB-s + ${PRICES['lambda_requests_per_million']:.2f}/M requests; HTTP API "
        f"${PRICES['http_api_requests_per_million']:.2f}/M requests), kept as data in "
        "bench/bench_service_cost.py. Each row: a conversation seeded to that "
        f"length, then {POSTS} real `post_message` calls (model stubbed; median shown). WRU/RRU per post "
        "from the items each request wrote or returned, sized by DynamoDB's rules: a write costs 1 unit per "
        "KB of its item (an update: the item after it), 2 in a transaction, and the listing index's copy of "
        "an item in it once more per KB (twice when the write moves its index key: a delete and a put); a "
        "read 1 per 4 KB returned by one strongly consistent request. Write units of a post with an "
        f"Idempotency-Key by item: {breakdown} (table), plus {keyed['index_wru']:.0f} in the listing index. "
        "The owner's usage of the day is not written by the post: the table's stream adds each batch's "
        "priced replies to it (COST-3), one GetItem and one UpdateItem per owner, day and model of a "
        f"batch: {keyed['stream_wru']:.0f} write and {keyed['stream_rru']:.1f} read units when the batch "
        "holds one post (the most it costs a post; a batch of n posts of one owner shares them). With "
        "budgets on (COST-4) the post counts its own reply instead, one Update inside TransactWrite #2 "
        "(a shard of the day item), and the stream skips it. "
        "Storage: what one post adds to the table (items, the listing "
        "index's copy of the conversation item, 100 bytes per item), per 1M posts, per month kept. Lambda: "
        f"{MEMORY_GB * 1024:.0f} MB x (the post path's CPU time measured here + {ROUND_TRIP_S * 1000:.0f} ms "
        "per DynamoDB call, an assumption); the last column adds "
        f"{MODEL_WAIT_S:.0f} s of waiting for the model (billed as duration; it dominates). The summarizer "
        "and the purge are not included (they run once per several turns and per deleted conversation). "
        f"Goal: flat in length — {'met' if flat else 'NOT met'} "
        f"(${min(plain):.2f} to ${max(plain):.2f} per 1M posts from 10 to 10,000 messages)."
    )
    summary = [
        [
            "service cost per 1M posts (DynamoDB + Lambda + HTTP API, no model wait) at "
            + " / ".join(f"{n:,}" for n in LENGTHS)
            + " messages",
            " / ".join(f"${t:.2f}" for t in plain),
            "flat in length",
            verdict(flat),
        ],
        [
            "write units per post (500-character messages, Idempotency-Key, budgets and rate limits off)",
            f"{table_units:.0f} in the table, {all_units:.0f} with the listing index ({breakdown}); "
            f"the stream's usage update: {keyed['stream_wru']:.0f} per batch",
            "<= 10 in the table (the measure the 18 units of issue 30 were; the index is shown beside)",
            verdict(table_units <= 10),
        ],
        _budgets_row(measured["1,000"], measured["1,000 + budgets"]),
    ]
    return [
        {
            "title": "What the service costs per 1M posts (COST-5)",
            "columns": [
                "messages",
                "DynamoDB calls",
                "WRU (table + listing index) / RRU per post",
                "DynamoDB requests per 1M",
                "storage per post (per 1M posts)",
                "Lambda per 1M",
                "HTTP API per 1M",
                "total per 1M",
                f"total with {MODEL_WAIT_S:.0f} s model wait",
            ],
            "rows": rows,
            "notes": notes,
            "summary": summary,
        }
    ]
