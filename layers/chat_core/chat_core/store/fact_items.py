"""Long-term facts in the table (MEM-30..37): one partition per owner, `USER#<owner>#FACTS`.

Items: `FACT#<id>` (one fact: text, kind, sources, state) and `MARK#<conversation id>` (the highest
message seq of that conversation already shown to the extraction call: each turn is extracted once).
An extraction's facts, its mark and its charge to the owner's usage are written in one TransactWrite
conditioned on the mark it started from, so a replayed stream record neither stores nor charges twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PynamoDBException
from pynamodb.transactions import TransactGet

from chat_core.engine.costs import Charge
from chat_core.engine.fact_ops import ACTIVE, Fact, Source
from chat_core.errors import StoreUnavailable
from chat_core.store import base, ledger
from chat_core.store.base import TableItem
from chat_core.store.conversations import _Cancelled, _transact, request_token
from chat_core.store.items import Conversation, Message
from chat_core.store.keys import META_SK, conversation_pk, message_sk, owner_pk

FACT_SK_PREFIX: Final = "FACT#"
MARK_SK_PREFIX: Final = "MARK#"
#: Keys per TransactGetItems (DynamoDB's limit).
_BATCH_KEYS: Final = 100
_CHARGE_RETRY_S: Final = 5.0
#: Facts deleted in an extraction's transaction at most (it holds 100 items: the mark, at most 20
#: operations' facts twice over, the charge).
MAX_FORGOTTEN: Final = 50


def facts_pk(owner: str) -> str:
    """The partition of one owner's facts and extraction marks."""
    return f"{owner_pk(owner)}#FACTS"


class FactItem(TableItem, discriminator="fact"):
    """One fact (`sk = FACT#<id>`)."""

    owner = UnicodeAttribute()
    fact_id = UnicodeAttribute()
    text = UnicodeAttribute()
    kind = UnicodeAttribute(default="fact")
    #: [{"conversation_id", "message_id", "seq"}]: the messages it was taken from.
    sources = JSONAttribute()
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    status = UnicodeAttribute(default=ACTIVE)
    superseded_by = UnicodeAttribute(null=True)
    supersedes = UnicodeAttribute(null=True)
    model = UnicodeAttribute(null=True)

    @classmethod
    def of(cls, owner: str, fact: Fact) -> FactItem:
        return cls(
            facts_pk(owner),
            FACT_SK_PREFIX + fact.fact_id,
            owner=owner,
            fact_id=fact.fact_id,
            text=fact.text,
            kind=fact.kind,
            sources=[s.to_dict() for s in fact.sources],
            created_at=fact.created_at,
            updated_at=fact.updated_at,
            status=fact.status,
            superseded_by=fact.superseded_by,
            supersedes=fact.supersedes,
            model=fact.model,
        )

    def record(self) -> Fact:
        return Fact(
            fact_id=self.fact_id,
            text=self.text,
            kind=self.kind,
            sources=tuple(Source.of(s) for s in (self.sources or [])),
            created_at=self.created_at,
            updated_at=self.updated_at,
            status=self.status,
            superseded_by=self.superseded_by,
            supersedes=self.supersedes,
            model=self.model,
        )


class FactMark(TableItem, discriminator="fact_mark"):
    """How far one conversation was extracted (`sk = MARK#<conversation id>`)."""

    conversation_id = UnicodeAttribute()
    to_seq = NumberAttribute()
    updated_at = UnicodeAttribute()


class MarkMoved(Exception):
    """Another run extracted the same messages first (a replay or a concurrent batch)."""


def _error(exc: Exception) -> Exception:
    return base.store_error(exc)


def read_all(owner: str) -> tuple[list[Fact], dict[str, int]]:
    """Every fact of the owner (oldest first) and the extraction marks ({conversation id: seq}): one
    Query of the partition (paged when large)."""
    base.bind()
    facts: list[Fact] = []
    marks: dict[str, int] = {}
    try:
        for item in TableItem.query(facts_pk(owner), consistent_read=True):
            if isinstance(item, FactItem):
                facts.append(item.record())
            elif isinstance(item, FactMark):
                marks[item.conversation_id] = int(item.to_seq)
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _error(exc) from exc
    return facts, marks


@dataclass(frozen=True)
class Page:
    facts: list[Fact]
    last_key: dict[str, str] | None


def read_page(owner: str, limit: int, start: dict[str, str] | None, newest_first: bool = True) -> Page:
    """Up to `limit` facts in id order (ids sort by time), from after `start`."""
    base.bind()
    try:
        result = TableItem.query(
            facts_pk(owner),
            TableItem.sk.startswith(FACT_SK_PREFIX),
            consistent_read=True,
            scan_index_forward=not newest_first,
            limit=limit,
            last_evaluated_key={k: {"S": v} for k, v in start.items()} if start else None,
        )
        facts = [item.record() for item in result if isinstance(item, FactItem)]
        last = result.last_evaluated_key
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _error(exc) from exc
    return Page(facts, {k: str(v.get("S")) for k, v in last.items()} if last else None)


