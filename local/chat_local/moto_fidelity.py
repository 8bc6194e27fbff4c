"""moto made to behave like DynamoDB where this service depends on it (the local server and the tests).

1. TransactWriteItems honours ClientRequestToken, which moto otherwise ignores. DynamoDB keeps a
   transaction's token for 10 minutes after it succeeded: the same token with the same request answers
   success again without applying anything; with another request it answers
   IdempotentParameterMismatchException. botocore resends a transaction whose response was lost (read
   timeout) with the same token, so without this a local store fails the resend's conditions where
   DynamoDB would answer success.
2. A transaction costs what it touches. moto deep-copies every table it names (all items, and the
   stream's every record, which moto keeps forever) before each TransactWriteItems, to roll back on
   failure: each post got slower and the process bigger with every message ever stored (3.7 s a post
   and 7.5 GB after a few hundred posts of `make run`). Here only the items the transaction names
   and the stream's length are saved, and restored if it is cancelled.
3. Responses are serialized at the cost of their bytes. moto walks every nested member of every
   attribute value against the service model (about 20 µs a value), so reads got slower with every
   item and a 400 KB GetItem took seconds; attribute values are already in wire form and are passed
   through (the bytes are the same). A stream record (GetRecords) is a plain dict under its members'
   own names: each member is taken by its name instead of through moto's alias lookups (about 14 a
   record), and serialized as before.
4. A stream keeps what a reader still needs. moto keeps every stream record forever (DynamoDB keeps
   them 24 hours); `trim_read_records` lets the local server drop the records every poller has read.
5. Every write is one step. DynamoDB applies an UpdateItem, a PutItem, a DeleteItem or a transaction
   atomically; moto runs them from several threads at once, so a transaction could check its conditions,
   an UpdateItem (a post taking its slots) run in between, and the transaction then apply what it had
   checked against a conversation item that had moved on (two posts with one turn number, a message
   overwritten). Here every write runs under one lock, and so does the copy of the item a write answers
   with (`ReturnValues: ALL_OLD`), which moto takes before the write: taken while another write was
   halfway through an UpdateItem, it showed a conversation item with its active leaf moved and its
   sequence not yet (a post that continued a message after it: a parent out of order).
6. A Query reads its partition. moto's Query of the table looks at every item of the table for the ones
   with the asked partition key, so every read got slower as any other conversation or world grew (a
   post's p50 tripled at 10,000 items); moto already keeps items by partition, and the Query now looks at
   that partition alone. Results, order, pages and counts are the same.
7. A response is not searched for XML it does not hold. moto runs a look-behind regular expression for
   `<RequestId>` over every response body, JSON included: on a large Query page, a sixth of the store's
   CPU. It now runs only on a body that holds `<RequestId>` (the same bodies change, the same way).
8. A Query of a global secondary index reads its index partition. moto looks at (and sorts) every item
   of the table for those with the asked index key, so the conversation listing (gsi1pk) got slower with
   every item stored. Each table now keeps, per index, the table keys of the items by their index
   partition key, built at the first Query of the index and kept up to date by every write (the writes
   of 5., which transactions and batches go through, and a cancelled transaction's undo); the Query
   looks at that partition's items alone. Results, order, pages and counts are the same.
9. UpdateExpressions are parsed once per text and validated without per-node rebuilding
   (`chat_local.moto_expressions`).
10. A request's attribute values are not walked where the walk changes nothing, and the handler's action
   names are listed once per class (`chat_local.moto_requests`).
11. A Query with a sort key condition sizes the items it holds. moto computed the size of every item of
   the partition it passed (walking each attribute), matched or not, so `sk > :x` on a long conversation
   sized every message before `x`. The partition is now the matching items and the item next to each
   end (moto ends a page on the item after its Limit-th match, whichever it is). Results, order, pages,
   counts and LastEvaluatedKeys are the same. One difference, toward DynamoDB: a page ends at 1 MB of
   matching items, as DynamoDB counts it; moto also ended it at an unmatched item that would have taken
   the page past 1 MB.
12. A stored item is sized once, not again at every attribute it gains (`chat_local.moto_items`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any, cast

import moto.dynamodb.models as dynamodb_models
from moto.core.responses import ActionResult, BaseResponse
from moto.dynamodb.exceptions import DynamodbException
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import StreamShard, Table
from moto.dynamodb.responses import DynamoHandler
from moto.utilities.aws_headers import gen_amzn_requestid_long

from chat_local import moto_expressions, moto_items, moto_requests

WINDOW_S = 600.0
#: Tokens remembered at most (oldest forgotten first): bounded memory for a long-running local server.
MAX_TOKENS = 50_000


class IdempotentParameterMismatch(DynamodbException):
    error_type = "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"

    def __init__(self) -> None:
        super().__init__(
            self.error_type,
            message="ClientRequestToken was used with a different TransactWriteItems request",
        )


_lock = threading.RLock()
_seen: OrderedDict[tuple[str, str, str], tuple[str, float]] = OrderedDict()
_original: Any = None


def _digest(body: dict[str, Any]) -> str:
    request = {k: v for k, v in body.items() if k != "ClientRequestToken"}
    # a binary attribute (B) reaches moto as bytes: hashed as its hex, so two requests still compare
    text = json.dumps(request, sort_keys=True, default=lambda v: v.hex() if isinstance(v, bytes) else str(v))
    return hashlib.sha256(text.encode()).hexdigest()


def _forget_old(now: float) -> None:
    while _seen:
        key, (_, at) = next(iter(_seen.items()))
        if now - at <= WINDOW_S and len(_seen) <= MAX_TOKENS:
            return
        del _seen[key]


def _transact_write_items(self: DynamoHandler) -> Any:
    token = self.body.get("ClientRequestToken")
    if not token:
        return _original(self)
    key = (self.current_account, self.region, str(token))
    digest = _digest(self.body)
    # One transaction with a token at a time: check, apply and remember without a gap between.
    with _lock:
        now = time.monotonic()
        _forget_old(now)
        seen = _seen.get(key)
        if seen is not None:
            if seen[0] != digest:
                raise IdempotentParameterMismatch()
            return ActionResult({})
        answer = _original(self)
        _seen[key] = (digest, now)
        return answer


class _TablesNotCopied:
    """Stands in for the `copy` module inside moto's DynamoDB backend: a Table is not copied (its
    transaction's items are saved by `_transact_with_undo` instead); anything else is, as before."""

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    copy = staticmethod(copy.copy)


