"""PRV-2: read one owner's data whole for an export: each partition by Query, items as plain JSON.

Items leave the store as plain dicts of their own attributes (keys, index keys and the item type
dropped, numbers as ints or floats, binary as base64): the export's format is the items' attributes, so
a field added to an item reaches the archive without a change here.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, Final

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException

from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.fact_items import facts_pk
from chat_core.store.keys import owner_pk, usage_pk
from chat_core.store.memory_items import memory_pk

_DROPPED: Final = frozenset({"pk", "sk", "gsi1pk", "gsi1sk", "type", "expires_at"})
_deserializer = TypeDeserializer()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, set):
        return sorted(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _item(raw: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    whole = {k: _deserializer.deserialize(v) for k, v in raw.items()}
    plain = {k: _plain(v) for k, v in whole.items() if k not in _DROPPED}
    return str(whole["pk"]), str(whole["sk"]), plain


def partition(pk: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(sort key, attributes) of every item in one partition, in key order (paged Queries)."""
    base.bind()
    connection: Any = TableItem._get_connection()
    start: dict[str, Any] | None = None
    try:
        while True:
            raw: dict[str, Any] = connection.query(pk, consistent_read=True, exclusive_start_key=start)
            for found in raw.get("Items", []):
                _, sk, attributes = _item(found)
                yield sk, attributes
            start = raw.get("LastEvaluatedKey")
            if not start:
                return
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def conversation_ids(owner: str) -> list[str]:
    """Every live conversation of the owner (the listing index, keys only)."""
    base.bind()
    connection: Any = TableItem._get_connection()
    found: list[str] = []
    start: dict[str, Any] | None = None
    try:
        while True:
            raw: dict[str, Any] = connection.query(
                owner_pk(owner), index_name="gsi1", exclusive_start_key=start, attributes_to_get=["pk"]
            )
            found += [item["pk"]["S"].rsplit("#", 1)[1] for item in raw.get("Items", [])]
            start = raw.get("LastEvaluatedKey")
            if not start:
                return found
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


__all__ = ["conversation_ids", "facts_pk", "memory_pk", "partition", "usage_pk"]
