"""DynamoDB call meter for the storage benches: calls, request bytes sent and response bytes read, per client.

Every botocore client created after `install()` is metered (boto3 clients and resources, PynamoDB's own
sessions, TransactWrite's connections), because the hook sits on `botocore.session.Session.create_client`
and registers `before-call` / `after-call` handlers on each new client's event system. Sizes are the
serialized request body and the raw HTTP response body, i.e. the bytes on the wire to DynamoDB.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import botocore.session

# Fake credentials and no account-id endpoints: moto in-process, never a real AWS endpoint.
MOTO_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_SERVICE_NAME": "chat-history-bench",
    "POWERTOOLS_METRICS_NAMESPACE": "ChatHistoryBench",
}


@dataclass
class Tally:
    """What one measured stretch of work cost in DynamoDB requests."""

    calls: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    received: int = 0
    sent_by_op: Counter[str] = field(default_factory=Counter)
    received_by_op: Counter[str] = field(default_factory=Counter)
    server_seconds: float = 0.0  # CPU inside moto answering (not DynamoDB's latency; callers exclude it)
    #: COST-5: what request units are computed from. Each written item: (transactional, table, key, size
    #: of a put item or None for an update/delete, sized afterwards from the table); each read request:
    #: (operation, item bytes returned, strongly consistent).
    writes: list[tuple[bool, str, dict[str, Any], int | None]] = field(default_factory=list)
    reads: list[tuple[str, int, bool]] = field(default_factory=list)

    def copy(self) -> Tally:
        return Tally(
            Counter(self.calls),
            self.sent,
            self.received,
            Counter(self.sent_by_op),
            Counter(self.received_by_op),
            self.server_seconds,
            list(self.writes),
            list(self.reads),
        )

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def describe_calls(self) -> str:
        """`1 Query + 2 TransactWriteItems` style, most frequent first."""
        return " + ".join(f"{n:,} {op}" for op, n in self.calls.most_common()) or "none"


_active: list[Tally] = []
_installed = False


def _body_size(params: Any) -> int:
    body = params.get("body", b"") if isinstance(params, dict) else b""
    if isinstance(body, str):
        return len(body.encode("utf-8"))
    return len(body or b"")


def attribute_size(value: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for one attribute value in the wire format ({"S": ...}, {"N": ...}, ...):
    strings and binary their length, numbers 1 + significant digits / 2, null and boolean 1, a list or
    map 3 bytes + 1 per element + the elements (a map element's name too)."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode("utf-8"))
    if kind == "B":
        return len(inner) if isinstance(inner, bytes | bytearray) else len(str(inner)) * 3 // 4
    if kind == "N":
        digits = len(str(inner).lstrip("-").replace(".", "").lstrip("0")) or 1
        return 1 + (digits + 1) // 2
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + attribute_size(v) for k, v in inner.items())
    if kind == "L":
        return 3 + sum(1 + attribute_size(v) for v in inner)
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: v}) for v in inner)
    raise TypeError(f"no DynamoDB size rule for {kind}")


def item_size(item: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for a wire-format item: each attribute name plus its value."""
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


def _key_of(item: dict[str, Any]) -> dict[str, Any]:
    """The table key (pk, sk) of a wire-format item."""
    return {name: item[name] for name in ("pk", "sk") if name in item}


def _written(operation: str, body: dict[str, Any]) -> list[tuple[bool, str, dict[str, Any], int | None]]:
    if operation == "TransactWriteItems":
        entries = []
        for entry in body.get("TransactItems", []):
            (kind, request), *_ = entry.items()
            if kind == "ConditionCheck":
                continue
            size = item_size(request["Item"]) if kind == "Put" else None
            key = request.get("Key") or _key_of(request.get("Item") or {})
            entries.append((True, request["TableName"], key, size))
        return entries
    if operation == "PutItem":
        return [(False, body["TableName"], _key_of(body["Item"]), item_size(body["Item"]))]
    if operation in ("UpdateItem", "DeleteItem"):
        return [(False, body["TableName"], body["Key"], None)]
    return []