def _wire_ready(value: Any) -> bool:
    """True for an attribute value with no binary inside (binary still needs moto's base64 step)."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    ((tag, inner),) = value.items()
    if tag in ("B", "BS"):
        return False
    if tag == "M":
        return isinstance(inner, dict) and all(_wire_ready(v) for v in inner.values())
    if tag == "L":
        return isinstance(inner, list) and all(_wire_ready(v) for v in inner)
    return True


_original_serialize: Any = None


#: The DynamoDB Streams structures moto answers as plain dicts under their members' own names.
_STREAM_STRUCTURES = frozenset({"Record", "StreamRecord", "Identity"})


def _serialize(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
    name = getattr(shape, "name", None)
    if name == "AttributeValue" and _wire_ready(value):
        self._default_serialize(serialized, value, shape, key)
        return
    if (
        name in _STREAM_STRUCTURES
        and isinstance(value, dict)
        and key
        and value.keys() <= shape.members.keys()
        and self.operation_model.service_model.service_name == "dynamodbstreams"
    ):
        # moto's walk looks each member up through its alias providers (about 20 µs a member, 14 a
        # record); a dict that holds only the members' own names gives each member its own value.
        wrapper = self.MAP_TYPE()
        for member_key, member_shape in shape.members.items():
            member_shape.parent = shape
            member_value = value.get(member_key)
            if member_value is not None:
                self._serialize(wrapper, member_value, member_shape, member_key)
        self._default_serialize(serialized, wrapper, shape, key)
        return
    _original_serialize(self, serialized, value, shape, key)


_Saved = tuple[Table, DynamoType, DynamoType | None, Item | None]


def _saved_items(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[_Saved]:
    saved: list[_Saved] = []
    for entry in transact_items:
        if len(entry) != 1:
            continue  # moto refuses it before writing anything
        _, op = next(iter(entry.items()))
        table = backend.tables.get(op.get("TableName"))
        attrs = op.get("Item") if "Item" in op else op.get("Key")
        if table is None or not isinstance(attrs, dict) or table.hash_key_attr not in attrs:
            continue
        hash_value = DynamoType(attrs[table.hash_key_attr])
        range_value = None
        if table.range_key_attr is not None:
            if table.range_key_attr not in attrs:
                continue
            range_value = DynamoType(attrs[table.range_key_attr])
        current = table.get_item(hash_value, range_value)
        saved.append((table, hash_value, range_value, copy.deepcopy(current)))
    return saved


def _restore(saved: list[_Saved], streams: dict[int, tuple[Any, int]]) -> None:
    for table, hash_value, range_value, item in reversed(saved):
        if range_value is None:
            if item is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = item  # type: ignore[assignment]
        elif item is None:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items[hash_value][range_value] = item
    for shard, length in streams.values():
        del shard.items[length:]
    for table, hash_value, range_value, _ in saved:
        reindex(table, hash_value, range_value)


def _transact_with_undo(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    with _lock:
        saved = _saved_items(self, transact_items)
        streams = {
            id(table.stream_shard): (table.stream_shard, len(table.stream_shard.items))
            for table, *_ in saved
            if table.stream_shard is not None
        }
        try:
            _original_backend(self, transact_items)
        except Exception:
            _restore(saved, streams)
            raise


#: The single-item writes of moto's backend, each made one step under `_lock` (5.).
_SINGLE_WRITES = ("update_item", "put_item", "delete_item")
_original_writes: dict[str, Any] = {}


#: The handlers that copy the item before writing it (ALL_OLD), each made one step with its write (5.).
_original_handlers: dict[str, Any] = {}


def _answered_in_one_step(name: str) -> Any:
    original = getattr(DynamoHandler, name)

    def handle(self: DynamoHandler) -> Any:
        with _lock:
            return original(self)

    handle.__name__ = name
    _original_handlers[name] = original
    return handle


def _one_step(name: str) -> Any:
    original = getattr(DynamoDBBackend, name)

    def write(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
        with _lock:
            try:
                return original(self, *args, **kwargs)
            finally:
                _reindex_written(self, name, args, kwargs)

    write.__name__ = name
    _original_writes[name] = original
    return write


_original_backend: Any = None
_original_shard_get: Any = None


def _shard_get(self: StreamShard, start: int, quantity: int) -> list[dict[str, Any]]:
    # Records before `_trimmed` were read by every poller and dropped; a reader positioned there
    # continues with the first record still kept.
    index = max(start - self.starting_sequence_number, getattr(self, "_trimmed", 0))
    return [record.to_json() for record in self.items[index : index + quantity] if record is not None]


def trim_read_records(iterators: list[Any]) -> int:
    """Drop the stream records that precede every one of `iterators` (moto ShardIterators still to be
    read: one per poller and shard). Sequence numbers are kept (a dropped record leaves a None slot,
    8 bytes). Returns how many records were dropped."""
    positions: dict[int, tuple[StreamShard, int]] = {}
    for iterator in iterators:
        shard = iterator.stream_shard
        position = int(iterator.sequence_number) - shard.starting_sequence_number
        known = positions.get(id(shard))
        positions[id(shard)] = (shard, position if known is None else min(known[1], position))
    dropped = 0
    with _lock:
        for shard, position in positions.values():
            done = getattr(shard, "_trimmed", 0)
            end = min(position, len(shard.items))
            for index in range(done, end):
                shard.items[index] = None  # type: ignore[call-overload]
            if end > done:
                shard._trimmed = end  # type: ignore[attr-defined]
                dropped += end - done
    return dropped


class _Partition:
    """A table as its own Query sees it: `all_items()` is the one partition asked for (fidelity 6), and
    under a sort key condition the items it holds and their two neighbours (fidelity 11)."""

    def __init__(self, table: Table, hash_key: DynamoType, condition: tuple[str, list[Any]] | None) -> None:
        self._table = table
        self._hash_key = hash_key
        self._condition = condition

    def all_items(self) -> list[Item]:
        # `in` first: `items` is a defaultdict, and a lookup of an absent key would add an empty partition.
        if self._hash_key not in self._table.items:
            return []
        items = list(self._table.items[self._hash_key].values())
        if self._condition is None:
            return items
        comparison, values = self._condition
        items.sort(key=lambda item: item.range_key)
        try:
            held = [i for i, item in enumerate(items) if item.range_key.compare(comparison, values)]
        except Exception:  # moto's own loop raises it (or not) as before
            return items
        if not held:
            return []
        # moto ends a page on the item after the Limit-th match, whichever it is: the item next to the
        # first and the last match stay, so a page ends (and has a LastEvaluatedKey) where it did.
        first, last = max(held[0] - 1, 0), min(held[-1] + 1, len(items) - 1)
        return [items[i] for i in sorted({first, *held, last})]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


# Per table, per global index with one partition key attribute: (attribute, table keys by index
# partition value, index partition value by table key). Kept on the Table as `_gsi_keys` (fidelity 8).
_TableKey = tuple[DynamoType, DynamoType | None]
_IndexKeys = tuple[str, dict[DynamoType, dict[_TableKey, None]], dict[_TableKey, DynamoType]]


def _index_attribute(table: Table, index_name: str) -> str | None:
    for index in table.global_indexes or []:
        if index.name == index_name:
            hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
            return hashes[0] if len(hashes) == 1 else None
    return None


def _index_keys(table: Table, index_name: str, attribute: str) -> _IndexKeys:
    """The index's table keys by partition, built from every item at its first use (then kept)."""
    indexes: dict[str, _IndexKeys] = table.__dict__.setdefault("_gsi_keys", {})
    if index_name not in indexes:
        by_value: dict[DynamoType, dict[_TableKey, None]] = {}
        by_key: dict[_TableKey, DynamoType] = {}
        for item in _every_item(table):
            value = item.attrs.get(attribute)
            if value is not None:
                key = (item.hash_key, item.range_key)
                by_value.setdefault(value, {})[key] = None
                by_key[key] = value
        indexes[index_name] = (attribute, by_value, by_key)
    return indexes[index_name]


