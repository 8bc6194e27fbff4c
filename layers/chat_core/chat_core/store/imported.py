"""PRV-3: write an imported conversation's items as they are given (BatchWriteItem puts, keyed by the job).

An import hands over items in their stored form (plain attributes, as an export reads them, or items a
ChatGPT conversation became). Every write is a put of a key the job decided before writing anything, so a
run delivered again writes the same items again: never a second copy. The conversation item goes last
(`publish`): until it exists no route reads or lists the conversation (PRV-3, all or nothing).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException

from chat_core.errors import StoreUnavailable
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.keys import META_SK, conversation_pk, listing_sk, owner_pk

BATCH: Final = 25  # BatchWriteItem's limit
_ATTEMPTS: Final = 8
_serializer = TypeSerializer()


def _wire(value: Any) -> Any:
    """Plain JSON (floats included) as DynamoDB takes it: numbers as Decimal."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_wire(v) for v in value]
    return value


def wire_item(pk: str, sk: str, kind: str, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """One item in DynamoDB's wire form: its keys, its type (the table's discriminator) and attributes."""
    whole = {**{k: v for k, v in attributes.items() if v is not None}, "pk": pk, "sk": sk, "type": kind}
    return {name: _serializer.serialize(_wire(value)) for name, value in whole.items()}


def conversation_item(owner: str, conversation_id: str, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The conversation item, with the listing index's keys (it is listed once written)."""
    updated = str(attributes["updated_at"])
    listed = {
        **attributes,
        "conversation_id": conversation_id,
        "owner": owner,
        "gsi1pk": owner_pk(owner),
        "gsi1sk": listing_sk(updated, conversation_id),
    }
    return wire_item(conversation_pk(owner, conversation_id), META_SK, "conversation", listed)


def put_items(items: Sequence[dict[str, Any]], *, sleep: Callable[[float], None] = time.sleep) -> int:
    """BatchWriteItem puts, 25 at a time, unprocessed items retried; returns how many calls it took."""
    base.bind()
    connection: Any = TableItem._get_connection()
    calls = 0
    for offset in range(0, len(items), BATCH):
        pending = list(items[offset : offset + BATCH])
        for attempt in range(_ATTEMPTS):
            calls += 1
            try:
                answer: dict[str, Any] = connection.batch_write_item(put_items=pending)
            except (PynamoDBException, ClientError, BotoCoreError) as exc:
                error = base.store_error(exc)
                if not isinstance(error, StoreUnavailable) or attempt == _ATTEMPTS - 1:
                    raise error from exc
            else:
                unprocessed = (answer.get("UnprocessedItems") or {}).get(connection.table_name) or []
                pending = [request["PutRequest"]["Item"] for request in unprocessed]
                if not pending:
                    break
            sleep(random.uniform(0, min(2.0, 0.05 * 2**attempt)))  # noqa: S311
        else:
            raise StoreUnavailable(
                f"{len(pending)} imported item(s) still unprocessed; retry", cause="unprocessed"
            )
    return calls
