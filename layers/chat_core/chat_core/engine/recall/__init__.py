"""The recall index's pure part (issue 32): analysis, segment codec and merge policy, BM25.

Nothing here does I/O; `store.recall.index` keeps the segments in the table, `chat.recall` use them.
An offline caller (the recall bench) can run the same retrieval over any list of messages:

    from chat_core.engine import recall

    docs = [recall.document(seq, parent_seq, role, text, tokens) for ...]   # analyse each message
    index = recall.MemoryIndex.build(docs)                                  # sealed, merged segments
    hits = index.search("what did I say about Lisbon?", limit=20)           # BM25, best first

`analyse(text)` gives a document's term hashes and counts, `query_terms(text)` a query's; `encode` and
`Segment` are the codec; `merge_plan` the size-tiered policy; `score` BM25 over decoded segments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from chat_core.engine.recall.analysis import analyse, query_terms, terms
from chat_core.engine.recall.bm25 import Hit, score, score_texts, term_weights
from chat_core.engine.recall.segments import (
    SEAL_DOCS,
    Doc,
    DocTerms,
    Segment,
    encode,
    merge,
    merge_plan,
    role_flags,
    role_name,
)

__all__ = [
    "SEAL_DOCS",
    "Doc",
    "DocTerms",
    "Hit",
    "MemoryIndex",
    "Segment",
    "analyse",
    "document",
    "encode",
    "merge",
    "merge_plan",
    "query_terms",
    "role_flags",
    "role_name",
    "score",
    "score_texts",
    "term_weights",
    "terms",
]


def document(
    seq: int, parent_seq: int, role: str, text: str, tokens: int, *, tool_call: bool = False
) -> DocTerms:
    """A message as the index holds it: its links, flags, term count, token count and term hashes."""
    tf = analyse(text)
    return DocTerms(Doc(seq, parent_seq, role_flags(role, tool_call=tool_call), sum(tf.values()), tokens), tf)


@dataclass
class MemoryIndex:
    """Segments in memory, built and merged by the same rules the table's upkeep follows."""

    segments: dict[str, Segment] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    n_docs: int = 0
    total_length: int = 0

    @classmethod
    def build(cls, docs: Sequence[DocTerms]) -> MemoryIndex:
        index = cls()
        for start in range(0, len(docs), SEAL_DOCS):
            index.add(docs[start : start + SEAL_DOCS])
        return index

    def add(self, docs: Sequence[DocTerms]) -> None:
        """Seal `docs` as one segment, then merge while a level is full."""
        key = f"{len(self.segments):06d}-{docs[0].doc.seq}"
        self.segments[key] = Segment(encode(docs))
        self.levels[key] = 0
        self.n_docs += len(docs)
        self.total_length += sum(d.doc.length for d in docs)
        while True:
            keys = list(self.segments)
            plan = merge_plan([self.levels[k] for k in keys])
            if plan is None:
                return
            chosen = [keys[i] for i in plan]
            merged = Segment(merge([self.segments[k] for k in chosen]))
            level = self.levels[chosen[0]] + 1
            for k in chosen:
                del self.segments[k], self.levels[k]
            new_key = f"{chosen[0]}+"
            self.segments[new_key] = merged
            self.levels[new_key] = level

    def search(self, text: str, *, limit: int = 10, keep: Callable[[Doc], bool] | None = None) -> list[Hit]:
        hits = score(
            query_terms(text), self.segments, n_docs=self.n_docs, total_length=self.total_length, keep=keep
        )
        return hits[:limit]