def _every_item(table: Table) -> list[Item]:
    if table.range_key_attr:
        return [item for partition in table.items.values() for item in partition.values()]
    return list(table.items.values())  # type: ignore[arg-type]


def reindex(table: Table, hash_value: DynamoType, range_value: DynamoType | None) -> None:
    """Bring the table's index partitions up to date with the item at this key (written or deleted)."""
    indexes: dict[str, _IndexKeys] | None = table.__dict__.get("_gsi_keys")
    if not indexes:
        return
    key = (hash_value, range_value)
    if range_value is None:
        found = table.items.get(hash_value)
        item = found if isinstance(found, Item) else None
    else:
        item = table.items.get(hash_value, {}).get(range_value)
    for attribute, by_value, by_key in indexes.values():
        old = by_key.pop(key, None)
        if old is not None:
            members = by_value.get(old, {})
            members.pop(key, None)
            if not members:
                by_value.pop(old, None)
        new = item.attrs.get(attribute) if item is not None else None
        if new is not None:
            by_value.setdefault(new, {})[key] = None
            by_key[key] = new


def _reindex_written(
    backend: DynamoDBBackend, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    table_name = kwargs.get("table_name", args[0] if args else None)
    attrs = kwargs.get("item_attrs" if name == "put_item" else "key", args[1] if len(args) > 1 else None)
    table = backend.tables.get(table_name) if isinstance(table_name, str) else None
    if table is None or not isinstance(attrs, dict) or table.hash_key_attr not in attrs:
        return
    if table.range_key_attr is not None and table.range_key_attr not in attrs:
        return
    range_value = DynamoType(attrs[table.range_key_attr]) if table.range_key_attr else None
    reindex(table, DynamoType(attrs[table.hash_key_attr]), range_value)


class _IndexPartition:
    """A table as a Query of one of its global indexes sees it: `all_items()` is the items of the one
    index partition asked for, in the order of moto's own `all_items` (fidelity 8)."""

    def __init__(self, table: Table, keys: dict[_TableKey, None]) -> None:
        self._table = table
        self._keys = keys

    def all_items(self) -> list[Item]:
        items: list[Item] = []
        for hash_value, range_value in self._keys:
            if range_value is None:
                found = self._table.items.get(hash_value)
                if isinstance(found, Item):
                    items.append(found)
            elif (item := self._table.items.get(hash_value, {}).get(range_value)) is not None:
                items.append(item)
        return sorted(items, key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


#: Table.query's keyword parameters that are not filters (moto passes the others positionally).
_QUERY_KEYWORDS = frozenset({"hash_key_conditions", "range_key_conditions"})


def _sort_key_condition(
    table: Table, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, list[Any]] | None:
    """The table Query's condition on its sort key, when it is the Query's only condition on items."""
    if len(args) < 2 or not args[0] or kwargs.keys() - _QUERY_KEYWORDS:
        return None
    conditions = kwargs.get("range_key_conditions")
    if conditions and (len(conditions) != 1 or conditions[0][0] != table.range_key_attr):
        return None
    return args[0], args[1]


def _query(self: Table, hash_key: DynamoType | None, *args: Any, **kwargs: Any) -> Any:
    index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
    if index_name is None and hash_key is not None and self.range_key_attr:
        partition = _Partition(self, hash_key, _sort_key_condition(self, args, kwargs))
        return _original_query(partition, hash_key, *args, **kwargs)
    if index_name is not None and hash_key is not None:
        attribute = _index_attribute(self, index_name)
        conditions = kwargs.get("hash_key_conditions") or [(attribute, hash_key)]
        if attribute is not None and len(conditions) == 1 and conditions[0][0] == attribute:
            with _lock:
                _, by_value, _ = _index_keys(self, index_name, attribute)
                keys = dict(by_value.get(hash_key, {}))
            return _original_query(_IndexPartition(self, keys), hash_key, *args, **kwargs)
    return _original_query(self, hash_key, *args, **kwargs)


_original_query: Any = None
_original_enrich: Any = None


def _enrich_response(headers: dict[str, str], body: Any) -> tuple[dict[str, str], Any]:
    if isinstance(body, str) and "<RequestId>" not in body:
        # What moto's own does to such a body: the status as a string, a request id; the body as it is.
        if "status" in headers:
            headers["status"] = str(headers["status"])
        gen_amzn_requestid_long(headers)
        return headers, body
    return cast(tuple[dict[str, str], Any], _original_enrich(headers, body))


def install() -> None:
    """Apply these changes to moto (idempotent; process-wide)."""
    global _original, _original_backend, _original_query, _original_enrich
    with _lock:
        moto_expressions.install()
        moto_requests.install()
        moto_items.install()
        if _original_query is None:
            _original_query = Table.query
            Table.query = _query  # type: ignore[method-assign]
        if _original_enrich is None:
            _original_enrich = BaseResponse._enrich_response
            BaseResponse._enrich_response = staticmethod(_enrich_response)  # type: ignore[method-assign]
        if _original is None:
            _original = DynamoHandler.transact_write_items
            DynamoHandler.transact_write_items = _transact_write_items  # type: ignore[method-assign]
        global _original_shard_get, _original_serialize
        if _original_serialize is None:
            from moto.core.serialize import JSONSerializer

            _original_serialize = JSONSerializer._serialize
            JSONSerializer._serialize = _serialize  # type: ignore[method-assign]
        if _original_shard_get is None:
            _original_shard_get = StreamShard.get
            StreamShard.get = _shard_get  # type: ignore[method-assign]
        if _original_backend is None:
            _original_backend = DynamoDBBackend.transact_write_items
            dynamodb_models.copy = _TablesNotCopied  # type: ignore[attr-defined, assignment]
            DynamoDBBackend.transact_write_items = _transact_with_undo  # type: ignore[method-assign]
        if not _original_writes:
            for name in _SINGLE_WRITES:
                setattr(DynamoDBBackend, name, _one_step(name))
        if not _original_handlers:
            for name in _SINGLE_WRITES:
                setattr(DynamoHandler, name, _answered_in_one_step(name))


def reset() -> None:
    """Forget every token (a fresh store)."""
    with _lock:
        _seen.clear()
