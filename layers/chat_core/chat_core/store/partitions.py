"""A conversation's partition as a whole: parse its key, and delete everything in it (retention purge)."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException

from chat_core.errors import StoreUnavailable
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.keys import conversation_pk, is_valid_id, is_valid_owner

#: BatchWriteItem takes at most 25 requests.
BATCH_SIZE = 25
#: Keys read per Query page (keys only, so a page is small whatever the messages weighed).
PAGE_SIZE = 500
_BATCH_ATTEMPTS = 8
_BACKOFF_BASE_S = 0.05
_BACKOFF_CAP_S = 2.0

# USER#<escaped owner>#CONV#<id>: an escaped owner never contains '#', so the split is unambiguous.
_PK_RE = re.compile(r"^USER#(?P<owner>[^#]+)#CONV#(?P<id>[0-9A-Z]{26})$")
_UNESCAPE_RE = re.compile(r"%(25|23)")


# DLG-4: the partitions of one owner's world (dialogue, directory, participant index, witness rows).
_WORLD_PARTITION = re.compile(r"USER#[^#]+#WORLD#[A-Za-z0-9][A-Za-z0-9_.-]*#(DLG#.+|DIR|P#.+|WIT#.+)")


def parse_conversation_pk(pk: str) -> tuple[str, str] | None:
    """(owner, conversation_id) of a conversation partition key, or None for any other key.

    Only a key that `conversation_pk` would build for a valid owner and id is accepted, so a record
    of another kind of item (dialogues, idempotency records, ...) can never be taken for one.
    """
    found = _PK_RE.fullmatch(pk) if isinstance(pk, str) else None
    if found is None:
        return None
    owner = _UNESCAPE_RE.sub(lambda m: "%" if m.group(1) == "25" else "#", found["owner"])
    conversation_id = found["id"]
    if not is_valid_id(conversation_id) or not is_valid_owner(owner):
        return None
    if conversation_pk(owner, conversation_id) != pk:
        return None
    return owner, conversation_id


@dataclass(frozen=True)
class PurgeCount:
    """What one purge of a partition did: items deleted, Query pages read, BatchWriteItem retries."""

    deleted: int
    pages: int
    batches: int
    retries: int


def delete_partition(pk: str, *, sleep: Callable[[float], None] = time.sleep) -> PurgeCount:
    """Delete every item whose partition key is `pk`: Query its keys page by page, BatchWriteItem 25 at
    a time, retrying UnprocessedItems with exponential backoff and jitter.

    Idempotent: an empty partition costs one Query and deletes nothing. Raises StoreUnavailable when
    DynamoDB keeps refusing; what was deleted stays deleted and a re-run finishes the rest.
    """
    base.bind()
    if parse_conversation_pk(pk) is None and not _WORLD_PARTITION.fullmatch(pk):
        raise ValueError(f"not a conversation or dialogue-world partition key: {pk!r}")
    connection = TableItem._get_connection()
    deleted = pages = batches = retries = 0
    start: dict[str, Any] | None = None
    while True:
        try:
            raw: dict[str, Any] = connection.query(
                pk,
                attributes_to_get=["pk", "sk"],
                consistent_read=True,
                limit=PAGE_SIZE,
                exclusive_start_key=start,
            )
        except (PynamoDBException, ClientError, BotoCoreError) as exc:
            raise base.store_error(exc) from exc
        pages += 1
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in raw.get("Items", [])]
        for offset in range(0, len(keys), BATCH_SIZE):
            chunk = keys[offset : offset + BATCH_SIZE]
            retries += _delete_batch(connection, chunk, sleep)
            batches += 1
            deleted += len(chunk)
        start = raw.get("LastEvaluatedKey")
        if not start:
            return PurgeCount(deleted=deleted, pages=pages, batches=batches, retries=retries)


def _delete_batch(connection: Any, keys: list[dict[str, Any]], sleep: Callable[[float], None]) -> int:
    """One BatchWriteItem of deletes until nothing is unprocessed; returns how many retries it took."""
    table = connection.table_name
    pending = keys
    for attempt in range(_BATCH_ATTEMPTS):
        try:
            answer: dict[str, Any] = connection.batch_write_item(delete_items=pending)
        except (PynamoDBException, ClientError, BotoCoreError) as exc:
            error = base.store_error(exc)
            if not isinstance(error, StoreUnavailable) or attempt == _BATCH_ATTEMPTS - 1:
                raise error from exc
        else:
            unprocessed = (answer.get("UnprocessedItems") or {}).get(table) or []
            pending = [request["DeleteRequest"]["Key"] for request in unprocessed]
            if not pending:
                return attempt
        # Full jitter: concurrent purges spread out instead of retrying in lockstep.
        sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)))  # noqa: S311
    raise StoreUnavailable(
        f"{len(pending)} delete(s) still unprocessed after {_BATCH_ATTEMPTS} attempts; retry",
        cause="unprocessed",
    )
