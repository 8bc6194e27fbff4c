"""Large content parts in S3 (API-17): the one module that talks to the blob bucket.

An object's key is `c/<owner digest>/<conversation id>/<sha256 of the part's value>`: content-addressed
inside its conversation (the same image posted twice is one object; a retried write rewrites the same
bytes), and every object of a conversation shares one prefix, which the retention purge deletes with the
conversation's items. The owner is hashed so user ids never appear in object keys or presigned URLs.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chat_core.errors import StoreUnavailable
from chat_core.observability import logger
from chat_core.runtime import for_settings
from chat_core.settings import Settings, get_settings

#: DeleteObjects takes at most 1,000 keys; ListObjectsV2 returns at most 1,000 per page.
DELETE_BATCH: Final = 1000

#: The runtime's S3 client (`_s3`).
S3_CLIENT: Final = "store.blobs.s3"


class BlobMissing(StoreUnavailable):
    """An object a stored message refers to is not in the bucket (deleted by hand, or another bucket)."""


def new_s3_client(settings: Settings) -> Any:
    """An S3 client with the store's retries and timeouts (botocore clients are thread-safe)."""
    config = Config(
        retries={"mode": "standard", "max_attempts": settings.dynamodb_max_attempts},
        connect_timeout=settings.dynamodb_connect_timeout_seconds,
        read_timeout=settings.dynamodb_read_timeout_seconds,
        signature_version="s3v4",
    )
    # botocore, not boto3: the read handlers that sign URLs stay as light as before.
    session = botocore.session.get_session()
    return session.create_client("s3", region_name=settings.region, config=config)


def _s3(settings: Settings) -> Any:
    """The runtime's S3 client for these settings (built once, closed with the runtime)."""
    return for_settings(settings).resource(S3_CLIENT, new_s3_client, close=_close_client)


def _close_client(client: Any) -> None:
    client.close()


def _bucket(settings: Settings) -> str:
    if not settings.blob_bucket:
        raise StoreUnavailable("no blob bucket is configured (BLOB_BUCKET)")
    return settings.blob_bucket


def conversation_prefix(owner: str, conversation_id: str) -> str:
    owner_digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]
    return f"c/{owner_digest}/{conversation_id}/"


def blob_key(owner: str, conversation_id: str, digest: str) -> str:
    return conversation_prefix(owner, conversation_id) + digest


def put(key: str, data: bytes, media_type: str, settings: Settings | None = None) -> None:
    """Write one object (idempotent: the key names its content)."""
    settings = settings or get_settings()
    try:
        _s3(settings).put_object(
            Bucket=_bucket(settings), Key=key, Body=data, ContentType=media_type or "application/octet-stream"
        )
    except (BotoCoreError, ClientError) as exc:
        raise StoreUnavailable(f"an attachment could not be stored in S3: {exc}") from exc


def get(key: str, settings: Settings | None = None) -> bytes:
    """One object's bytes; BlobMissing when it is gone, StoreUnavailable when S3 fails."""
    settings = settings or get_settings()
    try:
        response = _s3(settings).get_object(Bucket=_bucket(settings), Key=key)
        body: bytes = response["Body"].read()
        return body
    except ClientError as exc:
        code = str((exc.response.get("Error") or {}).get("Code", ""))
        if code in ("NoSuchKey", "404", "NotFound"):
            raise BlobMissing(f"attachment {key.rsplit('/', 1)[-1][:12]} is not in the bucket") from exc
        raise StoreUnavailable(f"an attachment could not be read from S3: {exc}") from exc
    except BotoCoreError as exc:
        raise StoreUnavailable(f"an attachment could not be read from S3: {exc}") from exc


def presign(key: str, settings: Settings | None = None) -> str | None:
    """A time-limited GET URL for the object (signed locally: no request is made), or None without a
    bucket or credentials."""
    settings = settings or get_settings()
    if not settings.blob_bucket:
        return None
    try:
        url: str = _s3(settings).generate_presigned_url(
            "get_object",
            Params={"Bucket": settings.blob_bucket, "Key": key},
            ExpiresIn=settings.blob_url_seconds,
        )
    except (BotoCoreError, ClientError) as exc:
        # No credentials to sign with: the read still answers, without the URL.
        logger.warning("attachment URL not signed", error=str(exc))
        return None
    return url


