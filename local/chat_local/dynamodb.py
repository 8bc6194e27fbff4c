"""The local DynamoDB: an embedded moto server (or an external endpoint), the table, snapshots and TTL."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chat_local.template import TableSpec

log = logging.getLogger("chat_local.dynamodb")

SNAPSHOT_VERSION = 1
#: The SQS calls (JSON protocol) that change nothing a queue poller could receive.
_QUEUE_READS = frozenset(
    f"AmazonSQS.{op}"
    for op in ("ReceiveMessage", "GetQueueAttributes", "GetQueueUrl", "ListQueues", "ListQueueTags")
)
# DynamoDB API operations that cannot change data; anything else marks the snapshot dirty.
_READ_OPERATIONS = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "DescribeTable",
        "ListTables",
        "DescribeTimeToLive",
        "DescribeContinuousBackups",
        "ListTagsOfResource",
        "DescribeLimits",
        "DescribeEndpoints",
    }
)
# The writes whose items are journaled (chat_local.journal); anything else that changes data (CreateTable,
# TTL settings) is redone from the template at every start.
_JOURNALED = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_CLIENT_CONFIG = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5, read_timeout=30)


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request's body, read once and put back for the application."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw: bytes = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(raw)
    environ["CONTENT_LENGTH"] = str(len(raw))
    return raw


def _is_s3_write(environ: dict[str, Any]) -> bool:
    if environ.get("REQUEST_METHOD") not in ("PUT", "DELETE", "POST"):
        return False
    credential = environ.get("HTTP_AUTHORIZATION", "") + environ.get("QUERY_STRING", "")
    return "/s3/aws4_request" in credential or "%2Fs3%2Faws4_request" in credential


def _is_form_upload(environ: dict[str, Any]) -> bool:
    """A PUT sent as form data: only S3 takes PUTs with a body here (SQS's form posts are POSTs)."""
    kind = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    return environ.get("REQUEST_METHOD") == "PUT" and kind == "application/x-www-form-urlencoded"


def dynamodb_client(endpoint: str, region: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name=region, config=_CLIENT_CONFIG)


def is_loopback(endpoint: str) -> bool:
    host = urlparse(endpoint).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost")


class AnsweredWrites:
    """A count of answered write requests, for a poller to sleep on instead of polling what is unchanged."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def note(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def count(self) -> int:
        with self._changed:
            return self._count

    def wait(self, seen: int, timeout_s: float) -> int:
        """Block until the count differs from `seen` or `timeout_s` passed; returns the count then."""
        with self._changed:
            self._changed.wait_for(lambda: self._count != seen, timeout_s)
            return self._count


class EmbeddedDynamoDB:
    """moto's DynamoDB (and every other moto service) on a free loopback port, in this process.

    Requests pass through a small WSGI wrapper that notices writes, so snapshots are only taken
    when something changed, whoever wrote it (a handler, a stream function, the AWS CLI).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._serial = threading.Lock()
        #: DynamoDB write requests answered (what they streamed is readable): stream pollers sleep on it.
        self.table_writes = AnsweredWrites()
        #: Every other request that may change something (an SQS send, a visibility change, an S3 write):
        #: queue pollers sleep on it.
        self.other_writes = AnsweredWrites()
        #: Set by the local server when it persists: journals every applied write (chat_local.journal).
        self.durable: Any = None
        #: Set by the local server: called with (bucket, key) after an S3 object was written or deleted
        #: ("" for the key: anything in the bucket may have changed), before the answer is sent.
        self.on_object_write: Callable[[str, str], None] | None = None

    @property
    def request_lock(self) -> threading.Lock:
        """The lock every DynamoDB request of this store runs under."""
        return self._serial

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def write_count(self) -> int:
        """Monotonic count of DynamoDB write requests answered (each counted once applied); compare two
        readings to know whether data changed."""
        return self.table_writes.count()

    def _wrap(self, app: Callable[..., Any]) -> Callable[..., Any]:
        def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            target = environ.get("HTTP_X_AMZ_TARGET", "")
            if not target.startswith("DynamoDB_"):
                if _is_form_upload(environ):
                    # S3 stores a PUT's body whatever its Content-Type; moto's Flask app would parse form
                    # data away first (`curl --data-binary` sends that type by default) and store nothing.
                    environ["CONTENT_TYPE"] = "application/octet-stream"
                if self.on_object_write is not None and _is_s3_write(environ):
                    answer = self._s3_write(app, environ, start_response)
                else:
                    answer = app(environ, start_response)
                if target not in _QUEUE_READS:
                    self.other_writes.note()
                return answer
            op = target.rpartition(".")[2]
            durable = self.durable
            raw: bytes | None = None
            if durable is not None and op in _JOURNALED:
                raw = _read_body(environ)
            statuses: list[str] = []

            def started(status: str, headers: Any, exc_info: Any = None) -> Any:
                statuses.append(status)
                return start_response(status, headers, exc_info)

            # DynamoDB applies each request atomically; moto does not (a TransactWriteItems checks its
            # conditions, then writes, while other threads mutate the same dicts). One request at a
            # time keeps concurrent posters from both passing a condition or crashing moto mid-copy.
            with self._serial:
                answer = app(environ, started)
                # A failed write applied nothing (moto_fidelity undoes a cancelled transaction); a
                # BatchWriteItem refused half-way may have written its first items: journal it anyway.
                applied = bool(statuses) and (statuses[0].startswith("200") or op == "BatchWriteItem")
                if raw is not None and durable is not None and applied:
                    durable.record(op, raw)  # in the journal before the answer leaves (LOC-3)
            if op not in _READ_OPERATIONS:
                self.table_writes.note()
            return answer

        return middleware

    def _s3_write(self, app: Callable[..., Any], environ: dict[str, Any], start_response: Any) -> Any:
        statuses: list[str] = []

        def started(status: str, headers: Any, exc_info: Any = None) -> Any:
            statuses.append(status)
            return start_response(status, headers, exc_info)

        answer = app(environ, started)
        if statuses and statuses[0][:1] == "2" and self.on_object_write is not None:
            path = environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8", "replace")
            bucket, _, key = path.lstrip("/").partition("/")
            method = environ.get("REQUEST_METHOD", "")
            # PUT/DELETE of one object: that key; anything else (a multi-object delete, a multipart
            # completion): the whole bucket.
            self.on_object_write(bucket, key if method in ("PUT", "DELETE") else "")
        return answer

    def start(self) -> EmbeddedDynamoDB:
        # moto's own server pieces, wrapped; ThreadedMotoServer offers no hook for middleware.
        from moto.moto_server.werkzeug_app import create_backend_app
        from werkzeug.serving import make_server

        from chat_local import moto_fidelity
        from chat_local.moto_server import Dispatcher, KeepAliveHandler

        # Client tokens honoured, and transactions that cost what they touch (not the whole table).
        moto_fidelity.install()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        app = Dispatcher(create_backend_app)
        self._server = make_server(
            self.host, self.port, self._wrap(app), threaded=True, request_handler=KeepAliveHandler
        )
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


@dataclass
class TableStatus:
    created: bool
    stream_arn: str | None
    warnings: list[str]


def ensure_table(client: Any, spec: TableSpec) -> TableStatus:
    """Create the table from the template if it is missing; report a mismatch if it exists differently."""
    warnings: list[str] = []
    try:
        described = client.describe_table(TableName=spec.name)["Table"]
        created = False
        existing_keys = [k["AttributeName"] for k in described.get("KeySchema", [])]
        if existing_keys != spec.key_names:
            warnings.append(
                f"table {spec.name} exists with keys {existing_keys}, the template says {spec.key_names}"
            )
        wanted_gsis = {g["IndexName"] for g in spec.create_args.get("GlobalSecondaryIndexes", [])}
        have_gsis = {g["IndexName"] for g in described.get("GlobalSecondaryIndexes", [])}
        if wanted_gsis - have_gsis:
            warnings.append(f"table {spec.name} lacks indexes {sorted(wanted_gsis - have_gsis)}")
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise
        client.create_table(**spec.create_args)
        client.get_waiter("table_exists").wait(
            TableName=spec.name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )
        created = True
        described = client.describe_table(TableName=spec.name)["Table"]
    if spec.ttl_attribute:
        try:
            current = client.describe_time_to_live(TableName=spec.name).get("TimeToLiveDescription", {})
            if current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
                client.update_time_to_live(
                    TableName=spec.name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
                )
        except ClientError as exc:
            warnings.append(
                f"could not enable TTL on {spec.name}: {exc.response.get('Error', {}).get('Message')}"
            )
    stream_arn = described.get("LatestStreamArn")
    if spec.stream_view_type and not stream_arn:
        warnings.append(f"table {spec.name} has no stream; stream-triggered functions will not run")
    return TableStatus(created, stream_arn, warnings)


# ---------------------------------------------------------------------------------------------- snapshots


def _encode(value: Any) -> Any:
    """Low-level attribute values -> JSON (binary as base64; the type key says how to read it back)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if key == "B" and isinstance(inner, str):
                out[key] = base64.b64decode(inner)
            elif key == "BS" and isinstance(inner, list):
                out[key] = [base64.b64decode(v) for v in inner]
            else:
                out[key] = _decode(inner)
        return out
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def scan_items(client: Any, table: str) -> Iterator[dict[str, Any]]:
    # A Scan is fine here and only here: a dev-only full copy of a local table for the snapshot file.
    # The service itself never scans (STO-1).
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def write_snapshot(client: Any, table: str, path: Path) -> int:
    """Copy every item of the table to `path` atomically (temp file + rename). Returns the item count."""
    items = [_encode(i) for i in scan_items(client, table)]
    payload = {
        "version": SNAPSHOT_VERSION,
        "table": table,
        "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "count": len(items),
        "items": items,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(payload, fh, ensure_ascii=False, separators=(",", ":"))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return len(items)


class SnapshotError(RuntimeError):
    """The snapshot file exists but cannot be read; starting would silently lose the data in it."""


def read_snapshot(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if payload.get("version") != SNAPSHOT_VERSION or not isinstance(payload.get("items"), list):
            raise ValueError(f"unsupported snapshot version {payload.get('version')!r}")
    except (OSError, ValueError, AttributeError) as exc:
        raise SnapshotError(
            f"cannot read {path}: {exc}. Move it aside (or delete it to start empty) and start again."
        ) from exc
    return [_decode(i) for i in payload["items"]]


def restore_items(client: Any, table: str, items: list[dict[str, Any]]) -> int:
    """BatchWriteItem the snapshot's items back (25 per batch, unprocessed items retried)."""
    for start in range(0, len(items), 25):
        requests: list[dict[str, Any]] = [{"PutRequest": {"Item": i}} for i in items[start : start + 25]]
        delay = 0.05
        while requests:
            answer = client.batch_write_item(RequestItems={table: requests})
            requests = answer.get("UnprocessedItems", {}).get(table, [])
            if requests:
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
    return len(items)


class Snapshotter:
    """Saves the table to a JSON file every `interval_s` when it changed, and once more at shutdown."""

    def __init__(
        self,
        client: Any,
        table: str,
        path: Path,
        *,
        change_counter: Callable[[], int],
        interval_s: float = 2.0,
        after_save: Sequence[Callable[[], None]] = (),
        save: Callable[[], int] | None = None,
    ) -> None:
        self.client = client
        #: What a save does (the embedded store's snapshot + journal); by default, a Scan to `path`.
        self._save = save or (lambda: write_snapshot(self.client, self.table, self.path))
        self._after_save = tuple(after_save)
        self.table = table
        self.path = path
        self.interval_s = interval_s
        self._changes = change_counter
        self._saved_at_change = change_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.last_count = 0

    def save_if_changed(self) -> bool:
        with self._lock:
            seen = self._changes()
            if seen == self._saved_at_change:
                return False
            try:
                self.last_count = self._save()
            except (BotoCoreError, ClientError, OSError) as exc:
                log.error("snapshot of %s to %s failed: %s", self.table, self.path, exc)
                return False
            self._saved_at_change = seen
            for save in self._after_save:
                save()  # the buckets' mirrors (chat_local.s3), which never raise
            return True

    def _run(self) -> None:
        wait = self.interval_s
        while not self._stop.wait(wait):
            started = time.monotonic()
            saved = self.save_if_changed()
            took = time.monotonic() - started
            # A snapshot copies the whole table: as the table grows, space them so that copying stays a
            # small share (a tenth) of the server's time instead of slowing every request.
            wait = max(self.interval_s, took * 9) if saved else self.interval_s

    def start(self) -> Snapshotter:
        self._thread = threading.Thread(target=self._run, name="snapshot", daemon=True)
        self._thread.start()
        return self

    def signal_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the timer and write a final snapshot if anything changed since the last one."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, timeout_s))
        self.save_if_changed()


# ---------------------------------------------------------------------------------------------- TTL


class TtlSweeper:
    """Deletes items whose TTL attribute is in the past, as DynamoDB's TTL process does in the cloud.

    moto and DynamoDB Local never expire items, so locally nothing would ever reach the stream as a
    TTL removal. Deleted keys are remembered so the stream records of these deletions can carry the
    `userIdentity` of the DynamoDB service, which retention functions filter on.
    """

    def __init__(
        self,
        client: Any,
        table: str,
        attribute: str,
        *,
        interval_s: float = 60.0,
        find_expired: Callable[[str, int], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.client = client
        self.find_expired = find_expired
        self.table = table
        self.attribute = attribute
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._swept: dict[str, float] = {}
        self._lock = threading.Lock()
        self.deleted_total = 0

    @staticmethod
    def key_id(keys: Mapping[str, Any]) -> str:
        return json.dumps(_encode(dict(keys)), sort_keys=True)

    def was_swept(self, keys: Mapping[str, Any]) -> bool:
        with self._lock:
            return self.key_id(keys) in self._swept

    def sweep(self, now: float | None = None) -> int:
        """One pass: delete every expired item (conditionally, so a refreshed TTL is respected)."""
        now_s = int(now if now is not None else time.time())
        names = {"#ttl": self.attribute}
        values = {":now": {"N": str(now_s)}}
        key_names = [
            k["AttributeName"] for k in self.client.describe_table(TableName=self.table)["Table"]["KeySchema"]
        ]
        deleted = 0
        for item in self._expired(now_s):
            keys = {k: item[k] for k in key_names}
            with self._lock:
                self._swept[self.key_id(keys)] = time.monotonic()
            try:
                self.client.delete_item(
                    TableName=self.table,
                    Key=keys,
                    ConditionExpression="#ttl < :now",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
                deleted += 1
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
        with self._lock:
            horizon = time.monotonic() - 600
            self._swept = {k: t for k, t in self._swept.items() if t >= horizon}
        self.deleted_total += deleted
        if deleted:
            log.info("TTL sweep removed %d expired item(s) from %s", deleted, self.table)
        return deleted

    def _expired(self, now_s: int) -> Iterator[dict[str, Any]]:
        """The expired items (their keys at least): from `find_expired` when given (the embedded store
        looks at its items in-process: a Scan of moto reads the whole table again for every page, a
        minute and a half at 100,000 items), else by a Scan."""
        if self.find_expired is not None:
            yield from self.find_expired(self.attribute, now_s)
            return
        # Dev-only Scan (see scan_items): the sweeper stands in for DynamoDB's background TTL process.
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "#ttl < :now",
            "ExpressionAttributeNames": {"#ttl": self.attribute},
            "ExpressionAttributeValues": {":now": {"N": str(now_s)}},
        }
        while True:
            page = self.client.scan(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except (BotoCoreError, ClientError) as exc:
                log.error("TTL sweep of %s failed: %s", self.table, exc)

    def start(self) -> TtlSweeper:
        self._thread = threading.Thread(target=self._run, name="ttl-sweeper", daemon=True)
        self._thread.start()
        return self

    def signal_stop(self) -> None:
        """Ask the thread to stop after what it is doing (see `stop`)."""
        self._stop.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, timeout_s))
