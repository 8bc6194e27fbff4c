"""Semantic recall's dense runs (MEM-49, MEM-51): the only module that reads or writes them.

Beside each message's int8 vector (`vector_items`), the conversation keeps every vector's sign bits
(`engine.recall.dense`) so a window can search them all:

- the mark `EMB#~` holds the codes not sealed yet (fewer than dense.SEAL), the list of sealed runs
  (id, level, count) and the vectors' dimensions;
- `EMB#R<id>` a sealed run, immutable: written once, deleted only when merged into a larger one.

A window reads the mark with the lexical index's tail in one BatchGetItem, and the runs not cached with
the lexical segments in one more (`read_state`, `read_parts`): semantic recall adds no call. A warm
process keeps decoded runs (they never change) in a cache bounded in bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from threading import Lock
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.attributes import BinaryAttribute, NumberAttribute
from pynamodb.exceptions import PynamoDBException

from chat_core.engine.recall import Segment, dense
from chat_core.runtime import for_settings
from chat_core.settings import Settings
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.recall import index
from chat_core.store.recall.vector_items import MARK_SK, VECTOR_SK_PREFIX, RecallVectorMark

RUN_SK_PREFIX: Final = VECTOR_SK_PREFIX + "R"
#: Bytes of decoded runs a warm process keeps (a 10,000-message conversation's: about 0.5 MB).
CACHE_BYTES: Final = 16 * 1024 * 1024

Codes = list[tuple[int, int]]


class RecallDenseRun(TableItem, discriminator="recall_dense_run"):
    """`EMB#R<id>`: one sealed run (engine.recall.dense codec)."""

    level = NumberAttribute(default=0)
    codes_count = NumberAttribute(default=0)
    data = BinaryAttribute(legacy_encoding=False)


@dataclass(frozen=True)
class Runs:
    """A conversation's dense state as its mark holds it: dims, unsealed codes, sealed runs."""

    dims: int = 0
    pending: bytes | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, item: RecallVectorMark | None) -> Runs:
        if item is None:
            return cls()
        return cls(int(item.dims or 0), bytes(item.codes) if item.codes else None, list(item.runs or []))

    def pending_codes(self) -> Codes:
        return dense.decode(self.pending)[1] if self.pending else []


class _Cache:
    def __init__(self, _settings: Settings | None = None) -> None:
        self.items: OrderedDict[tuple[str, str], Codes] = OrderedDict()
        self.bytes = 0
        self.lock = Lock()

    def get(self, key: tuple[str, str]) -> Codes | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], codes: Codes) -> None:
        with self.lock:
            if key in self.items:
                return
            self.items[key] = codes
            self.bytes += len(codes) * 64  # a seq and a 384-bit int, as Python holds them (roughly)
            while self.bytes > CACHE_BYTES and self.items:
                _, old = self.items.popitem(last=False)
                self.bytes -= len(old) * 64


def _cache() -> _Cache:
    return for_settings(base.bind()).resource("store.recall.dense.cache", _Cache)


def read_state(pk: str) -> tuple[index.Tail, Runs]:
    """The lexical tail and the dense runs' mark, in ONE BatchGetItem (absent: empty)."""
    tail, runs = index.Tail(), Runs()
    try:
        for wire in base.batch_get_wire([(pk, index.TAIL_SK), (pk, MARK_SK)]):
            item = TableItem.from_raw_data(wire)
            if isinstance(item, index.RecallTail):
                tail = index.Tail.of(item)
            elif isinstance(item, RecallVectorMark):
                runs = Runs.of(item)
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return tail, runs


def read_states(pks: Sequence[str]) -> dict[str, tuple[index.Tail, Runs]]:
    """Each conversation's lexical tail and dense mark (absent: empty), in one BatchGetItem per 50
    conversations: recall's scope "all" reads its 20 in the one call the lexical tails took (MEM-13)."""
    found: dict[str, tuple[index.Tail, Runs]] = {pk: (index.Tail(), Runs()) for pk in pks}
    keys = [key for pk in found for key in ((pk, index.TAIL_SK), (pk, MARK_SK))]
    try:
        for start in range(0, len(keys), base.BATCH_GET_KEYS):
            for wire in base.batch_get_wire(keys[start : start + base.BATCH_GET_KEYS]):
                item = TableItem.from_raw_data(wire)
                tail, runs = found[item.pk]
                if isinstance(item, index.RecallTail):
                    found[item.pk] = (index.Tail.of(item), runs)
                elif isinstance(item, RecallVectorMark):
                    found[item.pk] = (tail, Runs.of(item))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return found


def read_parts(
    pk: str, segment_ids: Sequence[str], run_ids: Sequence[str]
) -> tuple[dict[str, Segment], dict[str, Codes]]:
    """The lexical segments and dense runs not cached, together in one BatchGetItem per 100 keys."""
    segments, runs = read_many([(pk, sid) for sid in segment_ids], [(pk, rid) for rid in run_ids])
    return {sid: seg for (_, sid), seg in segments.items()}, {rid: codes for (_, rid), codes in runs.items()}


def read_many(
    segment_keys: Sequence[tuple[str, str]], run_keys: Sequence[tuple[str, str]]
) -> tuple[dict[tuple[str, str], Segment], dict[tuple[str, str], Codes]]:
    """(pk, id) -> the lexical segments and dense runs of any conversations, those not cached together in
    one BatchGetItem per 100 keys (absent ones, merged away meanwhile, are left out)."""
    segments: dict[tuple[str, str], Segment] = {}
    seg_cache, run_cache = index._cache(), _cache()
    runs: dict[tuple[str, str], Codes] = {}
    keys: list[tuple[str, str]] = []
    for key in segment_keys:
        hit = seg_cache.get(key)
        if hit is not None:
            segments[key] = hit
        else:
            keys.append((key[0], index.INDEX_SK_PREFIX + key[1]))
    for key in run_keys:
        codes = run_cache.get(key)
        if codes is not None:
            runs[key] = codes
        else:
            keys.append((key[0], RUN_SK_PREFIX + key[1]))
    try:
        for start in range(0, len(keys), base.BATCH_GET_KEYS):
            for wire in base.batch_get_wire(keys[start : start + base.BATCH_GET_KEYS]):
                item = TableItem.from_raw_data(wire)
                if isinstance(item, index.RecallSegment):
                    key = (item.pk, item.sk[len(index.INDEX_SK_PREFIX) :])
                    segments[key] = Segment(bytes(item.data))
                    seg_cache.put(key, segments[key])
                elif isinstance(item, RecallDenseRun):
                    key = (item.pk, item.sk[len(RUN_SK_PREFIX) :])
                    runs[key] = dense.decode(bytes(item.data))[1]
                    run_cache.put(key, runs[key])
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc
    return segments, runs


def write_runs(pk: str, sealed: Sequence[tuple[str, int, int, bytes]]) -> None:
    """New sealed runs (id, level, count, data), written before the mark that lists them."""
    try:
        for rid, level, count, data in sealed:
            RecallDenseRun(pk, RUN_SK_PREFIX + rid, level=level, codes_count=count, data=data).save()
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def delete_runs(pk: str, run_ids: Sequence[str]) -> None:
    """Runs merged away (after the mark no longer lists them)."""
    try:
        for rid in run_ids:
            RecallDenseRun(pk, RUN_SK_PREFIX + rid).delete()
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def clear_cache() -> None:
    """Forget the decoded runs (a cold process)."""
    cache = _cache()
    with cache.lock:
        cache.items.clear()
        cache.bytes = 0
