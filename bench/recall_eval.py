"""Evidence recall of a window: the recency window, a plain BM25 baseline, and the scoring.

Every method answers one question: given the conversation's turns (oldest first, each with its stored
token count) as the history, the question as the current message and a token budget for the whole
window, which turns does the window send? Evidence recall is the share of a question's evidence turns
among them, pooled over questions (a question with two evidence turns weighs twice).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MODEL = "gpt-4o"  # o200k_base, counted exactly in chat format as the service counts a window
K1 = 1.2
B = 0.75
_PUNCT = string.punctuation + "“”‘’…–—"


def bm25_terms(text: str) -> list[str]:
    """The baseline's terms: casefolded whitespace-separated words, punctuation stripped from their ends.
    No stemming, no stopwords, no segmentation of Chinese or Japanese."""
    return [t for t in (w.strip(_PUNCT) for w in text.casefold().split()) if t]


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75, idf log(1 + (N - df + 0.5) / (df + 0.5))) over a list of texts."""

    def __init__(self, texts: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(bm25_terms(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = (sum(self.lengths) / len(self.docs)) if self.docs else 0.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: str) -> list[float]:
        """One score per text, in the texts' order."""
        terms = [t for t in set(bm25_terms(query)) if t in self.idf]
        out = []
        for doc, length in zip(self.docs, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.average or 1))
            score = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            out.append(score)
        return out

    def ranking(self, query: str) -> list[int]:
        """Indexes of the texts that share a term with the query, best first (ties: newer first)."""
        scores = self.scores(query)
        return sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], -i))


def fill(ranked: Iterable[int], costs: Sequence[int], room: int) -> list[int]:
    """Take turns in rank order while they fit in `room` tokens, skipping ones that do not (greedy)."""
    kept = []
    for i in ranked:
        if costs[i] <= room:
            kept.append(i)
            room -= costs[i]
    return kept


@dataclass
class Tally:
    """Evidence turns found / asked, overall and per question category."""

    found: int = 0
    total: int = 0
    by_category: dict[str, list[int]] = field(default_factory=dict)
    questions: int = 0

    def add(self, category: str, evidence: Sequence[str], window: set[str]) -> None:
        hit = sum(1 for e in evidence if e in window)
        self.found += hit
        self.total += len(evidence)
        self.questions += 1
        cell = self.by_category.setdefault(category, [0, 0])
        cell[0] += hit
        cell[1] += len(evidence)

    @property
    def share(self) -> float:
        return self.found / self.total if self.total else 0.0


def share(cell: Sequence[int]) -> str:
    return f"{cell[0] / cell[1]:.2f}" if cell[1] else "n/a"


# A method: (turns with stored counts, question text, budget) -> message ids the window sends.
Method = Callable[[Sequence[Mapping[str, Any]], str, int], set[str]]


def policy(budget: int) -> Any:
    from chat_core.engine.window import WindowPolicy

    return WindowPolicy(name="bench", max_tokens=budget, method="exact", model=MODEL, honor_pinned=False)


def with_counts(turns: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The turns with the token count a post stores beside each message (TOK-5)."""
    from chat_core.engine import tokens

    return [
        {
            **t,
            "tokens": tokens.count_message_tokens({"role": t["role"], "content": t["content"]}, model=MODEL),
        }
        for t in turns
    ]


def recency(turns: Sequence[Mapping[str, Any]], question: str, budget: int) -> set[str]:
    """What the service sends today: `select_window`'s newest contiguous run (no summary, no pins)."""
    from chat_core.engine.window import select_window

    result = select_window(
        history=turns, policy=policy(budget), current={"role": "user", "content": question}
    )
    kept = result.stats.kept_history
    return {str(t["message_id"]) for t in turns[len(turns) - kept :]} if kept else set()


def room_for_history(turns: Sequence[Mapping[str, Any]], question: str, budget: int) -> int:
    """Tokens left for history once the current message and the reply priming are counted."""
    rules = policy(budget)
    return budget - rules.priming_tokens - rules.token_counter()({"role": "user", "content": question})


class Bm25Baseline:
    """Plain BM25 over every turn, the best-scoring ones filling the whole history room (no recency).
    The index of a conversation is built once (`for_turns`) and reused for its questions."""

    def __init__(self) -> None:
        self._index: dict[int, tuple[Sequence[Mapping[str, Any]], Bm25]] = {}

    def __call__(self, turns: Sequence[Mapping[str, Any]], question: str, budget: int) -> set[str]:
        cached = self._index.get(id(turns))
        if cached is None or cached[0] is not turns:
            cached = self._index[id(turns)] = (turns, Bm25([str(t["content"]) for t in turns]))
        index = cached[1]
        costs = [int(t["tokens"]) for t in turns]
        kept = fill(index.ranking(question), costs, room_for_history(turns, question, budget))
        return {str(turns[i]["message_id"]) for i in kept}


def engine_recall_available() -> bool:
    """Whether this tree has the recall index's pure API (`chat_core.engine.recall.MemoryIndex`)."""
    try:
        from chat_core.engine import recall
    except ImportError:
        return False
    return hasattr(recall, "MemoryIndex") and hasattr(recall, "document")


class OurRetriever:
    """Our retriever offline (`chat_core.engine.recall`: its analysis, segments and BM25), composed as
    the window option documents it: `share` of the budget goes to older messages the recency window left
    out, best first while they fit; the recency window keeps the rest. `share` 1.0: the whole history
    room to retrieved turns, like the BM25 baseline (a comparison of the two retrievers alone)."""

    def __init__(self, share: float, *, neighbours: bool = True) -> None:
        self.share = share
        self.neighbours = neighbours
        self._index: dict[int, tuple[Sequence[Mapping[str, Any]], Any]] = {}

    def index(self, turns: Sequence[Mapping[str, Any]]) -> Any:
        from chat_core.engine import recall

        cached = self._index.get(id(turns))
        if cached is None or cached[0] is not turns:
            docs = [
                recall.document(seq, seq - 1, str(t["role"]), str(t["content"]), int(t["tokens"]))
                for seq, t in enumerate(turns, start=1)
            ]
            cached = self._index[id(turns)] = (turns, recall.MemoryIndex.build(docs))
        return cached[1]

    def __call__(self, turns: Sequence[Mapping[str, Any]], question: str, budget: int) -> set[str]:
        from chat_core.engine.recall import packing

        index = self.index(turns)
        whole_room = room_for_history(turns, question, budget)
        room = whole_room if self.share >= 1.0 else int(budget * self.share)
        recent = set() if self.share >= 1.0 else recency(turns, question, budget - room)
        seqs = {seq for seq, t in enumerate(turns, start=1) if str(t["message_id"]) in recent}
        hits = index.search(question, limit=len(turns), keep=lambda doc: doc.seq not in seqs)
        costs = {seq: int(t["tokens"]) for seq, t in enumerate(turns, start=1)}
        n = len(turns)
        packed = packing.pack(
            {h.doc.seq: h.score for h in hits},
            room,
            unit=lambda seq: [seq],
            cost=costs.__getitem__,
            neighbours=(lambda seq: [s for s in (seq - 1, seq + 1) if 1 <= s <= n])
            if self.neighbours
            else (lambda seq: []),
            excluded=seqs.__contains__,
        )
        used = sum(u.tokens for u in packed.units)
        if self.share < 1.0 and used < room:  # what recall did not use goes back to recency (MEM-54)
            recent = recency(turns, question, budget - used)
        return recent | {str(turns[s - 1]["message_id"]) for s in packed.seqs}
