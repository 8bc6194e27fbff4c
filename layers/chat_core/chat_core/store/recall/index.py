"""The recall index's items (MEM-4): the only module that reads or writes them.

In the conversation's partition, below every message ("IDX#" < "LINK#" < "MSG#", so the post's
descending Query, `sk >= "MSG#"`, never meets them; a purge deletes them with the partition):

- `IDX#~` the tail: the unsealed documents (an encoded segment of fewer than SEAL_DOCS), the manifest
  of sealed segments (id, level, docs, seq range, bytes), the totals (documents, term count), the
  watermark (highest seq indexed), the holes below it (seqs whose slot was still empty when the
  messages above were indexed, with when that was seen) and a version every write checks.
- `IDX#<id>` sealed segments, immutable: written once, deleted only when merged into a larger one.

Items hold term hashes, counts and seqs only, never text. A warm process keeps decoded segments (they
never change) in a cache bounded in bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.attributes import BinaryAttribute, JSONAttribute, NumberAttribute
from pynamodb.exceptions import PutError, PynamoDBException

from chat_core.engine.recall import Segment
from chat_core.runtime import for_settings
from chat_core.settings import Settings
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.items import Conversation, Message
from chat_core.store.keys import META_SK, conversation_pk, message_sk, new_id
from chat_core.store.records import MessageRecord

INDEX_SK_PREFIX: Final = "IDX#"
TAIL_SK: Final = "IDX#~"
#: Bytes of decoded segments a warm process keeps.
CACHE_BYTES: Final = 32 * 1024 * 1024
#: BatchGetItem takes at most 100 keys.
BATCH_KEYS: Final = base.BATCH_GET_KEYS


class RecallTail(TableItem, discriminator="recall_tail"):
    """`IDX#~`: see the module docstring."""

    version = NumberAttribute(default=0)
    watermark = NumberAttribute(default=0)
    n_docs = NumberAttribute(default=0)
    total_length = NumberAttribute(default=0)
    segments = JSONAttribute(null=True)
    pending = BinaryAttribute(null=True, legacy_encoding=False)
    #: [[seq, epoch seconds first seen empty], ...]: slots below the watermark not indexed yet.
    holes = JSONAttribute(null=True)


class RecallSegment(TableItem, discriminator="recall_segment"):
    """`IDX#<id>`: one sealed segment (engine.recall.segments codec)."""

    level = NumberAttribute(default=0)
    docs = NumberAttribute(default=0)
    data = BinaryAttribute(legacy_encoding=False)


@dataclass(frozen=True)
class SegmentRef:
    """A sealed segment as the tail lists it."""

    id: str
    level: int
    docs: int
    lo: int
    hi: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "level": self.level,
            "docs": self.docs,
            "lo": self.lo,
            "hi": self.hi,
            "bytes": self.bytes,
        }

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> SegmentRef:
        return cls(
            str(raw["id"]),
            int(raw["level"]),
            int(raw["docs"]),
            int(raw["lo"]),
            int(raw["hi"]),
            int(raw["bytes"]),
        )


@dataclass(frozen=True)
class Tail:
    """A conversation's index state (an absent tail is the empty index at version 0)."""

    version: int = 0
    watermark: int = 0
    n_docs: int = 0
    total_length: int = 0
    segments: list[SegmentRef] = field(default_factory=list)
    pending: bytes | None = None
    #: (seq, epoch seconds) of each slot below the watermark that was empty when the messages above it
    #: were indexed: its message is indexed when it comes (chat.recall.upkeep).
    holes: tuple[tuple[int, int], ...] = ()

    def holds(self, seq: int) -> bool:
        """Whether the message at `seq` was read into the index (indexed, or left out as not indexable)."""
        return seq <= self.watermark and all(seq != hole for hole, _ in self.holes)

    @classmethod
    def of(cls, item: RecallTail) -> Tail:
        return cls(
            version=int(item.version or 0),
            watermark=int(item.watermark or 0),
            n_docs=int(item.n_docs or 0),
            total_length=int(item.total_length or 0),
            segments=[SegmentRef.of(s) for s in item.segments or []],
            pending=bytes(item.pending) if item.pending else None,
            holes=tuple((int(seq), int(seen)) for seq, seen in item.holes or []),
        )


class TailConflict(Exception):
    """Another writer moved the tail first: re-read and redo."""


class _Cache:
    """Decoded segments by (pk, id), least recently used out past CACHE_BYTES."""

    def __init__(self, _settings: Settings | None = None) -> None:
        self._items: OrderedDict[tuple[str, str], Segment] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def get(self, key: tuple[str, str]) -> Segment | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], segment: Segment) -> None:
        with self._lock:
            if key in self._items:
                return
            self._items[key] = segment
            self._bytes += segment.size * 4
            while self._bytes > CACHE_BYTES and self._items:
                _, old = self._items.popitem(last=False)
                self._bytes -= old.size * 4


def _cache() -> _Cache:
    return for_settings(base.bind()).resource("store.recall.index.cache", _Cache)


def _fail(exc: Exception) -> Exception:
    return base.store_error(exc)


