"""Sealed segments of the recall index (MEM-2): a compact, immutable binary codec and the merge policy.

A segment is a run of documents (messages) with an inverted list per term:

    zlib( b"RS1" | varint docs | varint terms
          | docs: per doc varint seq delta, seq - parent_seq, flags, length, tokens
          | term hashes: `array("I")` little-endian, sorted | posting offsets: `array("I")`, terms + 1
          | document frequencies: `array("I")`, one per term
          | postings: per term, per doc holding it, varint doc-index delta and tf )

Decoding is lazy: the header and the term table are read at once, a term's postings only when a
query asks for it, the documents' seq/parent table only when a caller needs it. Merging follows a
size-tiered policy: when MERGE_FANOUT segments share a level they become one segment of the next level
(sizes 8, 32, 128, ...), so a conversation holds O(log n) segments.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

MAGIC: Final = b"RS1"
#: Documents a segment is sealed at; a level-k segment holds about SEAL_DOCS * MERGE_FANOUT**k.
SEAL_DOCS: Final = 8
MERGE_FANOUT: Final = 4
#: Segments of this level are never merged again (keeps every item far below DynamoDB's 400 KB).
TOP_LEVEL: Final = 4

# Document flags.
ROLE_USER: Final = 0
ROLE_ASSISTANT: Final = 1
ROLE_TOOL: Final = 2
ROLE_OTHER: Final = 3
ROLE_MASK: Final = 3
TOOL_CALL: Final = 4

_ROLES: Final = {"user": ROLE_USER, "assistant": ROLE_ASSISTANT, "tool": ROLE_TOOL}
_ROLE_NAMES: Final = {v: k for k, v in _ROLES.items()} | {ROLE_OTHER: "system"}


def role_flags(role: str, *, tool_call: bool = False) -> int:
    return _ROLES.get(role, ROLE_OTHER) | (TOOL_CALL if tool_call else 0)


def role_name(flags: int) -> str:
    return _ROLE_NAMES[flags & ROLE_MASK]


@dataclass(frozen=True, slots=True)
class Doc:
    """One indexed message: its seq, the seq it follows, flags, term count and stored token count."""

    seq: int
    parent_seq: int
    flags: int
    length: int
    tokens: int


@dataclass(frozen=True, slots=True)
class DocTerms:
    """A document with its term frequencies (term hash -> tf), as analysis made them."""

    doc: Doc
    tf: Mapping[int, int]


def put_varint(out: bytearray, value: int) -> None:
    """`value` (>= 0) appended as a LEB128 varint."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def get_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """(the varint at `pos`, the position after it)."""
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _le(values: array[int]) -> bytes:
    if sys.byteorder != "little":
        values = array("I", values)
        values.byteswap()
    return values.tobytes()


def encode(docs: Sequence[DocTerms]) -> bytes:
    """One segment of `docs` (in seq order), compressed."""
    ordered = sorted(docs, key=lambda d: d.doc.seq)
    postings: dict[int, list[tuple[int, int]]] = {}
    for index, entry in enumerate(ordered):
        for term, tf in entry.tf.items():
            postings.setdefault(term, []).append((index, tf))
    out = bytearray(MAGIC)
    put_varint(out, len(ordered))
    put_varint(out, len(postings))
    previous = 0
    for entry in ordered:
        doc = entry.doc
        put_varint(out, doc.seq - previous)
        put_varint(out, max(0, doc.seq - doc.parent_seq))
        put_varint(out, doc.flags)
        put_varint(out, doc.length)
        put_varint(out, doc.tokens)
        previous = doc.seq
    hashes = array("I", sorted(postings))
    blob = bytearray()
    offsets = array("I")
    for term in hashes:
        offsets.append(len(blob))
        last = 0
        for index, tf in postings[term]:
            put_varint(blob, index - last)
            put_varint(blob, tf)
            last = index
    offsets.append(len(blob))
    counts = array("I", (len(postings[term]) for term in hashes))
    out += _le(hashes)
    out += _le(offsets)
    out += _le(counts)
    out += blob
    return zlib.compress(bytes(out), 6)


class Segment:
    """A decoded segment: postings by term on demand."""

    __slots__ = (
        "_body",
        "_counts",
        "_docs",
        "_docs_at",
        "_hashes",
        "_offsets",
        "_postings_at",
        "count",
        "size",
    )

    def __init__(self, data: bytes) -> None:
        body = zlib.decompress(data)
        if body[:3] != MAGIC:
            raise ValueError("not a recall segment")
        self.size = len(data)
        self._body = body
        self.count, pos = get_varint(body, 3)
        terms, pos = get_varint(body, pos)
        self._docs_at = pos
        for _ in range(self.count * 5):
            _, pos = get_varint(body, pos)
        self._hashes = array("I")
        self._hashes.frombytes(body[pos : pos + 4 * terms])
        pos += 4 * terms
        self._offsets = array("I")
        self._offsets.frombytes(body[pos : pos + 4 * (terms + 1)])
        pos += 4 * (terms + 1)
        self._counts = array("I")
        self._counts.frombytes(body[pos : pos + 4 * terms])
        if sys.byteorder != "little":
            self._hashes.byteswap()
            self._offsets.byteswap()
            self._counts.byteswap()
        self._postings_at = pos + 4 * terms
        self._docs: list[Doc] | None = None

    @property
    def docs(self) -> list[Doc]:
        """The documents, in seq order (decoded on first use)."""
        if self._docs is None:
            body, pos, seq = self._body, self._docs_at, 0
            docs = []
            for _ in range(self.count):
                delta, pos = get_varint(body, pos)
                back, pos = get_varint(body, pos)
                flags, pos = get_varint(body, pos)
                length, pos = get_varint(body, pos)
                tokens, pos = get_varint(body, pos)
                seq += delta
                docs.append(Doc(seq, seq - back, flags, length, tokens))
            self._docs = docs
        return self._docs

    def df(self, term: int) -> int:
        """How many documents hold `term` (no postings decoded)."""
        at = bisect_left(self._hashes, term)
        return self._counts[at] if at < len(self._hashes) and self._hashes[at] == term else 0

    def postings(self, term: int) -> list[tuple[int, int]]:
        """(doc index, tf) of the documents holding `term`."""
        at = bisect_left(self._hashes, term)
        if at >= len(self._hashes) or self._hashes[at] != term:
            return []
        body = self._body
        pos = self._postings_at + self._offsets[at]
        end = self._postings_at + self._offsets[at + 1]
        out = []
        index = 0
        while pos < end:
            delta, pos = get_varint(body, pos)
            tf, pos = get_varint(body, pos)
            index += delta
            out.append((index, tf))
        return out

    def terms(self) -> list[int]:
        return list(self._hashes)

    def doc_terms(self) -> list[DocTerms]:
        """Every document with its term frequencies (what a merge re-encodes)."""
        tfs: list[dict[int, int]] = [{} for _ in range(self.count)]
        for term in self._hashes:
            for index, tf in self.postings(term):
                tfs[index][term] = tf
        return [DocTerms(doc, tf) for doc, tf in zip(self.docs, tfs, strict=True)]


def merge(segments: Iterable[Segment]) -> bytes:
    """One segment holding every document of `segments`."""
    docs: list[DocTerms] = []
    for segment in segments:
        docs.extend(segment.doc_terms())
    return encode(docs)


def merge_plan(
    levels: Sequence[int], *, fanout: int = MERGE_FANOUT, top_level: int = TOP_LEVEL
) -> list[int] | None:
    """Indexes of `fanout` segments (or runs) sharing the lowest full level below `top_level`, else None."""
    by_level: dict[int, list[int]] = {}
    for index, level in enumerate(levels):
        by_level.setdefault(level, []).append(index)
    for level in sorted(by_level):
        if level < top_level and len(by_level[level]) >= fanout:
            return by_level[level][:fanout]
    return None
