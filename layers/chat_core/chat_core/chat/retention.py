"""Retention: once DynamoDB's TTL removes a soft-deleted conversation item, purge its whole partition.

Soft delete sets `expires_at` (RETENTION_DAYS) on the conversation item; DynamoDB deletes that item some
time after it expires and the table's stream reports the removal with the DynamoDB service as the
identity. The purge then deletes the conversation's messages, events and summary, and the content parts
it kept in S3 (API-17), so storage is freed.
Only that conversation's partition is ever touched: the key comes from the removed item itself and must
be a conversation key whose owner and id match the item's own attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from chat_core.errors import ConversationNotExpired, InvalidInput
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.store import blobs, world_io
from chat_core.store import conversations as conversation_store
from chat_core.store.dialogues import validate_world_id
from chat_core.store.directory import world_key
from chat_core.store.keys import META_SK, conversation_pk, is_valid_id, is_valid_owner
from chat_core.store.partitions import delete_partition, parse_conversation_pk

#: The identity DynamoDB puts on stream records of items its TTL process deleted.
TTL_PRINCIPAL = "dynamodb.amazonaws.com"


@dataclass(frozen=True)
class PurgeResult:
    """One conversation's purge: items deleted (0 when already empty) and the DynamoDB work it took."""

    conversation_id: str
    deleted: int
    pages: int
    batches: int
    retries: int
    attachments: int = 0  # objects deleted from the blob bucket (API-17)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_ttl_removal(record: Mapping[str, Any]) -> bool:
    """A REMOVE made by DynamoDB's TTL process (not by a user or a function)."""
    identity = record.get("userIdentity") or {}
    return (
        record.get("eventName") == "REMOVE"
        and isinstance(identity, Mapping)
        and identity.get("type") == "Service"
        and identity.get("principalId") == TTL_PRINCIPAL
    )


def _string(image: Mapping[str, Any], name: str) -> str | None:
    value = image.get(name)
    return value.get("S") if isinstance(value, Mapping) else None


def expired_conversation(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """(owner, conversation_id) when `record` is the TTL removal of a conversation item, else None.

    The partition key must be a conversation key, the sort key the conversation item's, and the old
    image's own owner and id must build that same key: a record of anything else purges nothing.
    """
    if not is_ttl_removal(record):
        return None
    ddb = record.get("dynamodb") or {}
    keys, old = ddb.get("Keys") or {}, ddb.get("OldImage") or {}
    pk, sk = _string(keys, "pk"), _string(keys, "sk")
    if pk is None or sk != META_SK or _string(old, "type") != "conversation":
        return None
    parsed = parse_conversation_pk(pk)
    if parsed is None:
        return None
    owner, conversation_id = _string(old, "owner"), _string(old, "conversation_id")
    if (owner, conversation_id) != parsed:
        return None
    return parsed


def expired_world(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """DLG-4: (owner, world_id) when `record` is the TTL removal of a deleted world's item, else None.
    Its key must be the one the item's own owner and world id build."""
    if not is_ttl_removal(record):
        return None
    ddb = record.get("dynamodb") or {}
    keys, old = ddb.get("Keys") or {}, ddb.get("OldImage") or {}
    owner, world_id = _string(old, "owner"), _string(old, "world_id")
    if _string(old, "type") != "world" or owner is None or world_id is None or not is_valid_owner(owner):
        return None
    if (_string(keys, "pk"), _string(keys, "sk")) != world_key(owner, world_id):
        return None
    try:
        return owner, validate_world_id(world_id)
    except InvalidInput:
        return None


def purge_partition(owner: str, conversation_id: str) -> PurgeResult:
    """Delete everything in the conversation's partition (idempotent; an empty one deletes nothing)."""
    # API-17: the content parts kept in S3 go with the conversation (its whole prefix, idempotent);
    # first, so a purge that fails part way leaves no object that no item refers to.
    objects = blobs.delete_conversation(owner, conversation_id)
    counts = delete_partition(conversation_pk(owner, conversation_id))
    metrics.add_metric(name="ConversationsPurged", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ItemsPurged", unit=MetricUnit.Count, value=counts.deleted)
    logger.info(
        "conversation purged",
        conversation_id=conversation_id,
        deleted=counts.deleted,
        pages=counts.pages,
        batches=counts.batches,
        retries=counts.retries,
        attachments=objects,
    )
    return PurgeResult(conversation_id, counts.deleted, counts.pages, counts.batches, counts.retries, objects)


def purge_expired(owner: str, conversation_id: str, *, now: datetime | None = None) -> PurgeResult:
    """Direct invocation (e.g. re-running a purge that went to the dead-letter queue): purge a
    conversation whose item TTL already removed, or that was soft-deleted and is past its retention.

    A live conversation, or one still within its retention, is refused: this is not a hard delete.
    """
    if not is_valid_owner(owner):
        raise InvalidInput("owner must be a non-blank identity without control characters", field="owner")
    if not is_valid_id(conversation_id):
        raise InvalidInput("conversation_id is not a valid id", field="conversation_id")
    conversation = conversation_store.get_conversation(owner, conversation_id)
    if conversation is not None:
        expires = conversation.expires_at
        moment = now or datetime.now(UTC)
        if not conversation.is_deleted or expires is None or expires > moment:
            raise ConversationNotExpired(
                f"conversation {conversation_id} is not past its retention; "
                "only expired conversations are purged",
                conversation_id=conversation_id,
            )
    return purge_partition(owner, conversation_id)


def process_stream(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Purge the partition of every conversation item TTL removed in a stream batch.

    Other records are ignored (the event source mapping's filter should not have sent them). A purge
    that fails raises after the others were tried, so Lambda retries the batch; purging is idempotent.
    """
    worlds = [w for w in (expired_world(r) for r in records) if w is not None]
    targets = _targets([r for r in records if expired_world(r) is None])
    results: list[PurgeResult] = []
    failure: Exception | None = None
    for owner, world_id in worlds:  # DLG-4
        try:
            purged = world_io.purge_world(owner, world_id) + blobs.delete_world(owner, world_id)
        except Exception as exc:  # tried the rest first; re-raised below for the retry
            logger.exception("world purge failed; the stream retries", world_id=world_id)
            failure = failure or exc
            continue
        metrics.add_metric(name="WorldsPurged", unit=MetricUnit.Count, value=1)
        logger.info("world purged", world_id=world_id, deleted=purged)
    for owner, conversation_id in targets:
        try:
            results.append(purge_partition(owner, conversation_id))
        except Exception as exc:  # tried the rest first; re-raised below for the retry
            logger.exception("purge failed; the stream retries", conversation_id=conversation_id)
            failure = failure or exc
    if failure is not None:
        raise failure
    logger.info(
        "stream batch purged",
        records=len(records),
        conversations=len(targets),
        deleted=sum(r.deleted for r in results),
    )
    return {
        "records": len(records),
        "worlds": len(worlds),
        "conversations": len(targets),
        "deleted": sum(r.deleted for r in results),
        "purged": [r.to_dict() for r in results],
    }


def _targets(records: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for record in records:
        found = expired_conversation(record)
        if found is None:
            keys = (record.get("dynamodb") or {}).get("Keys") or {}
            logger.warning(
                "stream record ignored: not a TTL removal of a conversation item",
                event_name=record.get("eventName"),
                pk=_string(keys, "pk"),
                sk=_string(keys, "sk"),
            )
            continue
        seen.setdefault(found, None)
    return list(seen)
