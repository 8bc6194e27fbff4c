"""Recall's scope "all" (MEM-13): what the caller said in its other conversations, as a labelled block.

With `"recall": {"scope": "all", ...}` the window also searches the caller's SEARCH_CONVERSATIONS most
recently updated other live conversations, as GET /memory/search does (one Query of the listing index,
one BatchGetItem of their index tails, one of the segments not cached, one of the best messages: a
deleted message or conversation never comes back), and sends the best messages that fit half of
recall's share as one system message after the system prompt (placed as the facts block is): a header,
then one line per message, oldest first, with its date, role and text. Another owner's conversations
are never read (the listing index is the caller's own). The conversation's own recall takes what this
block leaves of the share.

With `"semantic": true` as well (MEM-51, RECALL_EMBEDDINGS_MODEL set), BM25's hits are fused (reciprocal
rank fusion, as in the conversation's own recall) with dense candidates: the sign bits of every vector of
those conversations ranked by Hamming distance to the current message's (`dense.nearest`), the best
rescored with the float query (`dense.rescore`), then the ACROSS_DENSE best checked with their int8
vectors, read in the messages' BatchGetItem (a cosine at or below MIN_COSINE never counts, as in the
conversation's own recall). The reads are the same calls: each dense mark with its index tail, the runs
not cached with the segments, the vectors with the messages. The current message's embedding is the
one the window made for both recalls (`hybrid.embed_query`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from chat_core.chat.policy import count_message
from chat_core.chat.recall.hybrid import DENSE_SHORTLIST, MIN_COSINE, QueryEmbedding, compatible_models
from chat_core.chat.recall.search import SEARCH_CONVERSATIONS, rank_hits, search_hits
from chat_core.chat.recall.upkeep import indexable, message_text
from chat_core.engine import recall
from chat_core.engine.recall import dense, vectors
from chat_core.settings import get_settings
from chat_core.store import conversations as conversation_store
from chat_core.store.keys import conversation_pk
from chat_core.store.recall import dense_runs, vector_items
from chat_core.store.recall import index as store
from chat_core.store.records import MessageRecord

HEADER: Final = "From the user's other conversations (recalled for this message, oldest first):"
#: Characters of one message's text in the block (a longer message is cut, marked with "…").
LINE_CHARS: Final = 600
#: Dense candidates checked with their int8 vectors: a vector and a message key each, so BM25's hits keep
#: at least 60 of the candidates' BatchGetItem's 100 keys.
ACROSS_DENSE: Final = 20
#: A candidate's key across conversations: the conversation's place (the newest highest, so ties go to
#: it, as recall breaks them) above its seq.
_SEQ_BITS: Final = 40

Candidate = tuple[str, int, float]


def _everything(seq: int) -> bool:
    return True


def semantic_candidates(
    owner: str, targets: Sequence[str], query: Sequence[int], embedded: QueryEmbedding
) -> tuple[list[Candidate], list[MessageRecord]]:
    """(conversation id, seq, fused score) best first, and their messages: BM25's hits fused with the
    dense candidates of the conversations' sign-bit runs, in the calls BM25 alone makes."""
    places = {conversation_pk(owner, cid): (len(targets) - n, cid) for n, cid in enumerate(targets)}
    by_place = {place: (pk, cid) for pk, (place, cid) in places.items()}
    states = dense_runs.read_states(list(places))
    dims = len(embedded.vector)
    loaded, sealed = dense_runs.read_many(
        [(pk, ref.id) for pk, (tail, _) in states.items() for ref in tail.segments],
        [(pk, str(r["id"])) for pk, (_, runs) in states.items() if runs.dims == dims for r in runs.runs],
    )
    hits = rank_hits(
        owner,
        {places[pk][1]: tail for pk, (tail, _) in states.items()},
        loaded,
        query,
        limit=store.BATCH_KEYS,
    )
    wanted_bits = dense.bits(embedded.vector)
    shortlist: list[tuple[int, int]] = []
    for pk, (_, runs) in states.items():
        if runs.dims != dims:  # nothing embedded yet, or by another model: its bits mean nothing here
            continue
        codes = [sealed[(pk, str(r["id"]))] for r in runs.runs if (pk, str(r["id"])) in sealed]
        tag = places[pk][0] << _SEQ_BITS
        nearest = dense.nearest(wanted_bits, [*codes, runs.pending_codes()], DENSE_SHORTLIST, _everything)
        shortlist.extend((tag | seq, code) for seq, code in nearest)
    best = dense.nearest(wanted_bits, [shortlist], DENSE_SHORTLIST, _everything)
    near = dense.rescore(embedded.vector, best, ACROSS_DENSE)
    lexical = {
        places[conversation_pk(owner, cid)][0] << _SEQ_BITS | h.doc.seq: h.score
        for cid, h in hits[: store.BATCH_KEYS - 2 * len(near)]
    }

    def key_of(key: int) -> tuple[str, int]:
        return by_place[key >> _SEQ_BITS][0], key & ((1 << _SEQ_BITS) - 1)

    messages, stored = vector_items.messages_and_vectors(
        [key_of(k) for k in dict.fromkeys([*lexical, *near])], [key_of(k) for k in near]
    )
    wanted = vectors.normalise(embedded.vector)
    ours = compatible_models(embedded.model, get_settings())
    semantic: dict[int, float] = {}
    for key in near:
        found = stored.get(key_of(key))
        if found is None or found[0] not in ours:
            continue  # none yet, or made by another model: BM25's rank only
        try:
            close = vectors.cosine(wanted, vectors.dequantise(found[1]))
        except ValueError:
            continue
        if close > (0.0 if key in lexical else MIN_COSINE):
            semantic[key] = close
    fused = vectors.fuse(lexical, semantic)
    ranked = sorted(fused, key=lambda k: (-fused[k], -k))
    return [(by_place[k >> _SEQ_BITS][1], key_of(k)[1], fused[k]) for k in ranked], messages


