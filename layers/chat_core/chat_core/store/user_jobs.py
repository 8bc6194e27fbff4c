"""PRV-1..3: a user's erasure, export and import jobs: their items, and the queue they run from.

| item                         | pk                 | sk             |
|------------------------------|--------------------|----------------|
| erasure (then its receipt)   | USERJOB#<o>        | ERASURE        |
| export job                   | USERJOB#<o>        | EXPORT#<id>    |
| import job                   | USERJOB#<o>        | IMPORT#<id>    |

The partition starts `USERJOB#`, not `USER#<o>#`, so an erasure's sweep of the owner's partitions never
meets its own job item; the erasure deletes the export and import jobs itself and keeps the receipt.
"""

from __future__ import annotations

import json
from typing import Any, Final

import botocore.session
from pynamodb.attributes import JSONAttribute, UnicodeAttribute
from pynamodb.exceptions import DoesNotExist, PutError, PynamoDBException

from chat_core.errors import Conflict, StoreUnavailable
from chat_core.runtime import for_settings
from chat_core.settings import Settings, get_settings
from chat_core.store.base import TableItem, bind, store_error
from chat_core.store.keys import escape_owner

#: The runtime's SQS client (`enqueue`).
SQS_CLIENT: Final = "store.user_jobs.sqs"
ERASURE_SK: Final = "ERASURE"


def jobs_pk(owner: str) -> str:
    return f"USERJOB#{escape_owner(owner)}"


class UserJobItem(TableItem, discriminator="user_job"):
    """One job of a user's data (its state as one JSON map: status, phase, cursor, counts, ...)."""

    kind = UnicodeAttribute()
    state = JSONAttribute()


def get_job(owner: str, sk: str) -> dict[str, Any] | None:
    """One GetItem (strongly consistent): the job's state, or None."""
    bind()
    try:
        item = UserJobItem.get(jobs_pk(owner), sk, consistent_read=True)
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while reading a job; retry later") from exc
    state: dict[str, Any] = dict(item.state)
    return state


def put_job(owner: str, sk: str, kind: str, state: dict[str, Any], *, expected: str | None = None) -> None:
    """Write a job's state whole. `expected`: the `updated_at` it must still have (None: it must be new),
    so two requests racing to start the same job make one job."""
    bind()
    item = UserJobItem(jobs_pk(owner), sk, kind=kind, state=state)
    condition: Any = UserJobItem.pk.does_not_exist()
    if expected is not None:
        condition = UserJobItem.state["updated_at"] == expected
    try:
        item.save(condition=condition)
    except PutError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            raise Conflict("the job changed meanwhile; read it again", job=sk) from exc
        raise store_error(exc, "storage failed while writing a job; retry later") from exc


def save_job(owner: str, sk: str, kind: str, state: dict[str, Any]) -> None:
    """Write a job's state whole, unconditionally (the worker's progress: one worker runs a job)."""
    bind()
    try:
        UserJobItem(jobs_pk(owner), sk, kind=kind, state=state).save()
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while recording progress; retry later") from exc


def job_keys(owner: str) -> list[str]:
    """Sort keys of every job item of the owner (Query, keys only)."""
    bind()
    try:
        return [item.sk for item in UserJobItem.query(jobs_pk(owner), attributes_to_get=["pk", "sk"])]
    except PynamoDBException as exc:
        raise store_error(exc) from exc


def delete_job(owner: str, sk: str) -> None:
    bind()
    try:
        UserJobItem(jobs_pk(owner), sk).delete()
    except PynamoDBException as exc:
        raise store_error(exc) from exc


def enqueue(message: dict[str, Any], settings: Settings | None = None, delay: int = 0) -> None:
    """Send a job's run message to the user-data queue (USER_DATA_QUEUE_URL)."""
    settings = settings or get_settings()
    if not settings.user_data_queue_url:
        raise StoreUnavailable("no user-data queue is configured (USER_DATA_QUEUE_URL)")
    client: Any = for_settings(settings).resource(SQS_CLIENT, _new_sqs_client, close=_close_client)
    try:
        client.send_message(
            QueueUrl=settings.user_data_queue_url, MessageBody=json.dumps(message), DelaySeconds=delay
        )
    except Exception as exc:
        raise StoreUnavailable(f"the job could not be queued: {exc}") from exc


def _new_sqs_client(settings: Settings) -> Any:
    return botocore.session.get_session().create_client("sqs", region_name=settings.region)


def _close_client(client: Any) -> None:
    client.close()