def read_tail(owner: str, conversation_id: str) -> Tail:
    """One GetItem (strongly consistent)."""
    base.bind()
    try:
        return Tail.of(RecallTail.get(conversation_pk(owner, conversation_id), TAIL_SK, consistent_read=True))
    except RecallTail.DoesNotExist:
        return Tail()
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc


def read_tails(pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Tail]:
    """(owner, conversation_id) -> tail for each pair, by BatchGetItem (absent ones: the empty tail)."""
    base.bind()
    keys = [(conversation_pk(o, c), TAIL_SK) for o, c in pairs]
    found: dict[str, Tail] = {}
    try:
        for item in RecallTail.batch_get(keys, consistent_read=True):
            found[item.pk] = Tail.of(item)
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc
    return {pair: found.get(conversation_pk(*pair), Tail()) for pair in pairs}


def read_segments(wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Segment]:
    """(pk, segment id) -> decoded segment: from the process's cache, the rest in one BatchGetItem per 100.
    A segment merged away meanwhile is absent from the answer."""
    cache = _cache()
    out: dict[tuple[str, str], Segment] = {}
    missing: list[tuple[str, str]] = []
    for key in wanted:
        hit = cache.get(key)
        if hit is not None:
            out[key] = hit
        else:
            missing.append(key)
    if not missing:
        return out
    base.bind()
    try:
        for start in range(0, len(missing), BATCH_KEYS):
            chunk = [(pk, INDEX_SK_PREFIX + sid) for pk, sid in missing[start : start + BATCH_KEYS]]
            for item in RecallSegment.batch_get(chunk, consistent_read=True):
                key = (item.pk, item.sk[len(INDEX_SK_PREFIX) :])
                segment = Segment(bytes(item.data))
                cache.put(key, segment)
                out[key] = segment
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc
    return out


def messages_above(owner: str, conversation_id: str, watermark: int) -> tuple[list[MessageRecord], bool]:
    """The messages after `watermark`, oldest first, and whether the conversation is live and kept (not
    made for a `store: false` response): one Query (paginated) from the first message above the
    watermark up to the conversation item (`~META` sorts after every message)."""
    base.bind()
    pk = conversation_pk(owner, conversation_id)
    out: list[MessageRecord] = []
    live = False
    try:
        for item in TableItem.query(
            pk, TableItem.sk.between(message_sk(watermark + 1), META_SK), consistent_read=True
        ):
            if isinstance(item, Message):
                out.append(MessageRecord.of(item))
            elif isinstance(item, Conversation):
                live = not item.is_deleted and not item.unkept
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc
    return out, live


def mark_unkept(owner: str, conversation_id: str) -> None:
    """RSP-9: the conversation is a `store: false` response's (Conversation.unkept), so `messages_above`
    finds it not to be indexed; one UpdateItem, conditional on the conversation being there."""
    base.bind()
    pk, sk = Conversation.key(owner, conversation_id)
    try:
        Conversation(pk, sk).update(actions=[Conversation.unkept.set(True)], condition=TableItem.pk.exists())
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc


def get_messages(keys: Sequence[tuple[str, int]]) -> list[MessageRecord]:
    """The messages at (pk, seq), by BatchGetItem (one call for up to 100); absent ones are left out.
    Records straight from the answer (MessageRecord.from_wire), as read_recent does."""
    out: list[MessageRecord] = []
    try:
        for start in range(0, len(keys), BATCH_KEYS):
            chunk = [(pk, message_sk(seq)) for pk, seq in keys[start : start + BATCH_KEYS]]
            out.extend(r for r in map(MessageRecord.from_wire, base.batch_get_wire(chunk)) if r is not None)
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc
    return out


def new_segment_id() -> str:
    return new_id()


def save(
    owner: str,
    conversation_id: str,
    tail: Tail,
    *,
    expected_version: int,
    sealed: Sequence[tuple[SegmentRef, bytes]],
    merged_away: Sequence[str],
) -> None:
    """New segments first, then the tail (only if still at `expected_version`: else TailConflict), then
    the segments merged away. A crash between the steps leaves unreferenced segments at worst, never a
    tail pointing at nothing."""
    base.bind()
    pk = conversation_pk(owner, conversation_id)
    try:
        for ref, data in sealed:
            RecallSegment(pk, INDEX_SK_PREFIX + ref.id, level=ref.level, docs=ref.docs, data=data).save()
        item = RecallTail(
            pk,
            TAIL_SK,
            version=tail.version,
            watermark=tail.watermark,
            n_docs=tail.n_docs,
            total_length=tail.total_length,
            segments=[s.to_json() for s in tail.segments],
            pending=tail.pending,
            holes=[[seq, seen] for seq, seen in tail.holes] or None,
        )
        condition = (
            RecallTail.pk.does_not_exist()
            if expected_version == 0
            else RecallTail.version == expected_version
        )
        try:
            item.save(condition=condition)
        except PutError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                raise TailConflict(conversation_id) from exc
            raise
        for sid in merged_away:
            RecallSegment(pk, INDEX_SK_PREFIX + sid).delete()
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise _fail(exc) from exc


def clear_cache() -> None:
    """Forget the decoded segments (a cold process)."""
    cache = _cache()
    with cache._lock:
        cache._items.clear()
        cache._bytes = 0
