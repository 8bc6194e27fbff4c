"""RSP-12: the state of one Responses WebSocket connection: its caller, and the last response it keeps.

| item   | pk                 | sk     |
|--------|--------------------|--------|
| socket | SOCKET#<conn_id>   | SOCKET |

Written on connect (PutItem), read on every message (GetItem, strongly consistent), deleted on
disconnect (DeleteItem) and by TTL (`expires_at`) when a disconnect is never delivered. A `store: false`
response the socket may be continued from is kept on the item, zlib-compressed (`kept`), until the next
turn replaces it, a failed turn evicts it or the connection ends; above `KEPT_MAX_BYTES` it is not kept
and its continuation is answered `previous_response_not_found`, as a cache miss is.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from pynamodb.attributes import BinaryAttribute, UnicodeAttribute
from pynamodb.exceptions import DeleteError, DoesNotExist, PynamoDBException, UpdateError

from chat_core.store.base import TableItem, bind, store_error

#: Room left for the keys and the other attributes in DynamoDB's 400 KB item.
KEPT_MAX_BYTES: Final = 380 * 1024
SOCKET_SK: Final = "SOCKET"


class SocketItem(TableItem, discriminator="socket"):
    """One open connection; never seen by the table stream's consumers (they filter on other types)."""

    owner = UnicodeAttribute()
    kept_id = UnicodeAttribute(null=True)
    kept = BinaryAttribute(null=True, legacy_encoding=False)

    @classmethod
    def pk_for(cls, connection_id: str) -> str:
        return f"SOCKET#{connection_id}"


@dataclass(frozen=True)
class SocketRecord:
    """A connection as the store holds it: `kept_items` is the input and output of the response named
    `kept_id` when it was a `store: false` one (None for a stored response, which the table holds)."""

    connection_id: str
    owner: str
    kept_id: str | None = None
    kept_items: list[dict[str, Any]] | None = None


def open_socket(connection_id: str, owner: str, expires_at: int) -> None:
    bind()
    expires = datetime.fromtimestamp(expires_at, UTC)
    item = SocketItem(SocketItem.pk_for(connection_id), SOCKET_SK, owner=owner, expires_at=expires)
    try:
        item.save()
    except PynamoDBException as exc:
        raise store_error(exc) from exc


def find_socket(connection_id: str) -> SocketRecord | None:
    bind()
    try:
        item = SocketItem.get(SocketItem.pk_for(connection_id), SOCKET_SK, consistent_read=True)
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise store_error(exc) from exc
    items = json.loads(zlib.decompress(item.kept)) if item.kept else None
    return SocketRecord(connection_id, item.owner, item.kept_id, items)


def keep_response(connection_id: str, response_id: str | None, items: list[dict[str, Any]] | None) -> None:
    """Keep `response_id` (with its items, when given and small enough) as what the socket may continue
    from; None evicts. Only an open socket is written (a late turn never revives a closed one)."""
    bind()
    blob = zlib.compress(json.dumps(items, separators=(",", ":")).encode(), 6) if items is not None else None
    if blob is not None and len(blob) > KEPT_MAX_BYTES:
        blob = None
        response_id = None
    item = SocketItem(SocketItem.pk_for(connection_id), SOCKET_SK)
    actions: list[Any] = [
        SocketItem.kept_id.set(response_id) if response_id else SocketItem.kept_id.remove(),
        SocketItem.kept.set(blob) if blob is not None else SocketItem.kept.remove(),
    ]
    try:
        item.update(actions=actions, condition=SocketItem.pk.exists(), add_version_condition=False)
    except UpdateError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return
        raise store_error(exc) from exc
    except PynamoDBException as exc:
        raise store_error(exc) from exc


def close_socket(connection_id: str) -> None:
    bind()
    try:
        SocketItem(SocketItem.pk_for(connection_id), SOCKET_SK).delete(add_version_condition=False)
    except DeleteError as exc:
        raise store_error(exc) from exc
