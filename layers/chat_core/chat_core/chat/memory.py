"""Long-term facts as the owner sees them (MEM-32..36): GET /memory, DELETE /memory/{fact_id}, the window's
block of known facts.

Deletion really deletes: a fact is shown (in a listing or a window) only while at least one of its
source messages stands. Every read checks the sources against the messages (one TransactGetItems for a page);
a fact whose every source message (or conversation) is deleted is deleted for good on the spot, and is
never shown, so its text does not outlive what it was taken from. Deleting a fact deletes the facts it
superseded too (earlier versions of the same memory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.chat.paging import decode_cursor, encode_cursor
from chat_core.engine import tokens
from chat_core.engine.fact_ops import Fact, render_block
from chat_core.engine.window import WindowPolicy, WindowResult
from chat_core.errors import NotFound
from chat_core.observability import MetricUnit, metrics
from chat_core.store import fact_items as store
from chat_core.store.keys import is_valid_id

MEMORY_SCOPE: Final = "memory"
#: Pages of facts one GET /memory reads at most while filtering (a short page then has a next_cursor).
MAX_PAGES: Final = 5
#: The block's size when the policy says `"facts": true` (tokens).
DEFAULT_BLOCK_TOKENS: Final = 256
#: Facts a window considers (newest first); their sources are checked in one TransactGetItems.
BLOCK_CANDIDATES: Final = 40


class FactNotFound(NotFound):
    code = "fact_not_found"


def _live(owner: str, facts: Sequence[Fact], *, forget: bool = True) -> list[Fact]:
    """`facts` whose sources still stand (with only those sources); the others are deleted now
    (`forget`) or, on a window's read-only path, left to the next GET /memory or extraction."""
    standing = store.live_messages(owner, [s for f in facts for s in f.sources])
    kept: list[Fact] = []
    dead: list[str] = []
    for fact in facts:
        sources = tuple(s for s in fact.sources if (s.conversation_id, s.seq) in standing)
        if sources:
            kept.append(fact if len(sources) == len(fact.sources) else replace(fact, sources=sources))
        else:
            dead.append(fact.fact_id)
    if dead and forget:
        store.delete_facts(owner, dead)
        metrics.add_metric(name="FactsForgotten", unit=MetricUnit.Count, value=len(dead))
    return kept


def fact_view(fact: Fact) -> dict[str, Any]:
    return {
        "id": fact.fact_id,
        "text": fact.text,
        "kind": fact.kind,
        "status": fact.status,
        "superseded_by": fact.superseded_by,
        "supersedes": fact.supersedes,
        "sources": [{"conversation_id": s.conversation_id, "message_id": s.message_id} for s in fact.sources],
        "created_at": fact.created_at,
        "updated_at": fact.updated_at,
    }


def list_memory(
    owner: str,
    *,
    limit: int,
    cursor: str | None = None,
    conversation_id: str | None = None,
    include_superseded: bool = False,
) -> dict[str, Any]:
    """GET /memory: the caller's facts, newest first; superseded and retracted ones only when asked;
    with `conversation_id`, only facts taken from that conversation."""
    prefix = store.facts_pk(owner)

    def mine(key: Mapping[str, str]) -> bool:
        return set(key) == {"pk", "sk"} and key["pk"] == prefix and key["sk"].startswith(store.FACT_SK_PREFIX)

    start = decode_cursor(owner, MEMORY_SCOPE, cursor, mine) if cursor is not None else None
    found: list[Fact] = []
    last_key: dict[str, str] | None = None
    for _ in range(MAX_PAGES):
        page = store.read_page(owner, limit, start)
        wanted = [
            f
            for f in page.facts
            if (include_superseded or f.active)
            and (conversation_id is None or any(s.conversation_id == conversation_id for s in f.sources))
        ]
        for fact in _live(owner, wanted) if wanted else []:
            found.append(fact)
            if len(found) == limit:
                break
        if len(found) == limit:
            last_key = store.fact_key(owner, found[-1].fact_id)
            break
        last_key = page.last_key
        if last_key is None:
            break
        start = last_key
    metrics.add_metric(name="MemoryListed", unit=MetricUnit.Count, value=1)
    return {
        "facts": [fact_view(f) for f in found],
        "next_cursor": encode_cursor(owner, MEMORY_SCOPE, last_key) if last_key else None,
    }


