"""Semantic recall's items (MEM-49): the only module that reads or writes them.

In the conversation's partition, below every message and beside the recall index ("EMB#" < "IDX#" <
"LINK#" < "MSG#": the post's descending Query, `sk >= "MSG#"`, never meets them; a purge deletes them
with the partition):

- `EMB#<seq, 10 digits>` one message's vector, int8-quantised (`engine.recall.vectors`), with the model
  that made it: about 260 bytes at 256 dimensions, 1.5 KB at 1,536. Never text.
- `EMB#~` the mark: the highest seq embedded (the watermark), a version every write checks, and the
  dense runs' state (`dense_runs`: the vectors' sign bits not sealed yet, the sealed runs).

Vectors are written with BatchWriteItem (25 a call), then the mark with the embedding call's charge to
the owner's usage in one TransactWrite, so a call is charged once. A vector's message is read with it
in one BatchGetItem (`candidates`), so a deleted message drops out there, at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.attributes import BinaryAttribute, JSONAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PynamoDBException

from chat_core.engine.costs import Charge
from chat_core.store import base, ledger
from chat_core.store.base import TableItem
from chat_core.store.conversations import _Cancelled, _transact, request_token
from chat_core.store.keys import META_SK, conversation_pk, message_sk
from chat_core.store.records import MessageRecord

VECTOR_SK_PREFIX: Final = "EMB#"
VECTOR_TYPE: Final = "recall_vector"
MARK_SK: Final = "EMB#~"
#: BatchGetItem takes at most 100 keys: 50 candidates with their vectors and messages, more at hand.
BATCH_KEYS: Final = base.BATCH_GET_KEYS


class RecallVector(TableItem, discriminator=VECTOR_TYPE):
    """`EMB#<seq>`: see the module docstring."""

    model = UnicodeAttribute(null=True)
    data = BinaryAttribute(legacy_encoding=False)


class RecallVectorMark(TableItem, discriminator="recall_vector_mark"):
    """`EMB#~`: see the module docstring."""

    version = NumberAttribute(default=0)
    watermark = NumberAttribute(default=0)
    model = UnicodeAttribute(null=True)
    dims = NumberAttribute(null=True)
    codes = BinaryAttribute(null=True, legacy_encoding=False)
    runs = JSONAttribute(null=True)


def vector_sk(seq: int) -> str:
    return VECTOR_SK_PREFIX + message_sk(seq)[len("MSG#") :]


@dataclass(frozen=True)
class Mark:
    """A conversation's embedding state (absent: nothing embedded, version 0)."""

    version: int = 0
    watermark: int = 0
    #: the dense runs' state (store.recall.dense_runs): dims, unsealed codes, sealed runs
    dims: int = 0
    codes: bytes | None = None
    runs: tuple[dict[str, Any], ...] = ()


class MarkConflict(Exception):
    """Another writer moved the mark first: re-read and redo."""


def read_mark(owner: str, conversation_id: str) -> Mark:
    """One GetItem (strongly consistent)."""
    base.bind()
    try:
        item = RecallVectorMark.get(conversation_pk(owner, conversation_id), MARK_SK, consistent_read=True)
    except RecallVectorMark.DoesNotExist:
        return Mark()
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return Mark(
        int(item.version or 0),
        int(item.watermark or 0),
        int(item.dims or 0),
        bytes(item.codes) if item.codes else None,
        tuple(item.runs or ()),
    )


def save(
    owner: str,
    conversation_id: str,
    vectors: dict[int, bytes],
    *,
    model: str,
    mark: Mark,
    expected_version: int,
    charge: tuple[str, Charge] | None,
) -> None:
    """The vectors (BatchWriteItem), then the mark and the charge in one TransactWrite (only if the
    mark is still at `expected_version`: else MarkConflict; the vectors written are the same again)."""
    base.bind()
    pk = conversation_pk(owner, conversation_id)
    try:
        with RecallVector.batch_write() as batch:
            for seq, data in vectors.items():
                batch.save(RecallVector(pk, vector_sk(seq), model=model, data=data))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    item = RecallVectorMark(
        pk,
        MARK_SK,
        version=mark.version,
        watermark=mark.watermark,
        model=model,
        dims=mark.dims or None,
        codes=mark.codes,
        runs=list(mark.runs) or None,
    )
    condition = (
        RecallVectorMark.pk.does_not_exist()
        if expected_version == 0
        else RecallVectorMark.version == expected_version
    )
    writes = [("put", item, condition, None), *(ledger.charge_updates(owner, [charge]) if charge else [])]
    try:
        _transact(writes, request_token(pk, "vectors", mark.version))
    except _Cancelled as exc:
        if exc.reasons[:1] == ["ConditionalCheckFailed"]:
            raise MarkConflict(conversation_id) from exc
        raise base.store_error(exc) from exc