_consistent: list[bool] = []
_SIZED = ("TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "Query", "GetItem")


def _before_call(model: Any, params: Any, **_: Any) -> None:
    size = _body_size(params)
    body: dict[str, Any] = {}
    if _active and model.name in _SIZED:
        raw = params.get("body", b"") if isinstance(params, dict) else b""
        body = json.loads(raw) if raw else {}
    _consistent[:] = [bool(body.get("ConsistentRead"))]
    for tally in _active:
        tally.calls[model.name] += 1
        tally.sent += size
        tally.sent_by_op[model.name] += size
        tally.writes += _written(model.name, body)


def _after_call(model: Any, http_response: Any, parsed: Any = None, **_: Any) -> None:
    size = len(getattr(http_response, "content", b"") or b"")
    read = 0
    if model.name in ("Query", "GetItem") and isinstance(parsed, dict):
        items = parsed.get("Items") or ([parsed["Item"]] if parsed.get("Item") else [])
        read = sum(item_size(i) for i in items)
    for tally in _active:
        tally.received += size
        tally.received_by_op[model.name] += size
        if model.name in ("Query", "GetItem"):
            tally.reads.append((model.name, read, bool(_consistent and _consistent[0])))


def install() -> None:
    """Meter every DynamoDB client created from now on in this process (idempotent)."""
    global _installed
    if _installed:
        return
    original = botocore.session.Session.create_client

    def create_client(self: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
        client = original(self, *args, **kwargs)
        if client.meta.service_model.service_name == "dynamodb":
            client.meta.events.register(
                "before-call.dynamodb.*", _before_call, unique_id="bench-meter-before"
            )
            client.meta.events.register("after-call.dynamodb.*", _after_call, unique_id="bench-meter-after")
        return client

    botocore.session.Session.create_client = create_client  # type: ignore[method-assign]
    _time_moto()
    _installed = True


def _time_moto() -> None:
    """Add the CPU time moto spends answering each request to the active tallies."""
    from moto.core.botocore_stubber import BotocoreStubber

    original = BotocoreStubber.__call__

    def timed(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return original(self, event_name, request, **kwargs)
        finally:
            elapsed = time.process_time() - started
            for tally in _active:
                tally.server_seconds += elapsed

    BotocoreStubber.__call__ = timed  # type: ignore[method-assign]


@contextmanager
def metered() -> Iterator[Tally]:
    """Count the DynamoDB calls and bytes of the block (clients must be created after `install()`)."""
    install()
    tally = Tally()
    _active.append(tally)
    try:
        yield tally
    finally:
        _active.remove(tally)


@contextmanager
def moto_env(**extra: str) -> Iterator[None]:
    """Fake AWS credentials and bench settings in os.environ for the block, restored afterwards."""
    wanted = {**MOTO_ENV, **extra}
    saved = {name: os.environ.get(name) for name in [*wanted, "LLM_BASE_URL", "DYNAMODB_ENDPOINT"]}
    os.environ.update(wanted)
    for name in ("LLM_BASE_URL", "DYNAMODB_ENDPOINT"):
        if name not in extra:
            os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _replace_not_add(self: dict[str, Any], key: str, value: Any) -> None:
    """moto's item size check, counting a replaced attribute once (moto adds the old and the new value)."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.utilities import bytesize

    def size(v: Any) -> int:
        return int(v.size()) if type(v) is DynamoType else bytesize(str(v))

    current = sum(bytesize(k) + size(v) for k, v in self.items() if k != key)
    if current + bytesize(key) + size(value) > MOTO_ITEM_LIMIT:
        raise ItemSizeTooLarge
    dict.__setitem__(self, key, value)


# moto's own item cap (names + values, no list/map overhead), from moto.dynamodb.models.dynamo_type.
MOTO_ITEM_LIMIT = 405_000


@contextmanager
def moto_fixes() -> Iterator[None]:
    """moto artefacts removed for the block (DynamoDB behaves like the patched moto).

    1. The local server's and the tests' own fixes (`chat_local.moto_fidelity`): a TransactWriteItems
       costs what it touches (moto deep-copied every table it names, so a long conversation's appends
       cost O(n^2)), and responses are serialized at the cost of their bytes (moto re-checked every
       nested member of every attribute value, about 20 µs each, so a 400 KB GetItem took seconds).
       Installed for the rest of the process.
    2. moto's item size check on UpdateItem adds the replaced attribute's old value to its new one, so
       an item is refused at about half its real size. The patch counts the replaced attribute once.
    """
    from chat_local import moto_fidelity
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict

    moto_fidelity.install()
    original_setitem = LimitedSizeDict.__setitem__
    LimitedSizeDict.__setitem__ = _replace_not_add  # type: ignore[method-assign]
    try:
        yield
    finally:
        LimitedSizeDict.__setitem__ = original_setitem  # type: ignore[method-assign]


def kb(size: int) -> str:
    """Bytes as KB (1,000) with a precision that suits the size."""
    value = size / 1000
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.2f}"
