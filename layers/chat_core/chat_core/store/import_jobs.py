"""DLG-6: world import jobs: their items (in the world's directory partition) and the queue they run from.

| item       | pk                     | sk            |
|------------|------------------------|---------------|
| import job | USER#<o>#WORLD#<w>#DIR | JOB#<job_id>  |

Progress is written by the one worker running a job; a redelivered queue message may run it twice at
once, which is harmless: every write of an import is idempotent, and progress only moves forward.
"""

from __future__ import annotations

import json
from typing import Any, Final

import botocore.session
from pynamodb.exceptions import DoesNotExist, PynamoDBException

from chat_core.errors import StoreUnavailable
from chat_core.runtime import for_settings
from chat_core.settings import Settings, get_settings
from chat_core.store.base import TableItem, bind, store_error
from chat_core.store.dialogue_items import ImportJobItem, WorldDialogueItem

#: The runtime's SQS client (`enqueue`).
SQS_CLIENT: Final = "store.import_jobs.sqs"


def new_job(owner: str, world_id: str, job: dict[str, Any]) -> None:
    """Write a new job item (`job` holds job_id, mode, status, object_key, created_at)."""
    bind()
    item = ImportJobItem(
        WorldDialogueItem.pk_for(owner, world_id),
        ImportJobItem.sk_for(job["job_id"]),
        updated_at=job["created_at"],
        **job,
    )
    try:
        item.save(condition=ImportJobItem.pk.does_not_exist())
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while creating an import job; retry later") from exc


def get_job(owner: str, world_id: str, job_id: str) -> dict[str, Any] | None:
    """One GetItem (strongly consistent): the job as a dict, or None."""
    bind()
    try:
        item = ImportJobItem.get(
            WorldDialogueItem.pk_for(owner, world_id), ImportJobItem.sk_for(job_id), consistent_read=True
        )
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while reading an import job; retry later") from exc
    own = ImportJobItem.get_attributes().keys() - TableItem.get_attributes().keys()
    job = {name: getattr(item, name) for name in sorted(own)}
    job["errors"] = list(item.errors or [])
    return job


def update_job(owner: str, world_id: str, job_id: str, **fields: Any) -> None:
    """Set fields of a job (its progress, status)."""
    bind()
    item = ImportJobItem(WorldDialogueItem.pk_for(owner, world_id), ImportJobItem.sk_for(job_id))
    attributes = ImportJobItem.get_attributes()
    actions: list[Any] = [
        attributes[name].remove() if value is None else attributes[name].set(value)
        for name, value in fields.items()
    ]
    try:
        item.update(actions=actions, condition=ImportJobItem.pk.exists(), add_version_condition=False)
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while recording import progress; retry later") from exc


def enqueue(message: dict[str, Any], settings: Settings | None = None) -> None:
    """Send a job's run message to the import queue (IMPORT_QUEUE_URL)."""
    settings = settings or get_settings()
    if not settings.import_queue_url:
        raise StoreUnavailable("no import queue is configured (IMPORT_QUEUE_URL)")
    client: Any = for_settings(settings).resource(SQS_CLIENT, new_sqs_client, close=_close_client)
    try:
        client.send_message(QueueUrl=settings.import_queue_url, MessageBody=json.dumps(message))
    except Exception as exc:
        raise StoreUnavailable(f"the import could not be queued: {exc}") from exc


def new_sqs_client(settings: Settings) -> Any:
    """An SQS client in the settings' region."""
    return botocore.session.get_session().create_client("sqs", region_name=settings.region)


def _close_client(client: Any) -> None:
    client.close()
