"""Dense candidates for semantic recall (MEM-51): a conversation's vectors as sign bits, searched whole.

Each message's vector is kept here as one bit per dimension (its sign: 48 bytes at 384 dimensions, 32
times smaller than float32), in immutable runs written like the lexical index's segments, so a window
reads every vector of a 10,000-message conversation in about 0.5 MB, cached by a warm process. The
Hamming distance to the current message's bits ranks them all; the best are rescored with their int8
vectors (`vectors`), read with their messages.

    zlib( b"VB1" | varint dims | varint count | varint seq deltas | count * ceil(dims / 8) bytes )
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from chat_core.engine.recall import segments

Codes = list[tuple[int, int]]

MAGIC: Final = b"VB1"
#: Codes a run is sealed at; runs merge MERGE_FANOUT at a time up to TOP_LEVEL (128 * 4**3 = 8,192 codes,
#: about 400 KB at 384 dimensions: under DynamoDB's item size).
SEAL: Final = 128
MERGE_FANOUT: Final = 4
TOP_LEVEL: Final = 2


def bits(vector: Sequence[float]) -> int:
    """The sign bits of `vector` as one integer (bit i set: dimension i is positive)."""
    out = 0
    for i, x in enumerate(vector):
        if x > 0:
            out |= 1 << i
    return out


def encode(dims: int, codes: Iterable[tuple[int, int]]) -> bytes:
    """A run of (seq, bits) codes of `dims` dimensions (any order; a seq given twice keeps the last)."""
    ordered = sorted(dict(codes).items())
    width = (dims + 7) // 8
    out = bytearray(MAGIC)
    segments.put_varint(out, dims)
    segments.put_varint(out, len(ordered))
    previous = 0
    for seq, _ in ordered:
        segments.put_varint(out, seq - previous)
        previous = seq
    for _, code in ordered:
        out += code.to_bytes(width, "little")
    return zlib.compress(bytes(out), 1)


def decode(data: bytes) -> tuple[int, list[tuple[int, int]]]:
    """(dims, [(seq, bits), ...]) of a run (ValueError on anything else)."""
    body = zlib.decompress(data)
    if body[:3] != MAGIC:
        raise ValueError("not a dense run")
    dims, pos = segments.get_varint(body, 3)
    count, pos = segments.get_varint(body, pos)
    seqs = []
    seq = 0
    for _ in range(count):
        delta, pos = segments.get_varint(body, pos)
        seq += delta
        seqs.append(seq)
    width = (dims + 7) // 8
    codes = [
        (s, int.from_bytes(body[pos + i * width : pos + (i + 1) * width], "little"))
        for i, s in enumerate(seqs)
    ]
    return dims, codes


def nearest(
    query: int, runs: Iterable[Sequence[tuple[int, int]]], limit: int, keep: Callable[[int], bool]
) -> list[tuple[int, int]]:
    """The `limit` (seq, bits) closest to `query` by Hamming distance among the runs' codes that `keep`
    allows, closest first (ties: the newer first). Every distance is computed, but `keep` is asked only
    of the codes within the distance of the `limit`-th closest (twice as far down each time too few of
    them are kept): at 10,000 codes this halves the time of a pass that asks it of each."""
    flat = [pair for run in runs for pair in run]
    if not flat or limit <= 0:
        return []
    distances = [(query ^ code).bit_count() for _, code in flat]
    ordered = sorted(distances)
    want = limit
    while True:
        cut = ordered[min(len(ordered), want) - 1]
        chosen = [
            (d, seq, code) for (seq, code), d in zip(flat, distances, strict=True) if d <= cut and keep(seq)
        ]
        if len(chosen) >= limit or want >= len(ordered):
            break
        want *= 2
    chosen.sort(key=lambda c: (c[0], -c[1]))
    return [(seq, code) for _, seq, code in chosen[:limit]]


def rescore(query: Sequence[float], codes: Sequence[tuple[int, int]], limit: int) -> list[int]:
    """The `limit` seqs of `codes` whose sign vectors have the largest dot product with the float `query`
    (asymmetric: only the messages are reduced to bits), best first."""
    return SignScorer(query).best(codes, limit)


class SignScorer:
    """Ranks sign codes by their agreement with a float query: the sum of the query's values at the
    code's set bits (the dot product with the code's +1/-1 vector, up to a constant), one table lookup
    per byte of the code (48 at 384 dimensions) from a table of the 256 partial sums of each 8 values."""

    def __init__(self, query: Sequence[float]) -> None:
        tables = []
        for start in range(0, len(query), 8):
            table = [0.0]
            for value in query[start : start + 8]:
                table += [partial + value for partial in table]
            tables.append(table + [0.0] * (256 - len(table)))
        self._tables = tables
        self._width = len(tables)
        # A longer code (another model's) is read up to the query's size.
        self._mask = (1 << (8 * self._width)) - 1

    def __call__(self, code: int) -> float:
        return sum(map(list.__getitem__, self._tables, (code & self._mask).to_bytes(self._width, "little")))

    def best(self, codes: Sequence[tuple[int, int]], limit: int) -> list[int]:
        """The `limit` seqs of `codes` that agree most with the query, best first (`rescore`)."""
        scored = [(self(code), seq) for seq, code in codes]
        return [seq for _, seq in heapq.nlargest(limit, scored)]


def merge_plan(levels: Sequence[int]) -> list[int] | None:
    """Indexes of MERGE_FANOUT runs sharing the lowest full level below TOP_LEVEL, else None (the
    lexical segments' size-tiered policy, with the runs' own top level)."""
    return segments.merge_plan(levels, fanout=MERGE_FANOUT, top_level=TOP_LEVEL)
