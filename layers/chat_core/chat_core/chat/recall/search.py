"""GET /memory/search (MEM-11): the caller's own conversations searched by their recall indexes.

Without `conversation_id`, the caller's SEARCH_CONVERSATIONS most recently updated live conversations
(one Query of the listing index, which holds no deleted conversation); with it, that conversation
(GetItem: 404 when deleted, unknown or another caller's). Then one BatchGetItem of their index tails,
one of the segments not cached, each conversation scored by BM25 with its own statistics, and one
BatchGetItem of the best messages: a deleted message drops out there. Results: the message's ids, seq,
role, a snippet around the first matched term, the score and when it was written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final

from chat_core.chat.paths import live_conversation
from chat_core.chat.recall.upkeep import indexable, message_text
from chat_core.chat.rules import check_id
from chat_core.engine import recall
from chat_core.engine.recall import Hit, Segment
from chat_core.engine.recall.analysis import term_hash, terms
from chat_core.errors import InvalidInput
from chat_core.observability import MetricUnit, metrics
from chat_core.store import conversations as conversation_store
from chat_core.store.keys import conversation_pk
from chat_core.store.recall import index as store

MAX_QUERY_CHARS: Final = 1000
MAX_LIMIT: Final = 50
DEFAULT_LIMIT: Final = 10
#: The newest conversations a search (and recall's scope "all") reads.
SEARCH_CONVERSATIONS: Final = 20
#: Characters of a snippet.
SNIPPET_CHARS: Final = 200
_WORDS: Final = re.compile(r"\w+")


def snippet(text: str, query: Sequence[int]) -> str:
    """About SNIPPET_CHARS of `text` around the first word holding a query term."""
    wanted = set(query)
    start = 0
    for match in _WORDS.finditer(text):
        word = match.group(0)
        if any(term_hash(t) in wanted for t in terms(word)):
            start = match.start()
            break
    begin = max(0, start - SNIPPET_CHARS // 4)
    piece = text[begin : begin + SNIPPET_CHARS]
    return ("…" if begin > 0 else "") + piece + ("…" if begin + SNIPPET_CHARS < len(text) else "")


def search_hits(
    owner: str, conversation_ids: Sequence[str], query: Sequence[int], *, limit: int
) -> list[tuple[str, Hit]]:
    """The best `limit` index hits over the conversations (each scored with its own N and average)."""
    pairs = [(owner, cid) for cid in conversation_ids]
    tails = store.read_tails(pairs) if pairs else {}
    wanted = [
        (conversation_pk(owner, cid), ref.id) for (_, cid), tail in tails.items() for ref in tail.segments
    ]
    loaded = store.read_segments(wanted) if wanted else {}
    return rank_hits(owner, {cid: tail for (_, cid), tail in tails.items()}, loaded, query, limit=limit)


def rank_hits(
    owner: str,
    tails: Mapping[str, store.Tail],
    loaded: Mapping[tuple[str, str], Segment],
    query: Sequence[int],
    *,
    limit: int,
) -> list[tuple[str, Hit]]:
    """The best `limit` hits of the conversations whose tails and segments ((pk, id) -> segment) are read."""
    found: list[tuple[str, Hit]] = []
    for cid, tail in tails.items():
        if tail.n_docs == 0:
            continue
        pk = conversation_pk(owner, cid)
        segments: dict[str, Segment] = {
            ref.id: loaded[(pk, ref.id)] for ref in tail.segments if (pk, ref.id) in loaded
        }
        if tail.pending:
            segments["~"] = Segment(tail.pending)
        hits = recall.score(query, segments, n_docs=tail.n_docs, total_length=tail.total_length)
        found.extend((cid, h) for h in hits[:limit])
    found.sort(key=lambda pair: -pair[1].score)
    return found[:limit]


def search_memory(
    owner: str, q: str, *, limit: int = DEFAULT_LIMIT, conversation_id: str | None = None
) -> dict[str, Any]:
    """The answer of GET /memory/search."""
    text = unicodedata.normalize("NFKC", q)
    if not text.strip() or len(q) > MAX_QUERY_CHARS:
        raise InvalidInput(f"q must be 1-{MAX_QUERY_CHARS} characters, not blank", field="q")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be 1-{MAX_LIMIT}", field="limit")
    query = recall.query_terms(text)
    if conversation_id is not None:
        check_id(conversation_id)
        live_conversation(owner, conversation_id)
        targets = [conversation_id]
    else:
        page = conversation_store.page_conversations(owner, SEARCH_CONVERSATIONS, None)
        targets = [c.conversation_id for c in page.items if not c.is_deleted]
    metrics.add_metric(name="MemorySearches", unit=MetricUnit.Count, value=1)
    if not query or not targets:
        return {"results": []}
    # Twice the hits asked for, for the ones found deleted when fetched.
    hits = search_hits(owner, targets, query, limit=min(2 * limit, store.BATCH_KEYS))
    keys = [(conversation_pk(owner, cid), hit.doc.seq) for cid, hit in hits]
    by_key = {(m.conversation_id, m.seq): m for m in store.get_messages(keys)}
    results: list[dict[str, Any]] = []
    for cid, hit in hits:
        message = by_key.get((cid, hit.doc.seq))
        if message is None or not indexable(message):
            continue
        results.append(
            {
                "conversation_id": cid,
                "message_id": message.message_id,
                "seq": message.seq,
                "role": message.role,
                "snippet": snippet(message_text(message), query),
                "score": round(hit.score, 4),
                "created_at": message.created_at,
            }
        )
        if len(results) == limit:
            break
    return {"results": results}
