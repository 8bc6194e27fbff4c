"""Memory items (MEM-20): an owner's key-value memories by namespace and key, as LangGraph's store keeps
them. The only module that reads or writes these items.

Layout: one partition per owner, `pk = USER#<owner>#MEMKV` (owners are escaped, so no owner can name
another's partition; no other item of the table has this partition key), and one item per memory,
`sk = I#<label>/<label>/.../|<key>`: each namespace label escaped (`%` `/` `|` as `%25` `%2F` `%7C`) and
closed by `/`, then `|` and the key as given. Every namespace starting with the labels `a, b` has a sort
key starting with `I#a/b/`, so a search or a namespace listing under a prefix is one key-range Query
(`begins_with`), and `("a", "b")` never catches `("a", "bc")`. The value is kept as its JSON text
(numbers, nesting and key order exactly as given). An item with a TTL carries `expires_at` (the
table's TTL attribute, epoch seconds) and `ttl_minutes` (to refresh it on reads); DynamoDB purges an
expired item within days, and until then every read here treats it as absent.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.attributes import ListAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DeleteError, PynamoDBException, UpdateError
from pynamodb.expressions.operand import Path

from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.keys import owner_pk

#: The item's `type`: none of the table's stream consumers takes it.
MEMORY_ITEM_TYPE: Final = "memory_item"
ITEM_SK_PREFIX: Final = "I#"
_LABEL_END: Final = "/"
_KEY_START: Final = "|"
#: DynamoDB's limit on a sort key (UTF-8 bytes).
MAX_SORT_KEY_BYTES: Final = 1024
#: The table's TTL attribute, written as epoch seconds (PynamoDB's TTLAttribute takes datetimes only).
_EXPIRES: Final = Path("expires_at")


def memory_pk(owner: str) -> str:
    """The partition of one owner's memory items."""
    return f"{owner_pk(owner)}#MEMKV"


def _escape(label: str) -> str:
    return label.replace("%", "%25").replace("/", "%2F").replace("|", "%7C")


def _unescape(label: str) -> str:
    return label.replace("%7C", "|").replace("%2F", "/").replace("%25", "%")


def namespace_prefix(namespace: Sequence[str]) -> str:
    """The sort-key prefix of every item whose namespace starts with `namespace` (`I#` for all)."""
    return ITEM_SK_PREFIX + "".join(_escape(label) + _LABEL_END for label in namespace)


def item_sk(namespace: Sequence[str], key: str) -> str:
    """The sort key of the item `key` in `namespace`."""
    return namespace_prefix(namespace) + _KEY_START + key


def sort_key_bytes(namespace: Sequence[str], key: str) -> int:
    """How many bytes the item's sort key takes (DynamoDB refuses more than MAX_SORT_KEY_BYTES)."""
    return len(item_sk(namespace, key).encode("utf-8"))


def parse_sk(sk: str) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of an item's sort key."""
    body = sk.removeprefix(ITEM_SK_PREFIX)
    labels, _, key = body.partition(_KEY_START)
    return tuple(_unescape(label) for label in labels.split(_LABEL_END)[:-1]), key


class MemoryItem(TableItem, discriminator=MEMORY_ITEM_TYPE):
    """One memory: `value` is a JSON object's text; times are ISO 8601 UTC."""

    namespace = ListAttribute(of=UnicodeAttribute)
    key = UnicodeAttribute()
    value = UnicodeAttribute()
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    ttl_minutes = NumberAttribute(null=True)