def conversation_live(owner: str, conversation_id: str) -> bool:
    """Whether the conversation item exists and is not deleted (one GetItem)."""
    base.bind()
    try:
        item = TableItem.get(conversation_pk(owner, conversation_id), META_SK, consistent_read=True)
    except TableItem.DoesNotExist:
        return False
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return getattr(item, "deleted_at", None) is None


def delete_vectors(owner: str, conversation_id: str, seqs: Sequence[int]) -> None:
    """Remove vectors (BatchWriteItem): those written for a conversation deleted meanwhile."""
    base.bind()
    pk = conversation_pk(owner, conversation_id)
    try:
        with RecallVector.batch_write() as batch:
            for seq in seqs:
                batch.delete(RecallVector(pk, vector_sk(seq)))
            batch.delete(RecallVectorMark(pk, MARK_SK))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def candidates_for(
    pk: str, seqs: Sequence[int], *, have: Set[int] = frozenset(), also: Sequence[int] = ()
) -> tuple[dict[int, MessageRecord], dict[int, tuple[str | None, bytes]]]:
    """The vectors at `seqs` (with the model that made each), the messages not in `have` and the
    messages at `also` (no vector), in ONE BatchGetItem (at most BATCH_KEYS keys: the rest are left
    out, as is anything absent)."""
    wanted = list(dict.fromkeys(seqs))
    keys = [(pk, vector_sk(s)) for s in wanted] + [(pk, message_sk(s)) for s in wanted if s not in have]
    keys += [(pk, message_sk(s)) for s in also if s not in have and s not in wanted]
    if not keys:
        return {}, {}
    messages: dict[int, MessageRecord] = {}
    vectors: dict[int, tuple[str | None, bytes]] = {}
    try:
        for wire in base.batch_get_wire(keys[:BATCH_KEYS]):
            record = MessageRecord.from_wire(wire)
            if record is not None:
                messages[record.seq] = record
                continue
            found = _vector_from_wire(wire)
            if found is not None:
                vectors[found[0]] = found[1:]
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return messages, vectors


def _vector_from_wire(wire: Mapping[str, Any]) -> tuple[int, str | None, bytes] | None:
    """(seq, model, data) of a vector item as BatchGetItem answers it, read straight from the wire (a
    model instance per candidate cost more than the rest of the read); None for any other item."""
    if (wire.get("type") or {}).get("S") != VECTOR_TYPE:
        return None
    model = (wire.get("model") or {}).get("S")
    return int(wire["sk"]["S"][len(VECTOR_SK_PREFIX) :]), model, bytes(wire["data"]["B"])


def charge_query(owner: str, charge: tuple[str, Charge]) -> None:
    """A query embedding's charge to the owner's usage of the day (one UpdateItem)."""
    base.bind()
    try:
        for _, item, _, actions in ledger.charge_updates(owner, [charge]):
            item.update(actions=actions or [])
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def messages_and_vectors(
    messages: Sequence[tuple[str, int]], vectors: Sequence[tuple[str, int]]
) -> tuple[list[MessageRecord], dict[tuple[str, int], tuple[str | None, bytes]]]:
    """The messages and the vectors (with the model that made each) at (pk, seq) keys of any of the
    owner's conversations, in ONE BatchGetItem (at most BATCH_KEYS keys: the rest are left out, as is
    anything absent): recall's scope "all" reads its candidates so (MEM-13)."""
    keys = [(pk, vector_sk(seq)) for pk, seq in vectors] + [(pk, message_sk(seq)) for pk, seq in messages]
    found: list[MessageRecord] = []
    stored: dict[tuple[str, int], tuple[str | None, bytes]] = {}
    try:
        for wire in base.batch_get_wire(keys[:BATCH_KEYS]) if keys else ():
            record = MessageRecord.from_wire(wire)
            if record is not None:
                found.append(record)
                continue
            item = TableItem.from_raw_data(wire)
            if isinstance(item, RecallVector):
                stored[(item.pk, int(item.sk[len(VECTOR_SK_PREFIX) :]))] = (item.model, bytes(item.data))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return found, stored
