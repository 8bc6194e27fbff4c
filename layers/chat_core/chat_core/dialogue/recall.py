"""NPC recall (MEM-45..47): older lines a participant perceived that bear on the line being answered.

A prompt's history is the newest `history_limit` lines. With `recall`, the factory also reads the newest
`scan` lines the reader perceived (its witness partition, DLG-3: one Query and BatchGetItems of 100, every
dialogue of the world it was in; without a reader, the dialogue's own older lines), leaves out the lines the
prompt already holds, ranks the rest against the current line (else the newest line of the history) with
the recall index's BM25 (chat_core.engine.recall: the same multilingual terms as a conversation's recall),
and sends the best of them that fit `max_tokens` as one labelled block, oldest first. A line the reader did
not perceive is never in the pool, so it can never be recalled.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from chat_core.dialogue.worlds import live
from chat_core.engine import recall as index
from chat_core.engine.window import WindowPolicy
from chat_core.errors import InvalidInput
from chat_core.store import dialogues as store
from chat_core.store.dialogues import EntryRecord

#: Lines read to recall from (one Query, BatchGetItems of 100); the most a request may ask for.
DEFAULT_SCAN: Final = 500
MAX_SCAN: Final = 1000
#: `"recall": true`: this share of the prompt's token budget, or these tokens when it has none.
DEFAULT_SHARE: Final = 0.25
DEFAULT_TOKENS: Final = 500
MAX_TOKENS: Final = 100_000

_LABELS: Final = {
    "en": ("[Recalled]", "Older lines {who} remembers that bear on this moment, oldest first:"),
    "zh": ("[回忆]", "{who}记得的与此刻相关的早前对话，按时间先后排列："),
}


@dataclass(frozen=True)
class RecallSpec:
    """What `recall` asked for: a token cap (None: the default share) and how many lines to read."""

    max_tokens: int | None = None
    scan: int = DEFAULT_SCAN

    def budget(self, prompt_budget: int | None) -> int:
        """The tokens the block may take: the cap (within the prompt's budget), else the default share."""
        if self.max_tokens is not None:
            return self.max_tokens if prompt_budget is None else min(self.max_tokens, prompt_budget)
        return DEFAULT_TOKENS if prompt_budget is None else int(prompt_budget * DEFAULT_SHARE)


def _bounded(value: object, name: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InvalidInput(f"recall.{name} must be an integer from 1 to {high}", field=f"recall.{name}")
    return value


def parse_recall(value: object) -> RecallSpec | None:
    """`true`, a token cap, or `{"max_tokens": N, "scan": M}`; None and false ask for no recall."""
    if value is None or value is False or isinstance(value, RecallSpec):
        return value or None
    if value is True:
        return RecallSpec()
    if isinstance(value, int):
        return RecallSpec(max_tokens=_bounded(value, "max_tokens", MAX_TOKENS))
    if not isinstance(value, Mapping):
        raise InvalidInput("recall must be true, a token count or {max_tokens, scan}", field="recall")
    unknown = sorted(set(value) - {"max_tokens", "scan"})
    if unknown:
        raise InvalidInput(f"unknown field(s) in recall: {', '.join(unknown)}", field="recall")
    cap = value.get("max_tokens")
    return RecallSpec(
        max_tokens=None if cap is None else _bounded(cap, "max_tokens", MAX_TOKENS),
        scan=_bounded(value.get("scan", DEFAULT_SCAN), "scan", MAX_SCAN),
    )


def read_pool(
    owner: str, world_id: str, dialogue_id: str, reader: str | None, scan: int
) -> list[EntryRecord]:
    """The lines recall may choose from: what `reader` perceived, else the dialogue's own lines (both on
    the loaded timeline, DLG-5)."""
    hidden = live(owner, world_id).hidden()
    if reader is not None:
        return store.witnessed(owner, world_id, reader, scan, hidden)
    return store.newest_entries(owner, world_id, dialogue_id, scan, None, hidden)


@dataclass(frozen=True)
class Recalled:
    """The block to send (None: nothing relevant fits), its exact cost, and what the stats report."""

    message: dict[str, Any] | None
    tokens: int
    stats: dict[str, Any]


def recall_block(
    spec: RecallSpec,
    query: str,
    pool: Sequence[EntryRecord],
    present: Collection[tuple[str, int]],
    *,
    policy: WindowPolicy,
    role: str,
    who: str,
    language: str,
    line_text: Callable[[EntryRecord], str],
) -> Recalled:
    """Rank the pool's lines not `present` against `query` and keep the best that fit the spec's budget."""
    candidates = [e for e in pool if (e.dialogue_id, e.seq) not in present and e.content.strip()]
    budget = spec.budget(policy.token_budget)
    stats: dict[str, Any] = {"max_tokens": budget, "scanned": len(pool), "candidates": len(candidates)}
    hits = _rank(query, candidates, line_text)
    title, intro = _LABELS.get(language, _LABELS["en"])
    header = f"{title}\n{intro.format(who=who)}"
    count = policy.with_changes(reuse_stored_tokens=False).token_counter()
    content_count = policy.with_changes(
        chat_format=False, reuse_stored_tokens=False, counter=None
    ).token_counter()
    used = count({"role": role, "content": header})
    kept: list[tuple[EntryRecord, float]] = []
    for entry, score in hits:
        cost = content_count({"content": "\n" + line_text(entry)})
        if used + cost <= budget:
            kept.append((entry, score))
            used += cost
    if not kept:
        return Recalled(None, 0, {**stats, "kept": 0, "tokens": 0, "entries": []})
    kept.sort(key=lambda hit: hit[0].sort_key())
    message = {"role": role, "content": "\n".join([header, *(line_text(e) for e, _ in kept)])}
    tokens = count(message)
    while tokens > budget and kept:  # per-line counts are close, the whole message's count is exact
        kept.remove(min(kept, key=lambda hit: hit[1]))
        message = {"role": role, "content": "\n".join([header, *(line_text(e) for e, _ in kept)])}
        tokens = count(message)
    if not kept:
        return Recalled(None, 0, {**stats, "kept": 0, "tokens": 0, "entries": []})
    entries = [{"dialogue_id": e.dialogue_id, "seq": e.seq, "score": round(s, 4)} for e, s in kept]
    return Recalled(message, tokens, {**stats, "kept": len(kept), "tokens": tokens, "entries": entries})


def _rank(
    query: str, candidates: Sequence[EntryRecord], line_text: Callable[[EntryRecord], str]
) -> list[tuple[EntryRecord, float]]:
    """BM25 of each candidate's line (speaker included) against `query`, best first; no match, no line."""
    if not candidates or not query.strip():
        return []
    docs = [index.document(i + 1, i, e.role, line_text(e), 0) for i, e in enumerate(candidates)]
    found = index.MemoryIndex.build(docs).search(query, limit=len(docs))
    return [(candidates[hit.doc.seq - 1], hit.score) for hit in found]
