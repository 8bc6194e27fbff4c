"""The conversation summary item (`sk = ~SUMMARY`, seed 001) and the reads and writes of summarizing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.condition import Condition

from chat_core.engine.costs import Charge
from chat_core.errors import StoreUnavailable
from chat_core.store import base, ledger
from chat_core.store.base import TableItem
from chat_core.store.conversations import _Cancelled, _transact, request_token
from chat_core.store.items import Message, Summary
from chat_core.store.keys import META_SK, conversation_pk, message_sk
from chat_core.store.records import MessageRecord, SummaryRecord


class SummarySuperseded(Exception):
    """The stored summary moved on (another run wrote first), or the conversation is gone or deleted."""


def iter_messages(
    owner: str, conversation_id: str, first_seq: int, last_seq: int, *, page_size: int = 50
) -> Iterator[MessageRecord]:
    """Messages (records) with `first_seq <= seq <= last_seq`, oldest first, read lazily page by page.

    The caller stops iterating once its input budget is spent, so a long unsummarized span costs only
    the pages actually used.
    """
    if last_seq < first_seq:
        return
    base.bind()
    pk = conversation_pk(owner, conversation_id)
    start: dict[str, Any] | None = None
    while True:
        try:
            raw: dict[str, Any] = TableItem._get_connection().query(
                pk,
                range_key_condition=TableItem.sk.between(message_sk(first_seq), message_sk(last_seq)),
                scan_index_forward=True,
                consistent_read=True,
                limit=page_size,
                exclusive_start_key=start,
            )
        except (PynamoDBException, ClientError, BotoCoreError) as exc:
            raise base.store_error(exc) from exc
        for raw_item in raw.get("Items", []):
            item = TableItem.from_raw_data(raw_item)
            if isinstance(item, Message):
                yield MessageRecord.of(item)
        start = raw.get("LastEvaluatedKey")
        if not start:
            return


#: How long a summary's write with its charge (COST-3) retries a conflict on the owner's usage item,
#: which posts of the same owner update too.
_CHARGE_RETRY_S: Final = 5.0


def _put_with_charge(owner: str, summary: Summary, condition: Condition, charge: tuple[str, Charge]) -> None:
    """The summary and its charge to the owner's usage, in one TransactWrite."""
    writes = [("put", summary, condition, None), *ledger.charge_updates(owner, [charge])]
    deadline = time.monotonic() + _CHARGE_RETRY_S
    attempt = 0
    while True:
        try:
            _transact(writes, request_token(summary.pk, "summary", summary.to_seq, attempt))
            return
        except _Cancelled as exc:
            if exc.reasons[:1] == ["ConditionalCheckFailed"]:
                raise SummarySuperseded("the stored summary moved on") from exc
            if not base.wait_to_retry(attempt, deadline):
                raise StoreUnavailable(
                    "the summary's usage could not be recorded: the database is busy"
                ) from exc
        attempt += 1


def save_summary(
    record: SummaryRecord,
    *,
    previous_to_seq: int | None,
    owner: str,
    charge: tuple[str, Charge] | None = None,
) -> None:
    """Store `record` as `owner`'s summary if the stored one still covers exactly `previous_to_seq` (None
    = no summary yet).

    The summarizer runs in the background: it writes only its own item and never conditions on the
    conversation item, which every post updates, so it never fails a post's first transaction (its
    charge to the owner's usage item may meet a reply's transaction, which retries it). Whether the
    conversation is still live is checked after the write instead: if it was deleted or purged
    meanwhile, the summary just written is removed again (no summary is left behind in a purged
    partition: the purge deletes what it finds, and this check runs after our write landed).

    With `charge` ((day, charge) of the model call that wrote it, COST-3) the owner's usage item is
    added to in the same transaction: a summary is costed once, with its write.

    Raises SummarySuperseded when a replayed stream record or a concurrent run already moved the summary
    on (it never regresses to an older range), or when the conversation is gone or deleted.
    """
    base.bind()
    summary = record.to_item(owner)
    condition: Condition = (
        TableItem.pk.does_not_exist() if previous_to_seq is None else Summary.to_seq == previous_to_seq
    )
    try:
        if charge is not None:
            _put_with_charge(owner, summary, condition, charge)
        else:
            summary.save(condition=condition)
    except PynamoDBException as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            raise SummarySuperseded("the stored summary moved on") from exc
        raise base.store_error(exc) from exc
    except (ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    if _conversation_live(summary.pk):
        return
    try:
        summary.delete(condition=Summary.to_seq == summary.to_seq)
    except PynamoDBException as exc:
        if exc.cause_response_code != "ConditionalCheckFailedException":
            raise base.store_error(exc) from exc
    except (ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    raise SummarySuperseded("the conversation was deleted while it was summarized")


def _conversation_live(pk: str) -> bool:
    """Whether the conversation item of partition `pk` exists and is not deleted (one GetItem)."""
    try:
        item = TableItem.get(pk, META_SK, consistent_read=True)
    except TableItem.DoesNotExist:
        return False
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return getattr(item, "deleted_at", None) is None


def get_summary(owner: str, conversation_id: str) -> SummaryRecord | None:
    """GetItem of a conversation's summary (None when it has none)."""
    base.bind()
    pk, sk = Summary.key(owner, conversation_id)
    try:
        return SummaryRecord.of(Summary.get(pk, sk, consistent_read=True))
    except Summary.DoesNotExist:
        return None
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
