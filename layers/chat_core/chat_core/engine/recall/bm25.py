"""BM25 over a conversation's segments (MEM-3): the conversation's own N and average length.

Scores are Okapi BM25 with the Lucene idf, ln(1 + (N - df + 0.5) / (df + 0.5)), so a term in every
document still counts a little and no score is negative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from chat_core.engine.recall.segments import Doc, Segment

K1: Final = 1.2
B: Final = 0.75
#: Terms held by more than this share of the documents are skipped when the query has rarer ones.
COMMON_SHARE: Final = 0.25


@dataclass(frozen=True, slots=True)
class Hit:
    """A scored document: its segment's key, the document and its score."""

    source: str
    doc: Doc
    score: float


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def score(
    query: Sequence[int],
    segments: Mapping[str, Segment],
    *,
    n_docs: int,
    total_length: int,
    keep: Callable[[Doc], bool] | None = None,
    k1: float = K1,
    b: float = B,
) -> list[Hit]:
    """Every document of `segments` holding a query term (and passing `keep`), best first."""
    if not query or n_docs <= 0:
        return []
    average = max(1.0, total_length / n_docs)
    df = {term: sum(seg.df(term) for seg in segments.values()) for term in query}
    # A term most documents hold ranks almost nothing but costs the most to decode: left out while
    # a rarer term of the query is there to rank by.
    rare = [term for term in query if 0 < df[term] <= COMMON_SHARE * n_docs]
    used = rare or [term for term in query if df[term] > 0]
    weights = {term: idf(max(n_docs, df[term]), df[term]) for term in used}
    postings = {key: {term: seg.postings(term) for term in used} for key, seg in segments.items()}
    hits: list[Hit] = []
    for key, by_term in postings.items():
        totals: dict[int, float] = {}
        docs = segments[key].docs
        for term, found in by_term.items():
            weight = weights[term]
            for index, tf in found:
                length = docs[index].length
                norm = tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
                totals[index] = totals.get(index, 0.0) + weight * norm
        for index, value in totals.items():
            doc = docs[index]
            if keep is None or keep(doc):
                hits.append(Hit(key, doc, value))
    hits.sort(key=lambda h: (-h.score, -h.doc.seq))
    return hits


def term_weights(query: Sequence[int], segments: Mapping[str, Segment], n_docs: int) -> dict[int, float]:
    """The idf of each query term over `segments` (a term no document holds weighs as if one did)."""
    df = {term: sum(seg.df(term) for seg in segments.values()) for term in query}
    return {term: idf(max(n_docs, df[term], 1), max(1, df[term])) for term in query}


def score_texts(
    weights: Mapping[int, float],
    docs: Iterable[tuple[int, Mapping[int, int]]],
    *,
    n_docs: int,
    total_length: int,
) -> dict[int, float]:
    """BM25 of documents at hand (key -> term frequencies) under the index's term weights and average
    length: the messages a post read that the index does not hold yet."""
    average = max(1.0, total_length / max(1, n_docs))
    out: dict[int, float] = {}
    for key, tf in docs:
        length = sum(tf.values())
        total = 0.0
        for term, weight in weights.items():
            count = tf.get(term, 0)
            if count:
                total += weight * count * (K1 + 1) / (count + K1 * (1 - B + B * length / average))
        if total > 0:
            out[key] = total
    return out