def delete_conversation(owner: str, conversation_id: str, settings: Settings | None = None) -> int:
    """Delete every object of one conversation (the retention purge); returns how many. Idempotent."""
    return _delete_prefix(conversation_prefix(owner, conversation_id), settings or get_settings())


def _delete_prefix(prefix: str, settings: Settings) -> int:
    if not settings.blob_bucket:
        return 0
    client, bucket = _s3(settings), settings.blob_bucket
    deleted = 0
    try:
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": DELETE_BATCH}
        )
        for page in pages:
            keys = [{"Key": item["Key"]} for item in page.get("Contents") or []]
            if not keys:
                continue
            answer = client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            errors = answer.get("Errors") or []
            if errors:
                raise StoreUnavailable(f"{len(errors)} objects could not be deleted: {errors[0]}")
            deleted += len(keys)
    except (BotoCoreError, ClientError) as exc:
        raise StoreUnavailable(f"objects could not be deleted from S3: {exc}") from exc
    return deleted


def world_prefix(owner: str, world_id: str) -> str:
    """DLG-6: where a world's export and import files live (the owner hashed, as for conversations)."""
    owner_digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]
    return f"w/{owner_digest}/{world_id}/"


def presign_put(key: str, seconds: int, settings: Settings | None = None) -> str:
    """DLG-6: a time-limited PUT URL for a client's upload (signed locally); StoreUnavailable without a
    bucket or credentials."""
    settings = settings or get_settings()
    try:
        url: str = _s3(settings).generate_presigned_url(
            "put_object", Params={"Bucket": _bucket(settings), "Key": key}, ExpiresIn=seconds
        )
    except (BotoCoreError, ClientError) as exc:
        raise StoreUnavailable(f"an upload URL could not be signed: {exc}") from exc
    return url


def size(key: str, settings: Settings | None = None) -> int | None:
    """DLG-6: the object's size in bytes (HeadObject), None when there is no such object."""
    settings = settings or get_settings()
    try:
        answer = _s3(settings).head_object(Bucket=_bucket(settings), Key=key)
    except ClientError as exc:
        code = str((exc.response.get("Error") or {}).get("Code", ""))
        if code in ("NoSuchKey", "404", "NotFound"):
            return None
        raise StoreUnavailable(f"S3 failed: {exc}") from exc
    except BotoCoreError as exc:
        raise StoreUnavailable(f"S3 failed: {exc}") from exc
    return int(answer["ContentLength"])


def open_object(key: str, settings: Settings | None = None) -> Any:
    """DLG-6: the object's body as a stream (read it in pieces; nothing is held whole)."""
    settings = settings or get_settings()
    try:
        return _s3(settings).get_object(Bucket=_bucket(settings), Key=key)["Body"]
    except (BotoCoreError, ClientError) as exc:
        raise StoreUnavailable(f"an import file could not be read from S3: {exc}") from exc


def delete_world(owner: str, world_id: str, settings: Settings | None = None) -> int:
    """DLG-4/6: delete a purged world's export and import files."""
    return _delete_prefix(world_prefix(owner, world_id), settings or get_settings())


def owner_prefixes(owner: str) -> tuple[str, ...]:
    """PRV-1: every prefix that holds objects of one owner: conversations' parts, worlds' files, and the
    user's own exports and uploads."""
    owner_digest = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:32]
    return (f"c/{owner_digest}/", f"w/{owner_digest}/", f"u/{owner_digest}/")


def user_prefix(owner: str) -> str:
    """PRV-2/3: where a user's data exports and import uploads live."""
    return owner_prefixes(owner)[2]


def delete_owner(owner: str, settings: Settings | None = None) -> int:
    """PRV-1: delete every object of one owner (every prefix of `owner_prefixes`); returns how many."""
    settings = settings or get_settings()
    return sum(_delete_prefix(prefix, settings) for prefix in owner_prefixes(owner))