@dataclass(frozen=True)
class MemoryRecord:
    """A stored memory as the domain sees it (`expires_at` epoch seconds, None without a TTL)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str
    ttl_minutes: float | None = None
    expires_at: int | None = None

    @classmethod
    def of(cls, item: MemoryItem) -> MemoryRecord:
        namespace, key = parse_sk(item.sk)
        expires = item.expires_at
        return cls(
            namespace=namespace,
            key=key,
            value=json.loads(item.value),
            created_at=item.created_at,
            updated_at=item.updated_at,
            ttl_minutes=float(item.ttl_minutes) if item.ttl_minutes is not None else None,
            expires_at=int(expires.timestamp()) if expires is not None else None,
        )


def _live(item: MemoryItem, now: float) -> bool:
    return item.expires_at is None or item.expires_at.timestamp() > now


def expiry(ttl_minutes: float, now: float) -> int:
    """The epoch second a memory written (or read, when refreshed) at `now` expires."""
    return math.ceil(now + ttl_minutes * 60)


def get(owner: str, namespace: Sequence[str], key: str) -> MemoryRecord | None:
    """The live memory `key` of `namespace`, or None (one consistent GetItem)."""
    base.bind()
    try:
        item = MemoryItem.get(memory_pk(owner), item_sk(namespace, key), consistent_read=True)
    except MemoryItem.DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise base.store_error(exc) from exc
    return MemoryRecord.of(item) if _live(item, time.time()) else None


def put(
    owner: str,
    namespace: Sequence[str],
    key: str,
    value_json: str,
    *,
    now: str,
    ttl_minutes: float | None,
) -> MemoryRecord:
    """Store the memory (created, or replaced keeping its `created_at`). One UpdateItem, a second one
    only when an expired memory not yet purged is replaced (it starts anew)."""
    base.bind()
    epoch = time.time()
    item = MemoryItem(memory_pk(owner), item_sk(namespace, key))
    actions: list[Any] = [
        Path("type").set(MEMORY_ITEM_TYPE),
        MemoryItem.namespace.set(cast(Any, list(namespace))),
        MemoryItem.key.set(key),
        MemoryItem.value.set(value_json),
        MemoryItem.updated_at.set(now),
    ]
    if ttl_minutes is None:
        actions += [MemoryItem.ttl_minutes.remove(), _EXPIRES.remove()]
    else:
        actions += [
            MemoryItem.ttl_minutes.set(ttl_minutes),
            _EXPIRES.set(expiry(ttl_minutes, epoch)),
        ]
    try:
        item.update(
            actions=[*actions, MemoryItem.created_at.set(MemoryItem.created_at | now)],
            condition=_EXPIRES.does_not_exist() | (int(epoch) < _EXPIRES),
        )
    except UpdateError as exc:
        if exc.cause_response_code != "ConditionalCheckFailedException":
            raise base.store_error(exc) from exc
        try:  # an expired memory DynamoDB has not purged yet: this one is new
            item.update(actions=[*actions, MemoryItem.created_at.set(now)])
        except PynamoDBException as again:
            raise base.store_error(again) from again
    except PynamoDBException as exc:
        raise base.store_error(exc) from exc
    return MemoryRecord.of(item)


def delete(owner: str, namespace: Sequence[str], key: str) -> None:
    """Delete the memory (nothing happens when there is none). One DeleteItem."""
    base.bind()
    try:
        MemoryItem(memory_pk(owner), item_sk(namespace, key)).delete()
    except (DeleteError, PynamoDBException) as exc:
        raise base.store_error(exc) from exc


def refresh(owner: str, record: MemoryRecord, *, at: float | None = None) -> MemoryRecord:
    """Push the memory's expiry to `ttl_minutes` from now (LangGraph's `refresh_ttl`); a memory without
    a TTL, or refreshed less than a minute ago, is left as it is (no write). At most one UpdateItem,
    conditioned on the memory still being there and live."""
    if record.ttl_minutes is None or record.expires_at is None:
        return record
    epoch = time.time() if at is None else at
    expires_at = expiry(record.ttl_minutes, epoch)
    if expires_at - record.expires_at < 60:
        return record
    base.bind()
    item = MemoryItem(memory_pk(owner), item_sk(record.namespace, record.key))
    try:
        item.update(
            actions=[_EXPIRES.set(expires_at)],
            condition=int(epoch) < _EXPIRES,
        )
    except UpdateError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return record  # deleted, replaced without a TTL, or expired meanwhile
        raise base.store_error(exc) from exc
    except PynamoDBException as exc:
        raise base.store_error(exc) from exc
    return MemoryRecord(**{**record.__dict__, "expires_at": expires_at})


def scan(
    owner: str, prefix: Sequence[str], *, max_items: int, page_size: int = 500
) -> Iterator[MemoryRecord]:
    """The live memories whose namespace starts with `prefix`, in sort-key order, at most `max_items`
    read (Query pages of `page_size`)."""
    for raw_item in _query(owner, prefix, max_items, page_size, ()):
        item = MemoryItem.from_raw_data(raw_item)
        if isinstance(item, MemoryItem):
            yield MemoryRecord.of(item)


def namespaces(owner: str, prefix: Sequence[str], *, max_items: int) -> Iterator[tuple[str, ...]]:
    """The namespace of every live memory under `prefix` (repeated once per memory), reading only the
    sort keys and expiries, at most `max_items` memories."""
    for raw_item in _query(owner, prefix, max_items, 1000, ("sk", "expires_at")):
        yield parse_sk(raw_item["sk"]["S"])[0]


def _query(
    owner: str, prefix: Sequence[str], max_items: int, page_size: int, attributes: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """The raw items of live memories under `prefix` (only `attributes` of them when some are named)."""
    base.bind()
    pk = memory_pk(owner)
    condition = TableItem.sk.startswith(namespace_prefix(prefix))
    start: dict[str, Any] | None = None
    read = 0
    now = time.time()
    while read < max_items:
        try:
            raw: dict[str, Any] = TableItem._get_connection().query(
                pk,
                range_key_condition=condition,
                consistent_read=True,
                limit=min(page_size, max_items - read),
                exclusive_start_key=start,
                attributes_to_get=list(attributes) or None,
            )
        except (PynamoDBException, ClientError, BotoCoreError) as exc:
            raise base.store_error(exc) from exc
        for raw_item in raw.get("Items", []):
            read += 1
            expires = raw_item.get("expires_at", {}).get("N")
            if expires is None or float(expires) > now:
                yield raw_item
        start = raw.get("LastEvaluatedKey")
        if not start:
            return
