"""The embedded store on disk: a snapshot plus a write-ahead journal, so `kill -9` loses no answered write.

Every write request the embedded store applies (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
TransactWriteItems) appends one journal record before its answer leaves the store, so before the handler
that asked can answer its own client. A record holds the *after-image* of every item the request named
(the whole item as it now is, or `null` when it is gone), not the request: replaying it sets items to
what they were, whatever state it is replayed onto. That makes the snapshot simple: it does not have to
stop the world. A snapshot first starts a new journal file (under the store's request lock), then copies
the items in small locked chunks while writes go on; every item is copied as it was at some moment after
that new journal began, and every write since is in that journal, so snapshot + that journal = the table.

Files, in the data directory:

- `dynamodb.json`: the snapshot. A header line (`{"version": 2, "journal": N, ...}`), one item a line
  (DynamoDB's wire form), a trailer line (`{"end": count}`). Written to a temp file, fsync'd, renamed.
  Version 1 (one JSON document, from earlier versions of the local server) is still read.
- `journal/NNNNNNNN.log`: records `<crc32 hex> <json>\\n`, appended with one `os.write` each (the record
  is in the kernel before the answer is sent: a killed process loses nothing; an OS crash or power loss
  may lose what the kernel had not yet written, which is out of scope for a development server). At
  start the snapshot is loaded, then every journal numbered N or more is replayed in order, and a new
  journal is started; a record cut short by a kill (bad checksum, no newline) ends its file's replay,
  with a log line. Journals older than the snapshot's N are deleted once the snapshot is in place.

A crash at any point leaves a consistent pair: until the new snapshot's rename, the old snapshot and
every journal since it are still there; after it, the new snapshot and its journals are.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table

from chat_local import moto_fidelity
from chat_local.dynamodb import SnapshotError


def _json_loads() -> Callable[[bytes], Any]:
    """orjson's (twice as fast on a restart's 100,000 lines; in the dev environment through langsmith),
    else the standard library's: the same results."""
    try:
        import orjson
    except ImportError:  # pragma: no cover
        return json.loads
    return orjson.loads


_loads = _json_loads()


def _dumps(value: Any) -> str:
    # ASCII only (non-ASCII text as \u escapes): a record's bytes are the same whatever the locale.
    return json.dumps(value, separators=(",", ":"))


log = logging.getLogger("chat_local.journal")

SNAPSHOT_VERSION = 2
JOURNAL_DIR = "journal"
#: Items copied per hold of the store's lock while a snapshot is written (a few ms each).
CHUNK = 250
#: Items loaded from which a start freezes the collector's view of them (see `load`).
FREEZE_AT = 10_000


@dataclass
class LoadReport:
    items: int
    records: int
    torn: int
    seconds: float


def _frame(payload: dict[str, Any]) -> bytes:
    body = _dumps(payload).encode("ascii")
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _unframe(line: bytes) -> dict[str, Any] | None:
    """The record of one journal line, or None when it is torn or damaged."""
    if not line.endswith(b"\n") or len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:-1]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        record = _loads(body)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _wire(value: DynamoType) -> dict[str, Any]:
    """An attribute value in DynamoDB's JSON wire form (binary as base64)."""
    kind, inner = value.type, value.value
    if kind == "M":
        return {"M": {name: _wire(v) for name, v in inner.items()}}
    if kind == "L":
        return {"L": [_wire(v) for v in inner]}
    if kind == "B" and isinstance(inner, bytes):
        return {"B": base64.b64encode(inner).decode("ascii")}
    if kind == "BS":
        return {"BS": [base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v for v in inner]}
    return {kind: inner}


def _item_json(item: Item) -> dict[str, Any]:
    return {name: _wire(value) for name, value in item.attrs.items()}


def _value(wire: dict[str, Any]) -> DynamoType:
    """moto's DynamoType of a wire-form value, built directly (its constructor costs 4 µs a value, which
    made a restart at 100,000 items take most of its time building them)."""
    ((kind, inner),) = wire.items()
    value = DynamoType.__new__(DynamoType)
    value.type = kind
    if kind == "L":
        inner = [_value(v) for v in inner]
    elif kind == "M":
        inner = {name: _value(v) for name, v in inner.items()}
    value.value = inner
    return value


def _new_item(hash_value: DynamoType, range_value: DynamoType | None, attrs: dict[str, Any]) -> Item:
    """moto's Item without its per-attribute size check (O(attributes) at each insert: quadratic), which
    every stored item already passed when it was first written; as moto's own `Item.__deepcopy__` does."""
    item = cast(Item, Item.__new__(Item))
    item.hash_key, item.range_key = hash_value, range_value
    checked = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(checked, {name: _value(value) for name, value in attrs.items()})
    item.attrs = checked
    return item