def across_block(
    owner: str,
    conversation_id: str,
    query_text: str,
    budget: int,
    model: str,
    embedded: QueryEmbedding | None = None,
) -> dict[str, Any] | None:
    """The block (content, tokens, entries) of the other conversations' best messages within `budget`;
    with `embedded` (the current message's embedding), BM25's hits fused with dense candidates."""
    query = recall.query_terms(query_text)
    if not query or budget <= 0:
        return None
    page = conversation_store.page_conversations(owner, SEARCH_CONVERSATIONS + 1, None)
    targets = [
        c.conversation_id for c in page.items if not c.is_deleted and c.conversation_id != conversation_id
    ][:SEARCH_CONVERSATIONS]
    if not targets:
        return None
    if embedded is not None:
        candidates, messages = semantic_candidates(owner, targets, query, embedded)
    else:
        hits = search_hits(owner, targets, query, limit=store.BATCH_KEYS)
        candidates = [(cid, h.doc.seq, h.score) for cid, h in hits]
        messages = store.get_messages([(conversation_pk(owner, cid), seq) for cid, seq, _ in candidates])
    found = {(m.conversation_id, m.seq): m for m in messages}
    chosen: list[tuple[Any, float, str]] = []
    used = count_message({"role": "system", "content": HEADER}, model)
    for cid, seq, score in candidates:
        message = found.get((cid, seq))
        if message is None or not indexable(message):
            continue
        text = message_text(message)
        text = text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + "…"
        line = f"[{message.created_at[:10]}] {message.role}: {text}"
        cost = count_message({"role": "user", "content": line}, model)
        if used + cost <= budget:
            chosen.append((message, score, line))
            used += cost
    while chosen:
        chosen.sort(key=lambda c: (c[0].created_at, c[0].seq))
        content = "\n".join([HEADER, *(line for _, _, line in chosen)])
        tokens = count_message({"role": "system", "content": content}, model)
        if tokens <= budget:
            entries = [
                {"conversation_id": m.conversation_id, "message_id": m.message_id, "score": round(s, 4)}
                for m, s, _ in chosen
            ]
            return {"content": content, "tokens": tokens, "entries": entries}
        chosen.remove(min(chosen, key=lambda c: c[1]))  # the per-line counts ran over: drop the weakest
    return None