def delete_memory(owner: str, fact_id: str) -> None:
    """DELETE /memory/{fact_id}: the fact and the earlier versions it superseded, for good. 404 for an
    unknown id or another owner's (their facts live in their own partition)."""
    if not is_valid_id(fact_id):
        raise FactNotFound(f"no fact {fact_id}")
    fact = store.get_fact(owner, fact_id)
    if fact is None:
        raise FactNotFound(f"no fact {fact_id}")
    doomed = [fact.fact_id]
    if fact.supersedes:
        everything, _ = store.read_all(owner)
        by_id = {f.fact_id: f for f in everything}
        older = by_id.get(fact.supersedes)
        while older is not None and older.fact_id not in doomed:
            doomed.append(older.fact_id)
            older = by_id.get(older.supersedes or "")
    store.delete_facts(owner, doomed)
    metrics.add_metric(name="FactsDeleted", unit=MetricUnit.Count, value=len(doomed))


def block_tokens(spec: Any) -> int | None:
    """The block's token cap a window policy's `facts` asks for (None: no block)."""
    if spec is True:
        return DEFAULT_BLOCK_TOKENS
    if isinstance(spec, Mapping):
        return int(spec.get("max_tokens") or DEFAULT_BLOCK_TOKENS)
    return None


def facts_block(owner: str, spec: Any, model: str, room: int | None = None) -> dict[str, Any] | None:
    """The window's labelled block of the owner's current facts (a system message with its `tokens` and
    the `facts` it holds), within the policy's cap and `room` (the window's budget left, when it has
    one); None when the policy asks for none or none stands. One Query and one TransactGetItems."""
    cap = block_tokens(spec)
    if cap is None:
        return None
    if room is not None:
        cap = min(cap, room)
    everything, _ = store.read_all(owner)
    current = sorted((f for f in everything if f.active), key=lambda f: f.created_at, reverse=True)
    candidates = _live(owner, current[:BLOCK_CANDIDATES], forget=False) if current else []

    def fits(text: str) -> bool:
        return tokens.count_message_tokens({"role": "system", "content": text}, model=model) <= cap

    rendered = render_block(candidates, fits)
    if rendered is None:
        return None
    text, kept = rendered
    count = int(tokens.count_message_tokens({"role": "system", "content": text}, model=model))
    return {"role": "system", "content": text, "tokens": count, "facts": [f.fact_id for f in kept]}


def with_facts(
    owner: str, stored: Mapping[str, Any] | None, policy: WindowPolicy, model: str
) -> tuple[WindowPolicy, dict[str, Any] | None]:
    """MEM-35: the window's facts block when its policy asks for one, and the policy with the block's
    tokens taken off its budget (a policy without a token budget gives the block a budget of its own)."""
    spec = stored.get("facts") if isinstance(stored, Mapping) else None
    if not spec:
        return policy, None
    budget = policy.token_budget
    block = facts_block(owner, spec, model, budget)
    if block is None:
        return policy, None
    if budget is not None:
        policy = policy.with_changes(max_tokens=max(0, budget - int(block["tokens"])))
    return policy, block


def insert_block(result: WindowResult, block: Mapping[str, Any] | None) -> WindowResult:
    """The window with the facts block right after its system prompt (first when it has none)."""
    if block is None:
        return result
    messages = list(result.messages)
    at = 1 if messages and messages[0].get("role") == "system" else 0
    messages.insert(at, {"role": "system", "content": block["content"]})
    return WindowResult(messages, result.stats)