class DurableTable:
    """One table of the embedded moto store, kept in `directory` as snapshot + journal.

    `lock` is the store's request lock (EmbeddedDynamoDB serializes every request under it): `record`
    is called with it held, right after a write was applied, and the snapshot takes it chunk by chunk.
    """

    def __init__(
        self, directory: Path, table_name: str, *, region: str, account_id: str, lock: threading.Lock
    ) -> None:
        self.directory = directory
        self.snapshot_path = directory / "dynamodb.json"
        self.journal_dir = directory / JOURNAL_DIR
        self.table_name = table_name
        self.region = region
        self.account_id = account_id
        self._lock = lock
        self._fd: int | None = None
        self._number = 0
        self._snapshot_lock = threading.Lock()
        self.records = 0

    # -- moto's table --------------------------------------------------------------------------------

    def table(self) -> Table:
        return dynamodb_backends[self.account_id][self.region].get_table(self.table_name)

    def _keys_of(self, table: Table, attrs: dict[str, Any]) -> tuple[DynamoType, DynamoType | None]:
        hash_value = _value(attrs[table.hash_key_attr])
        range_value = _value(attrs[table.range_key_attr]) if table.range_key_attr else None
        return hash_value, range_value

    @staticmethod
    def _get(table: Table, hash_value: DynamoType, range_value: DynamoType | None) -> Item | None:
        # `.get` throughout: `items` is a defaultdict, and indexing it would add empty partitions.
        if range_value is None:
            found = table.items.get(hash_value)
            return found if isinstance(found, Item) else None
        item: Item | None = table.items.get(hash_value, {}).get(range_value)
        return item

    @staticmethod
    def _set(table: Table, attrs: dict[str, Any] | None, key: tuple[DynamoType, DynamoType | None]) -> None:
        DurableTable._put(table, attrs, key)
        moto_fidelity.reindex(table, *key)

    @staticmethod
    def _put(table: Table, attrs: dict[str, Any] | None, key: tuple[DynamoType, DynamoType | None]) -> None:
        hash_value, range_value = key
        if attrs is None:
            if range_value is None:
                table.items.pop(hash_value, None)
            else:
                partition = table.items.get(hash_value)
                if partition is not None:
                    partition.pop(range_value, None)
                    if not partition:
                        del table.items[hash_value]
            return
        item = _new_item(hash_value, range_value, attrs)
        if range_value is None:
            table.items[hash_value] = item  # type: ignore[assignment]
        else:
            table.items[hash_value][range_value] = item

    # -- journal ------------------------------------------------------------------------------------

    def _journal_path(self, number: int) -> Path:
        return self.journal_dir / f"{number:08d}.log"

    def _journal_numbers(self) -> list[int]:
        if not self.journal_dir.is_dir():
            return []
        return sorted(int(p.stem) for p in self.journal_dir.glob("*.log") if p.stem.isdigit())

    def _open_journal(self, number: int) -> None:
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._journal_path(number), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        previous, self._fd, self._number = self._fd, fd, number
        if previous is not None:
            os.close(previous)

    @staticmethod
    def _touched(body: dict[str, Any], op: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(table, item or key) of every item a write request names."""
        if op == "PutItem":
            yield body["TableName"], body["Item"]
        elif op in ("UpdateItem", "DeleteItem"):
            yield body["TableName"], body["Key"]
        elif op == "BatchWriteItem":
            for table, requests in body.get("RequestItems", {}).items():
                for request in requests:
                    if "PutRequest" in request:
                        yield table, request["PutRequest"]["Item"]
                    elif "DeleteRequest" in request:
                        yield table, request["DeleteRequest"]["Key"]
        elif op == "TransactWriteItems":
            for entry in body.get("TransactItems", []):
                for kind in ("Put", "Update", "Delete"):
                    if kind in entry:
                        op_body = entry[kind]
                        yield op_body["TableName"], op_body["Item" if kind == "Put" else "Key"]

    def record(self, op: str, raw: bytes) -> None:
        """Journal the after-images of the items a successful write named. Call with the lock held."""
        if self._fd is None:
            return
        body = json.loads(raw or b"{}")
        table: Table | None = None
        images: list[list[Any]] = []
        for table_name, attrs in self._touched(body, op):
            if table_name != self.table_name:
                continue
            table = table or self.table()
            key = self._keys_of(table, attrs)
            item = self._get(table, *key)
            key_json = {table.hash_key_attr: attrs[table.hash_key_attr]}
            if table.range_key_attr:
                key_json[table.range_key_attr] = attrs[table.range_key_attr]
            images.append([key_json, None if item is None else _item_json(item)])
        if images:
            os.write(self._fd, _frame({"w": images}))
            self.records += 1

    def expired(self, attribute: str, now_s: int) -> list[dict[str, Any]]:
        """The keys of the items whose TTL `attribute` (a number) is before `now_s`, read in-process."""
        found: list[dict[str, Any]] = []
        with self._lock:
            table = self.table()
            partitions = table.items.values()
            items: Iterator[Item] = (
                (i for p in partitions for i in p.values()) if table.range_key_attr else iter(partitions)  # type: ignore[arg-type]
            )
            for item in items:
                ttl = item.attrs.get(attribute)
                if ttl is None or ttl.type != "N":
                    continue
                with contextlib.suppress(ArithmeticError, ValueError):
                    if Decimal(ttl.value) < now_s:
                        found.append({name: _wire(item.attrs[name]) for name in _key_names(table)})
        return found

    # -- snapshot -----------------------------------------------------------------------------------

    def snapshot(self) -> int:
        """Write a new snapshot (the journal restarts with it) and drop the journals it covers."""
        with self._snapshot_lock, _collector_paused():
            started = time.monotonic()
            with self._lock:
                table = self.table()
                base = self._number + 1
                self._open_journal(base)
                if table.range_key_attr:
                    keys: list[tuple[DynamoType, DynamoType | None]] = [
                        (h, r) for h, partition in table.items.items() for r in partition
                    ]
                else:
                    keys = [(h, None) for h in table.items]
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.snapshot_path.with_name(f".{self.snapshot_path.name}.{os.getpid()}.tmp")
            count = 0
            with tmp.open("w", encoding="utf-8") as fh:
                header = {
                    "version": SNAPSHOT_VERSION,
                    "table": self.table_name,
                    "journal": base,
                    "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }
                fh.write(json.dumps(header) + "\n")
                for start in range(0, len(keys), CHUNK):
                    with self._lock:
                        items = [self._get(table, h, r) for h, r in keys[start : start + CHUNK]]
                        rows = [_item_json(i) for i in items if i is not None]
                    count += len(rows)
                    fh.writelines(_dumps(r) + "\n" for r in rows)
                fh.write(json.dumps({"end": count}) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.snapshot_path)
            _fsync_dir(self.directory)
            self._drop_journals_before(base)
            log.debug("snapshot of %d items in %.2f s", count, time.monotonic() - started)
            return count

    def _drop_journals_before(self, base: int) -> None:
        for number in self._journal_numbers():
            if number < base:
                with contextlib.suppress(OSError):
                    self._journal_path(number).unlink()

    # -- start --------------------------------------------------------------------------------------

    def load(self) -> LoadReport:
        """Snapshot, then every journal after it, into the (empty) table; then a fresh journal."""
        # Millions of small objects are made here: the collector would run hundreds of times over them
        # (half the time of a restart at 100,000 items). They live as long as the server, so once loaded
        # a large table is moved out of its reach (gc.freeze) and later collections do not walk it either
        # (not a small one: a test process starting many servers would keep their garbage for good).
        with _collector_paused():
            report = self._load()
        if report.items >= FREEZE_AT:
            gc.freeze()
        return report

    def _load(self) -> LoadReport:
        started = time.monotonic()
        table = self.table()
        items, base = read_snapshot(self.snapshot_path)
        for attrs in items:
            self._set(table, attrs, self._keys_of(table, attrs))
        del items
        records = torn = 0
        numbers = [n for n in self._journal_numbers() if n >= base]
        for number in numbers:
            path = self._journal_path(number)
            with path.open("rb") as fh:
                offset = 0
                for line in fh:
                    record = _unframe(line)
                    if record is None:
                        torn += 1
                        log.warning(
                            "journal %s: the record at byte %d was cut short (the server was killed "
                            "while writing it; its request was never answered): ignored",
                            path,
                            offset,
                        )
                        break
                    for key, attrs in record.get("w", []):
                        self._set(table, attrs, self._keys_of(table, key))
                    records += 1
                    offset += len(line)
        self._drop_journals_before(base)
        # Never append after a torn record: every start writes its own journal.
        self._open_journal(max([base - 1, *numbers]) + 1)
        count = sum(len(p) for p in table.items.values()) if table.range_key_attr else len(table.items)
        return LoadReport(count, records, torn, time.monotonic() - started)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile: copying 100,000 items makes millions of short-lived
    objects, and the collector would walk every live object of the store hundreds of times."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _key_names(table: Table) -> list[str]:
    return [table.hash_key_attr, table.range_key_attr] if table.range_key_attr else [table.hash_key_attr]


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_snapshot(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The snapshot's items (wire form) and the first journal number after it; ([], 0) without a file."""
    if not path.exists():
        return [], 0
    try:
        with path.open("rb") as fh:
            first = fh.readline()
            header = json.loads(first)
            if isinstance(header, dict) and header.get("version") == SNAPSHOT_VERSION:
                items = [_loads(line) for line in fh]
                trailer = items.pop() if items else None
                if not isinstance(trailer, dict) or trailer.get("end") != len(items):
                    raise ValueError("the snapshot is incomplete (no end line, or a wrong count)")
                return items, int(header["journal"])
        payload = json.loads(path.read_bytes())  # version 1: one document
        if payload.get("version") != 1 or not isinstance(payload.get("items"), list):
            raise ValueError(f"unsupported snapshot version {payload.get('version')!r}")
    except (OSError, ValueError, AttributeError, KeyError, TypeError) as exc:
        raise SnapshotError(
            f"cannot read {path}: {exc}. Move it aside (or delete it to start empty) and start again."
        ) from exc
    return list(payload["items"]), 0