def fact_key(owner: str, fact_id: str) -> dict[str, str]:
    """A fact's key (where a page that ends with it goes on)."""
    return {"pk": facts_pk(owner), "sk": FACT_SK_PREFIX + fact_id}


def get_fact(owner: str, fact_id: str) -> Fact | None:
    base.bind()
    try:
        item = FactItem.get(facts_pk(owner), FACT_SK_PREFIX + fact_id, consistent_read=True)
    except FactItem.DoesNotExist:
        return None
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _error(exc) from exc
    return item.record() if isinstance(item, FactItem) else None


def delete_facts(owner: str, fact_ids: Iterable[str]) -> None:
    """Delete facts for good (BatchWriteItem)."""
    ids = list(dict.fromkeys(fact_ids))
    if not ids:
        return
    base.bind()
    try:
        with FactItem.batch_write() as batch:
            for fact_id in ids:
                batch.delete(FactItem(facts_pk(owner), FACT_SK_PREFIX + fact_id))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _error(exc) from exc


def live_messages(owner: str, sources: Iterable[Source]) -> set[tuple[str, int]]:
    """Which of `sources` still stand: the message exists and is not deleted, in a conversation that
    exists and is not deleted. TransactGetItems of the messages and their conversations (100 keys a
    call; IAM counts it as GetItem, which every function that builds a window already has)."""
    wanted = {(s.conversation_id, s.seq) for s in sources}
    if not wanted:
        return set()
    settings = base.bind()
    keys = [(conversation_pk(owner, c), META_SK) for c in sorted({c for c, _ in wanted})]
    keys += [(conversation_pk(owner, c), message_sk(seq)) for c, seq in sorted(wanted)]
    found: dict[tuple[str, str], TableItem] = {}
    try:
        for chunk in range(0, len(keys), _BATCH_KEYS):
            part = keys[chunk : chunk + _BATCH_KEYS]
            with TransactGet(connection=base.connection(settings)) as transaction:
                futures = [transaction.get(TableItem, pk, sk) for pk, sk in part]
            for future in futures:
                try:
                    item = future.get()
                except TableItem.DoesNotExist:
                    continue
                found[(item.pk, item.sk)] = item
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _error(exc) from exc
    live: set[tuple[str, int]] = set()
    for conversation_id, seq in wanted:
        pk = conversation_pk(owner, conversation_id)
        conversation = found.get((pk, META_SK))
        message = found.get((pk, message_sk(seq)))
        if not isinstance(conversation, Conversation) or conversation.deleted_at is not None:
            continue
        if isinstance(message, Message) and message.deleted_at is None:
            live.add((conversation_id, seq))
    return live


def save_extraction(
    owner: str,
    conversation_id: str,
    *,
    created: Sequence[Fact],
    changed: Sequence[Fact],
    previous_mark: int | None,
    to_seq: int,
    now: str,
    charge: tuple[str, Charge] | None,
    forgotten: Sequence[str] = (),
) -> None:
    """One TransactWrite: the new and changed facts, the conversation's mark moved to `to_seq` (on
    condition that it is still `previous_mark`; None = no mark yet) and the call's charge to the owner's
    usage (COST-3); `forgotten` facts (every source deleted) are deleted with them (up to
    MAX_FORGOTTEN; the rest on the next run). Raises MarkMoved when another run got there first."""
    base.bind()
    pk = facts_pk(owner)
    mark = FactMark(
        pk, MARK_SK_PREFIX + conversation_id, conversation_id=conversation_id, to_seq=to_seq, updated_at=now
    )
    condition = FactMark.pk.does_not_exist() if previous_mark is None else FactMark.to_seq == previous_mark
    writes: list[Any] = [("put", mark, condition, None)]
    writes += [("put", FactItem.of(owner, fact), None, None) for fact in (*created, *changed)]
    writes += [("delete", FactItem(pk, FACT_SK_PREFIX + i), None, None) for i in forgotten[:MAX_FORGOTTEN]]
    if charge is not None:
        writes += ledger.charge_updates(owner, [charge])
    first = created[0].fact_id if created else ""
    deadline = time.monotonic() + _CHARGE_RETRY_S
    attempt = 0
    while True:
        try:
            token = request_token(pk, conversation_id, previous_mark, to_seq, first, attempt)
            _transact(writes, token)
            return
        except _Cancelled as exc:
            if exc.reasons[:1] == ["ConditionalCheckFailed"]:
                raise MarkMoved("the conversation's facts were extracted meanwhile") from exc
            if not base.wait_to_retry(attempt, deadline):
                raise StoreUnavailable("the facts could not be stored: the database is busy") from exc
        attempt += 1
