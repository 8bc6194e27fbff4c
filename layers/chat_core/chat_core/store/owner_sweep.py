"""PRV-1: find and delete every item of one owner, in every partition and index (a user's erasure).

Every item a user owns has a partition key starting `USER#<escaped owner>#` (docs/storage.md), the
listing index only copies conversation items, and an owner's escaped id holds no '#', so one prefix names
all of it and no other owner's. No index lists every such partition (a soft-deleted conversation leaves
the listing index; names, rate windows and worlds have their own partitions), so the erasure reads the
table's keys with a paged, filtered Scan: the one Scan of the service, run only by an erasure, whose cost
grows with the table, not with the user (docs/user-data.md gives the figures).

Idempotency records are keyed by a hash of owner and key: the ones holding a post's answer are found by
the conversation their answer names, while that conversation still exists.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException

from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.idempotency import IDEMPOTENCY_PK
from chat_core.store.keys import META_SK, conversation_pk, is_valid_id, owner_pk
from chat_core.store.partitions import BATCH_SIZE, _delete_batch

#: Items examined per Scan page (DynamoDB stops a page at 1 MB read whatever the limit).
SCAN_PAGE: Final = 1000
_BATCH_GET: Final = 100


def owner_prefix(owner: str) -> str:
    return owner_pk(owner) + "#"


def scan_page(owner: str, start: dict[str, Any] | None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One Scan page: the keys of the owner's items in it, and where the next page starts (None: done)."""
    base.bind()
    # Typed as Any: PynamoDB annotates a scan's start key as str, but takes the LastEvaluatedKey map.
    connection: Any = TableItem._get_connection()
    try:
        raw: dict[str, Any] = connection.scan(
            filter_condition=TableItem.pk.startswith(owner_prefix(owner)),
            attributes_to_get=["pk", "sk"],
            limit=SCAN_PAGE,
            exclusive_start_key=start,
            consistent_read=True,
        )
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    keys = [{"pk": item["pk"], "sk": item["sk"]} for item in raw.get("Items", [])]
    return keys, raw.get("LastEvaluatedKey") or None


def delete_keys(keys: list[dict[str, Any]], *, sleep: Callable[[float], None] = time.sleep) -> int:
    """BatchWriteItem deletes, 25 at a time, UnprocessedItems retried; returns how many were deleted."""
    base.bind()
    connection = TableItem._get_connection()
    for offset in range(0, len(keys), BATCH_SIZE):
        _delete_batch(connection, keys[offset : offset + BATCH_SIZE], sleep)
    return len(keys)


def idempotency_keys_of(owner: str) -> list[dict[str, Any]]:
    """Keys of the idempotency records whose stored answer names one of the owner's conversations."""
    base.bind()
    connection = TableItem._get_connection()
    named: dict[str, list[dict[str, Any]]] = {}
    start: dict[str, Any] | None = None
    try:
        while True:
            raw: dict[str, Any] = connection.query(
                IDEMPOTENCY_PK, consistent_read=True, exclusive_start_key=start, limit=500
            )
            for item in raw.get("Items", []):
                conversation_id = _conversation_named(item)
                if conversation_id is not None:
                    named.setdefault(conversation_id, []).append({"pk": item["pk"], "sk": item["sk"]})
            start = raw.get("LastEvaluatedKey")
            if not start:
                break
        owned = _existing_conversations(owner, list(named))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return [key for conversation_id in owned for key in named[conversation_id]]


def _conversation_named(item: dict[str, Any]) -> str | None:
    text = (item.get("data") or {}).get("S")
    if not text:
        return None
    try:
        answer = json.loads(text)
    except ValueError:
        return None
    found = answer.get("conversation_id") if isinstance(answer, dict) else None
    if not isinstance(found, str):
        body = answer.get("body") if isinstance(answer, dict) else None
        found = body.get("conversation_id") if isinstance(body, dict) else None
    return found if isinstance(found, str) and is_valid_id(found) else None


def _existing_conversations(owner: str, conversation_ids: list[str]) -> list[str]:
    """Which of these conversation ids are the owner's (their conversation item exists under the owner)."""
    connection: Any = TableItem._get_connection()
    found: list[str] = []
    for offset in range(0, len(conversation_ids), _BATCH_GET):
        chunk = conversation_ids[offset : offset + _BATCH_GET]
        keys = [{"pk": conversation_pk(owner, c), "sk": META_SK} for c in chunk]
        pending: list[dict[str, Any]] = keys
        while pending:
            answer: dict[str, Any] = connection.batch_get_item(pending, attributes_to_get=["pk"])
            table = connection.table_name
            for item in (answer.get("Responses") or {}).get(table, []):
                found.append(item["pk"]["S"].rsplit("#", 1)[1])
            pending = ((answer.get("UnprocessedKeys") or {}).get(table) or {}).get("Keys") or []
    return found
