"""Recall's scope "all" (MEM-13): what the caller said in its other conversations, as a labelled block.

With `"recall": {"scope": "all", ...}` the window also searches the caller's SEARCH_CONVERSATIONS most
recently updated other live conversations, as GET /memory/search does (one Query of the listing index,
one BatchGetItem of their index tails, one of the segments not cached, one of the best messages: a
deleted message or conversation never comes back), and sends the best messages that fit half of
recall's share as one system message after the system prompt (placed as the facts block is): a header,
then one line per message, oldest first, with its date, role and text. Another owner's conversations
are never read (the listing index is the caller's own). The conversation's own recall takes what this
block leaves of the share.
"""

from __future__ import annotations

from typing import Any, Final

from chat_core.chat.policy import count_message
from chat_core.chat.recall.search import SEARCH_CONVERSATIONS, search_hits
from chat_core.chat.recall.upkeep import indexable, message_text
from chat_core.engine import recall
from chat_core.store import conversations as conversation_store
from chat_core.store.keys import conversation_pk
from chat_core.store.recall import index as store

HEADER: Final = "From the user's other conversations (recalled for this message, oldest first):"
#: Characters of one message's text in the block (a longer message is cut, marked with "…").
LINE_CHARS: Final = 600


def across_block(
    owner: str, conversation_id: str, query_text: str, budget: int, model: str
) -> dict[str, Any] | None:
    """The block (content, tokens, entries) of the other conversations' best messages within `budget`."""
    query = recall.query_terms(query_text)
    if not query or budget <= 0:
        return None
    page = conversation_store.page_conversations(owner, SEARCH_CONVERSATIONS + 1, None)
    targets = [
        c.conversation_id for c in page.items if not c.is_deleted and c.conversation_id != conversation_id
    ][:SEARCH_CONVERSATIONS]
    if not targets:
        return None
    hits = search_hits(owner, targets, query, limit=store.BATCH_KEYS)
    found = {
        (m.conversation_id, m.seq): m
        for m in store.get_messages([(conversation_pk(owner, cid), h.doc.seq) for cid, h in hits])
    }
    chosen: list[tuple[Any, float, str]] = []
    used = count_message({"role": "system", "content": HEADER}, model)
    for cid, hit in hits:
        message = found.get((cid, hit.doc.seq))
        if message is None or not indexable(message):
            continue
        text = message_text(message)
        text = text if len(text) <= LINE_CHARS else text[:LINE_CHARS] + "…"
        line = f"[{message.created_at[:10]}] {message.role}: {text}"
        cost = count_message({"role": "user", "content": line}, model)
        if used + cost <= budget:
            chosen.append((message, hit.score, line))
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
