"""Semantic recall's pure part (MEM-48..52): int8 vectors, cosine, and the fusion of two rankings.

A message's embedding is kept as one int8 per dimension with one float32 scale (the largest magnitude
over 127), about a quarter of float32's bytes; the cosine of two quantised vectors stays within about
0.01 of the float one for the vector sizes embedding models answer (256 to 3,072 dimensions).

    V1 | float32 scale (little-endian) | int8 * dims

Hybrid scoring fuses the BM25 ranking of the candidates with their cosine ranking. Reciprocal rank
fusion (`rrf`, k = RRF_K) was chosen over a normalised weighted sum by measuring both on the tuning set
of tests/unit/test_recall_vectors.py (see docs/semantic-recall.md): RRF needs no score
scale, and BM25's scores have none across queries.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Mapping, Sequence
from operator import mul
from typing import Final, Literal

MAGIC: Final = b"V1"
_HEADER: Final = struct.Struct("<2sf")
#: Reciprocal rank fusion's constant (Cormack et al.: 60; smaller lets the top ranks weigh more).
RRF_K: Final = 10
#: The weighted sum's share of the cosine (the rest is BM25 over its best score).
COSINE_WEIGHT: Final = 0.5

Fusion = Literal["rrf", "weighted"]


def normalise(vector: Sequence[float]) -> list[float]:
    """`vector` at unit length (a zero vector stays zero)."""
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        return [0.0] * len(vector)
    return [x / norm for x in vector]


def quantise(vector: Sequence[float]) -> bytes:
    """The int8 encoding of `vector` (unit length first: cosine is then a dot product)."""
    unit = normalise(vector)
    peak = max((abs(x) for x in unit), default=0.0)
    scale = peak / 127.0 if peak > 0 else 1.0
    packed = array("b", (max(-127, min(127, round(x / scale))) for x in unit))
    return _HEADER.pack(MAGIC, scale) + packed.tobytes()


def dequantise(data: bytes) -> list[float]:
    """The vector an encoding holds (ValueError on anything else)."""
    if len(data) < _HEADER.size:
        raise ValueError("not a quantised vector: too short")
    magic, scale = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("not a quantised vector: bad magic")
    values = array("b")
    values.frombytes(data[_HEADER.size :])
    return [v * scale for v in values]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors (0 when either is zero or their sizes differ)."""
    if len(a) != len(b) or not a:
        return 0.0
    dot: float = sum(map(mul, a, b))
    na = math.sqrt(sum(map(mul, a, a)))
    nb = math.sqrt(sum(map(mul, b, b)))
    if na == 0 or nb == 0:
        return 0.0
    return dot / (na * nb)


def ranks(scores: Mapping[int, float]) -> dict[int, int]:
    """Each key's rank (1 = best; ties broken by the newer key first, as recall breaks them)."""
    ordered = sorted(scores, key=lambda k: (-scores[k], -k))
    return {key: place for place, key in enumerate(ordered, start=1)}


def fuse(
    lexical: Mapping[int, float],
    semantic: Mapping[int, float],
    *,
    method: Fusion = "rrf",
    k: int = RRF_K,
    weight: float = COSINE_WEIGHT,
) -> dict[int, float]:
    """One score per candidate from its BM25 score and its cosine (a candidate missing from one side
    just lacks that side's share). `rrf`: sum of 1 / (k + rank); `weighted`: (1 - weight) * bm25 / best
    bm25 + weight * max(0, cosine)."""
    keys = set(lexical) | set(semantic)
    if method == "rrf":
        by_lexical, by_semantic = ranks(lexical), ranks(semantic)
        out: dict[int, float] = {}
        for key in keys:
            total = 0.0
            if key in by_lexical:
                total += 1.0 / (k + by_lexical[key])
            if key in by_semantic:
                total += 1.0 / (k + by_semantic[key])
            out[key] = total
        return out
    best = max(lexical.values(), default=0.0) or 1.0
    return {
        key: (1 - weight) * lexical.get(key, 0.0) / best + weight * max(0.0, semantic.get(key, 0.0))
        for key in keys
    }
