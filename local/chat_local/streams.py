"""Delivers the local table's DynamoDB stream to the template's stream-triggered functions, like an ESM."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chat_local.lambda_runtime import FunctionRuntime, HandlerUnavailable, Throttled
from chat_local.template import StreamSubscription

log = logging.getLogger("chat_local.streams")

# With no MaximumRetryAttempts, Lambda retries until the record expires (24 h) and blocks the shard.
# Locally that would wedge the stream forever on one bad record, so the default is bounded.
LOCAL_DEFAULT_RETRIES = 3
_TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
#: With the embedded store's write signal, an idle poller still reads its shards this often (what it
#: would miss otherwise is only a write the signal never saw), and says it is caught up this often.
IDLE_POLL_S = 15.0
IDLE_TICK_S = 0.25


class WriteSignal(Protocol):
    """A count of answered write requests of the embedded store (chat_local.dynamodb.AnsweredWrites)."""

    def count(self) -> int: ...

    def wait(self, seen: int, timeout_s: float) -> int: ...


def sleep_until_written(
    writes: WriteSignal, seen: int, stop: threading.Event, on_quiet: Callable[[float], None] | None = None
) -> None:
    """Sleep until a write is answered after `seen`, the stop, or IDLE_POLL_S, in ticks of IDLE_TICK_S (a
    stop is seen at once). Each tick that ends with nothing written calls `on_quiet` with the wall-clock
    time it began: the poll made before `seen` was counted still read everything there was then."""
    deadline = time.monotonic() + IDLE_POLL_S
    while not stop.is_set() and time.monotonic() < deadline:
        began = time.time()
        if writes.wait(seen, IDLE_TICK_S) != seen:
            return
        if on_quiet is not None:
            on_quiet(began)


# ---------------------------------------------------------------------------------------------- filters


def _match_value(rule: Any, present: bool, value: Any) -> bool:
    if isinstance(value, list):
        return any(_match_value(rule, present, v) for v in value) if value else False
    if not isinstance(rule, Mapping):
        return present and value == rule
    if "exists" in rule:
        return present == bool(rule["exists"])
    if not present:
        return False
    if "prefix" in rule:
        return isinstance(value, str) and value.startswith(str(rule["prefix"]))
    if "suffix" in rule:
        return isinstance(value, str) and value.endswith(str(rule["suffix"]))
    if "equals-ignore-case" in rule:
        return isinstance(value, str) and value.lower() == str(rule["equals-ignore-case"]).lower()
    if "anything-but" in rule:
        but = rule["anything-but"]
        if isinstance(but, Mapping):
            return not _match_value(but, present, value)
        excluded = but if isinstance(but, list) else [but]
        return value not in excluded
    if "numeric" in rule:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        spec = list(rule["numeric"])
        checks: dict[str, Callable[[float, float], bool]] = {
            "=": lambda a, b: a == b,
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
        }
        return all(checks[op](number, float(bound)) for op, bound in zip(spec[::2], spec[1::2], strict=True))
    return False


def matches_filter(pattern: Mapping[str, Any], event: Any) -> bool:
    """Lambda event filtering (EventBridge pattern syntax): literals, prefix, suffix, anything-but,
    numeric, exists, equals-ignore-case, nested objects and $or."""
    for key, rule in pattern.items():
        if key == "$or":
            if not any(matches_filter(p, event) for p in rule):
                return False
            continue
        present = isinstance(event, Mapping) and key in event
        value = event[key] if present else None
        if isinstance(rule, Mapping):
            if not (present and isinstance(value, Mapping) and matches_filter(rule, value)):
                return False
        elif isinstance(rule, list):
            if not any(_match_value(r, present, value) for r in rule):
                return False
        elif not (present and value == rule):
            return False
    return True


def passes_filters(filters: Sequence[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    return not filters or any(matches_filter(f, record) for f in filters)


# ---------------------------------------------------------------------------------------------- polling


def lambda_record(
    raw: Mapping[str, Any], *, stream_arn: str, region: str, ttl_removal: bool
) -> dict[str, Any]:
    """A GetRecords record -> the record shape Lambda puts in a DynamoDB stream event."""
    record = {k: v for k, v in raw.items() if k != "dynamodb"}
    ddb = dict(raw.get("dynamodb") or {})
    created = ddb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        ddb["ApproximateCreationDateTime"] = int(created.timestamp())
    record["dynamodb"] = ddb
    record["eventVersion"] = "1.1"
    record["awsRegion"] = region
    record["eventSourceARN"] = stream_arn
    if ttl_removal and record.get("eventName") == "REMOVE":
        record["userIdentity"] = dict(_TTL_IDENTITY)
    return record


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class StreamStats:
    batches: int = 0
    records: int = 0
    filtered_out: int = 0
    failures: int = 0
    dropped: int = 0
    #: Wall-clock start of the newest poll that found nothing new, or of a quiet tick after it (nothing
    #: written since): every record written before it has been delivered (and its invocation finished).
    #: Tests wait on it instead of sleeping.
    caught_up_at: float = 0.0


class IteratorRegistry:
    """Serialises GetRecords calls across pollers and prunes moto's never-freed shard iterators.

    moto keeps every shard iterator it ever issued; a poller issues one per poll, so a long-running
    local server would grow without bound. Only the embedded store is pruned, never a real endpoint.
    """

    def __init__(self, *, prune_moto: bool, account_id: str, region: str) -> None:
        self.lock = threading.Lock()
        self.prune_moto = prune_moto
        self.account_id = account_id
        self.region = region
        self.live: dict[int, str] = {}
        self._calls = 0

    def note(self, owner: int, iterator: str | None) -> None:
        if iterator is None:
            self.live.pop(owner, None)
        else:
            self.live[owner] = iterator
        self._calls += 1
        if self.prune_moto and self._calls % 50 == 0:
            self._prune()

    def _prune(self) -> None:
        try:
            from moto.dynamodbstreams.models import dynamodbstreams_backends
        except ImportError:  # pragma: no cover - moto is a dev dependency
            return
        from chat_local import moto_fidelity

        backend = dynamodbstreams_backends[self.account_id][self.region]
        keep = set(self.live.values())
        for arn in list(backend.shard_iterators):
            if arn not in keep:
                backend.shard_iterators.pop(arn, None)
        # Records every poller has read are dropped too: moto would keep each one forever.
        readers = [backend.shard_iterators[arn] for arn in keep if arn in backend.shard_iterators]
        if readers and len(readers) == len(self.live):
            moto_fidelity.trim_read_records(readers)


class StreamPoller:
    """One event source mapping: reads the stream from where it was at start, batches, filters, invokes,
    retries a failed batch (bisecting or from the first reported item failure), then moves on."""

    def __init__(
        self,
        subscription: StreamSubscription,
        runtime: FunctionRuntime,
        *,
        streams_client: Any,
        stream_arn: str,
        region: str,
        registry: IteratorRegistry,
        was_ttl_removal: Callable[[Mapping[str, Any]], bool] = lambda _keys: False,
        on_invocation: Callable[[str, int, str, float], None] | None = None,
        on_failure: Callable[[dict[str, Any]], None] | None = None,
        poll_interval_s: float = 0.25,
        retry_delay_s: float = 0.5,
        writes: WriteSignal | None = None,
    ) -> None:
        self.subscription = subscription
        self.runtime = runtime
        self.client = streams_client
        self.stream_arn = stream_arn
        self.region = region
        self.registry = registry
        self.was_ttl_removal = was_ttl_removal
        self.on_invocation = on_invocation
        self.on_failure = on_failure
        self.poll_interval_s = poll_interval_s
        self.retry_delay_s = retry_delay_s
        #: Without it (an external DynamoDB endpoint) the poller reads every `poll_interval_s`; with it,
        #: when a write was answered (at once) or every IDLE_POLL_S: an idle server then costs no CPU.
        self.writes = writes
        self.stats = StreamStats()
        self._iterators: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        max_retries = subscription.maximum_retry_attempts
        self.max_retries = LOCAL_DEFAULT_RETRIES if max_retries is None or max_retries < 0 else max_retries

    # -- position ---------------------------------------------------------------------------------

    def position_at_latest(self) -> None:
        """Start after everything already in the stream (restored snapshot data is not replayed)."""
        shards = self.client.describe_stream(StreamArn=self.stream_arn)["StreamDescription"].get("Shards", [])
        for shard in shards:
            if shard.get("SequenceNumberRange", {}).get("EndingSequenceNumber"):
                continue  # closed shard: nothing new will arrive there
            answer = self.client.get_shard_iterator(
                StreamArn=self.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="LATEST"
            )
            self._iterators[shard["ShardId"]] = answer["ShardIterator"]
            with self.registry.lock:
                # Known before the first poll, so no record this poller has yet to read is dropped.
                self.registry.note(id(self) ^ hash(shard["ShardId"]), answer["ShardIterator"])

    def _discover_new_shards(self) -> None:
        shards = self.client.describe_stream(StreamArn=self.stream_arn)["StreamDescription"].get("Shards", [])
        for shard in shards:
            if shard["ShardId"] not in self._iterators:
                answer = self.client.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
                )
                self._iterators[shard["ShardId"]] = answer["ShardIterator"]
                with self.registry.lock:
                    self.registry.note(id(self) ^ hash(shard["ShardId"]), answer["ShardIterator"])

    # -- one poll ---------------------------------------------------------------------------------

    def poll_once(self) -> int:
        """Read each shard once and deliver what arrived. Returns the number of records read."""
        read = 0
        started = time.time()
        for shard_id, iterator in list(self._iterators.items()):
            if iterator is None:
                continue
            with self.registry.lock:
                answer = self.client.get_records(ShardIterator=iterator, Limit=1000)
                next_iterator = answer.get("NextShardIterator")
                self.registry.note(id(self) ^ hash(shard_id), next_iterator)
            self._iterators[shard_id] = next_iterator
            raw = answer.get("Records", [])
            if next_iterator is None:
                self._discover_new_shards()
            read += len(raw)
            records = [
                lambda_record(
                    r,
                    stream_arn=self.stream_arn,
                    region=self.region,
                    ttl_removal=r.get("eventName") == "REMOVE"
                    and self.was_ttl_removal((r.get("dynamodb") or {}).get("Keys") or {}),
                )
                for r in raw
            ]
            kept = [r for r in records if passes_filters(self.subscription.filters, r)]
            self.stats.filtered_out += len(records) - len(kept)
            size = max(1, self.subscription.batch_size)
            for start in range(0, len(kept), size):
                self._deliver(kept[start : start + size], shard_id)
        if not read:
            self.stats.caught_up_at = started
        return read

    def _deliver(self, batch: list[dict[str, Any]], shard_id: str = "") -> None:
        """Invoke until the batch is processed or retries are exhausted (then the records are dropped)."""
        pending = [batch]
        while pending:
            current = pending.pop(0)
            attempts = 0
            while current:
                status, remaining = self._invoke(current, shard_id)
                if status == "ok":
                    break
                attempts += 1
                self.stats.failures += 1
                if self.subscription.bisect_on_error and len(remaining) > 1 and status == "error":
                    half = len(remaining) // 2
                    pending[:0] = [remaining[:half], remaining[half:]]
                    break
                if attempts > self.max_retries:
                    self.stats.dropped += len(remaining)
                    log.error(
                        "%s: dropped %d stream record(s) after %d attempt(s); first sequence number %s",
                        self.subscription.name,
                        len(remaining),
                        attempts,
                        remaining[0]["dynamodb"].get("SequenceNumber"),
                    )
                    if self.on_failure is not None:
                        self.on_failure(self.failure_record(remaining, attempts, status))
                    break
                current = remaining
                if self._stop.wait(self.retry_delay_s * (2 ** (attempts - 1))):
                    return

    def failure_record(self, records: list[dict[str, Any]], attempts: int, status: str) -> dict[str, Any]:
        """What Lambda sends to an OnFailure destination for a stream batch it gave up on."""
        created = [r["dynamodb"].get("ApproximateCreationDateTime") for r in records]
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {
            "requestContext": {
                "requestId": str(uuid.uuid4()),
                "functionArn": f"arn:aws:lambda:{self.region}:123456789012:function:"
                f"{self.subscription.function.logical_id}",
                "condition": "RetryAttemptsExhausted",
                "approximateInvokeCount": attempts,
            },
            "responseContext": {
                "statusCode": 200,
                "executedVersion": "$LATEST",
                "functionError": "Unhandled" if status == "error" else "",
            },
            "version": "1.0",
            "timestamp": stamp,
            "DDBStreamBatchInfo": {
                "shardId": next(iter(self._iterators), ""),
                "startSequenceNumber": records[0]["dynamodb"].get("SequenceNumber"),
                "endSequenceNumber": records[-1]["dynamodb"].get("SequenceNumber"),
                "approximateArrivalOfFirstRecord": created[0],
                "approximateArrivalOfLastRecord": created[-1],
                "batchSize": len(records),
                "streamArn": self.stream_arn,
            },
        }

    def _event(self, batch: list[dict[str, Any]], shard_id: str) -> dict[str, Any]:
        """The invocation's event: the records and, under a tumbling window, what Lambda adds to it
        (the shard, the window, the state the previous answer returned; one window per batch here)."""
        event: dict[str, Any] = {"Records": batch}
        window = self.subscription.tumbling_window_s
        if window:
            now = int(time.time())
            start = now - now % window
            event.update(
                window={"start": _iso(start), "end": _iso(start + window)},
                state={},
                shardId=shard_id,
                eventSourceARN=self.stream_arn,
                isFinalInvokeForWindow=False,
                isWindowTerminatedEarly=False,
            )
        return event

    def _invoke(self, batch: list[dict[str, Any]], shard_id: str = "") -> tuple[str, list[dict[str, Any]]]:
        """Returns ("ok", []) or ("error"|"partial", records still to process)."""
        try:
            invocation = self.runtime.invoke(self._event(batch, shard_id))
        except (HandlerUnavailable, Throttled) as exc:
            log.error("%s: %s", self.subscription.name, exc)
            self._report(len(batch), "error", 0.0)
            return "error", batch
        self.stats.batches += 1
        self.stats.records += len(batch)
        if invocation.error is not None:
            log.error(
                "%s: handler raised %s: %s",
                self.subscription.name,
                type(invocation.error).__name__,
                invocation.error,
            )
            self._report(len(batch), "error", invocation.duration_ms)
            return "error", batch
        failures = []
        result = invocation.result
        if self.subscription.tumbling_window_s and not (isinstance(result, Mapping) and "state" in result):
            # Lambda counts an answer without `state` under a tumbling window as a failed invocation.
            log.error("%s: the answer has no `state` (tumbling window)", self.subscription.name)
            self._report(len(batch), "error", invocation.duration_ms)
            return "error", batch
        if self.subscription.report_batch_item_failures and isinstance(result, Mapping):
            failures = [f.get("itemIdentifier") for f in result.get("batchItemFailures") or []]
        if not failures:
            self._report(len(batch), "ok", invocation.duration_ms)
            return "ok", []
        # Lambda checkpoints before the lowest failed sequence number and retries from there.
        sequence = [r["dynamodb"].get("SequenceNumber") for r in batch]
        positions = [sequence.index(f) for f in failures if f in sequence]
        first = min(positions) if positions else 0
        self._report(len(batch), f"partial ({len(batch) - first} to retry)", invocation.duration_ms)
        return "partial", batch[first:]

    def _report(self, count: int, status: str, duration_ms: float) -> None:
        if self.on_invocation is not None:
            self.on_invocation(self.subscription.name, count, status, duration_ms)

    # -- thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            # Counted before the poll: a write answered while it reads is read by the next one.
            seen = self.writes.count() if self.writes is not None else 0
            try:
                read = self.poll_once()
            except (BotoCoreError, ClientError) as exc:
                log.error("%s: reading the stream failed: %s", self.subscription.name, exc)
                read = 0
                self._stop.wait(2.0)
            if read:
                continue
            if self.writes is None:
                self._stop.wait(self.poll_interval_s)
            else:
                sleep_until_written(self.writes, seen, self._stop, on_quiet=self._caught_up)

    def _caught_up(self, at: float) -> None:
        # Nothing was written since the poll that found nothing: every record written before `at` is read.
        self.stats.caught_up_at = at

    def start(self) -> StreamPoller:
        self.position_at_latest()
        self._thread = threading.Thread(
            target=self._run, name=f"stream:{self.subscription.name}", daemon=True
        )
        self._thread.start()
        return self

    def signal_stop(self) -> None:
        """Ask the thread to stop after what it is doing (see `stop`)."""
        self._stop.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, timeout_s))


def streams_client(endpoint: str | None, region: str) -> Any:
    return boto3.client(
        "dynamodbstreams",
        endpoint_url=endpoint,
        region_name=region,
        config=Config(retries={"max_attempts": 3, "mode": "standard"}),
    )


def wait_until_idle(pollers: Sequence[StreamPoller], *, timeout_s: float = 5.0) -> bool:
    """Test aid: poll every subscription until no new records arrive (or the timeout passes)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(p.poll_once() for p in pollers):
            return True
    return False
