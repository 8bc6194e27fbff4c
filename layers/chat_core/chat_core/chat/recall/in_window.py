"""Recall in the window (MEM-6..10): older messages relevant to the current one, within a token share.

The window policy's `recall` option: `true` takes up to DEFAULT_SHARE of the window's token budget (at most
DEFAULT_CAP tokens; DEFAULT_TOKENS when the policy has no token budget), `{"max_tokens": N}` takes N
(with no token budget N is a budget of its own, apart from the policy's caps). `"scope": "all"` also
searches the caller's newest other conversations (`chat.recall.across`).

Candidates are the messages of the ACTIVE path the recency window left out: a conversation that never
branched has one path (every live message); a branched one is followed from the oldest message of the
post's history down the index's parent links, stopping where a link is unknown. Messages the post's
Query read but the window dropped are at hand (scored from their text when the index does not hold them
yet); the others are fetched with one BatchGetItem (a deleted one drops out there: deletion takes
effect at once). A tool call travels with all its results, or none of them. Cost: the tail (GetItem),
the segments not cached (one BatchGetItem), the messages (one BatchGetItem): at most 3 calls.
Which hits, and which of the turns around them, fill the budget is `engine.recall.packing` (MEM-53/54):
what recall leaves unused goes to the recency window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from chat_core.chat.recall import hybrid as recall_hybrid
from chat_core.engine import recall
from chat_core.engine.costs import Charge
from chat_core.engine.recall import Doc, Segment, dense, packing
from chat_core.engine.recall.segments import ROLE_MASK, ROLE_TOOL, TOOL_CALL
from chat_core.store.keys import conversation_pk
from chat_core.store.recall import dense_runs
from chat_core.store.recall import index as store
from chat_core.store.records import ConversationRecord, MessageRecord

#: `recall: true`: at most this share of the window's token budget and DEFAULT_CAP tokens (a ceiling, not a
#: split: recall leaves weak hits to recency; chosen on LoCoMo's tuning half, docs/recall.md).
DEFAULT_SHARE: Final = 0.9
DEFAULT_CAP: Final = 4000
#: `recall: true` under a policy with no token budget (the seed-003 default): a budget of its own.
DEFAULT_TOKENS: Final = 1000
#: Message items one recall may fetch (one BatchGetItem).
MAX_FETCH: Final = 100
#: Candidates fetched beyond what the share holds, for the ones found deleted.
FETCH_SLACK: Final = 2.0
#: Units that did not fit reported in the window's stats.
MAX_REPORTED: Final = 5

Scope = Literal["conversation", "all"]


@dataclass(frozen=True)
class RecallOption:
    """The policy's `recall`: its token budget (None: the default share) and its scope."""

    max_tokens: int | None = None
    scope: Scope = "conversation"
    #: MEM-51: BM25's candidates re-ranked with their embeddings (when RECALL_EMBEDDINGS_MODEL is set).
    semantic: bool = False

    def budget(self, token_budget: int | None) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        if token_budget is None:
            return DEFAULT_TOKENS
        return min(DEFAULT_CAP, int(token_budget * DEFAULT_SHARE))


def recall_option(stored: Mapping[str, Any] | None) -> RecallOption | None:
    """The `recall` of a stored window policy (None when off)."""
    value = (stored or {}).get("recall")
    if value is True:
        return RecallOption()
    if isinstance(value, Mapping):
        scope: Scope = "all" if value.get("scope") == "all" else "conversation"
        tokens = value.get("max_tokens")
        return RecallOption(int(tokens) if tokens is not None else None, scope, value.get("semantic") is True)
    return None


def with_recall(stored: Mapping[str, Any] | None, recall_value: Any) -> dict[str, Any] | None:
    """A post's window policy with its own `recall` (MEM-6): None keeps the conversation's as it is."""
    if recall_value is None:
        return None
    policy = {k: v for k, v in (stored or {}).items() if k != "recall"}
    if recall_value is not False:
        policy["recall"] = recall_value
    return policy or None


@dataclass(frozen=True)
class Recalled:
    """A message recall brings to the window, with its score."""

    message: MessageRecord
    score: float
    #: MEM-53: the seq of the hit this message came with as its neighbour (None: a hit of its own).
    neighbour_of: int | None = None


@dataclass(frozen=True)
class RecallResult:
    """What recall sends (oldest first), the current message's embedding's charge when one was made (not
    charged yet), and the best units that did not fit the budget left (skipped whole, never cut: MEM-8)."""

    recalled: list[Recalled]
    charge: Charge | None = None
    did_not_fit: tuple[packing.Unit, ...] = ()


def _neighbours(seq: int, docs: Mapping[int, Doc], at_hand: Mapping[int, MessageRecord]) -> list[int]:
    """The messages just before and just after `seq` on its path (parent, and the next seq when it is
    the child), from the index or the messages at hand."""
    found: list[int] = []
    doc = docs.get(seq)
    message = at_hand.get(seq)
    parent = doc.parent_seq if doc is not None else message.parent_seq if message is not None else seq - 1
    if parent is not None and parent > 0:
        found.append(parent)
    after = docs.get(seq + 1)
    after_message = at_hand.get(seq + 1)
    after_parent = (
        after.parent_seq
        if after is not None
        else after_message.parent_seq
        if after_message is not None
        else None
    )
    if after_parent == seq:
        found.append(seq + 1)
    return found


@dataclass
class _Index:
    """A conversation's decoded index: its segments by key, and the documents by seq when needed."""

    tail: store.Tail
    segments: dict[str, Segment]
    #: MEM-51: the conversation's dense codes (sign bits), when semantic recall asked for them
    runs: list[dense.Codes] = field(default_factory=list)
    _docs: dict[int, Doc] | None = field(default=None)

    @property
    def docs(self) -> dict[int, Doc]:
        if self._docs is None:
            self._docs = {d.seq: d for seg in self.segments.values() for d in seg.docs}
        return self._docs


def load_index(owner: str, conversation_id: str, *, with_runs: bool = False) -> _Index:
    """The tail (GetItem) and the segments it lists (cached, else one BatchGetItem); `with_runs`: the
    tail with the dense mark (one BatchGetItem), the segments with the dense runs (one more)."""
    pk = conversation_pk(owner, conversation_id)
    if with_runs:
        tail, state = dense_runs.read_state(pk)
        listed = [str(r["id"]) for r in state.runs]
        found_segments, found_runs = dense_runs.read_parts(pk, [r.id for r in tail.segments], listed)
        if tail.pending:
            found_segments["~"] = Segment(tail.pending)
        runs = [found_runs[r] for r in listed if r in found_runs] + [state.pending_codes()]
        return _Index(tail, found_segments, runs)
    tail = store.read_tail(owner, conversation_id)
    found = store.read_segments((pk, r.id) for r in tail.segments) if tail.segments else {}
    segments: dict[str, Segment] = {sid: seg for (_, sid), seg in found.items()}
    if tail.pending:
        segments["~"] = Segment(tail.pending)
    return _Index(tail, segments)


def active_path(index: _Index, history: Sequence[MessageRecord]) -> set[int]:
    """The seqs of the active path below the post's history, by the index's parent links (stopping at
    the first seq the index does not hold: never a guess)."""
    on_path = {m.seq for m in history}
    if not history:
        return on_path
    oldest = min(history, key=lambda m: m.seq)
    seq = oldest.parent_seq if oldest.parent_seq is not None else oldest.seq - 1
    docs = index.docs
    while seq > 0 and seq not in on_path:
        doc = docs.get(seq)
        if doc is None:
            break
        on_path.add(seq)
        seq = doc.parent_seq
    return on_path


def _unit(seq: int, index: _Index, allowed: set[int] | None) -> list[int] | None:
    """`seq` with its tool group (call first, then results), or None when the group is not whole."""
    docs = index.docs
    doc = docs.get(seq)
    if doc is None:
        return [seq]
    root = doc
    while root.flags & ROLE_MASK == ROLE_TOOL:
        parent = docs.get(root.parent_seq)
        if parent is None:
            return None
        root = parent
    if not root.flags & TOOL_CALL:
        return [seq] if root is doc else None
    members = [root.seq]
    children: dict[int, list[int]] = {}
    for d in docs.values():
        if d.flags & ROLE_MASK == ROLE_TOOL:
            children.setdefault(d.parent_seq, []).append(d.seq)
    frontier = [root.seq]
    while frontier:
        nxt = [c for p in frontier for c in children.get(p, [])]
        members.extend(nxt)
        frontier = nxt
    if allowed is not None and not all(m in allowed for m in members):
        return None
    return sorted(members)


def _whole(unit: Sequence[MessageRecord]) -> bool:
    """A unit can be sent: every message live and ok, and a tool call has every result it asked for."""
    if any(m.deleted_at is not None or m.status != "ok" for m in unit):
        return False
    calls = {str(c.get("id")) for m in unit for c in m.tool_calls or ()}
    answers = {m.tool_call_id for m in unit if m.role == "tool"}
    return calls == answers


def recall_messages(
    owner: str,
    conversation: ConversationRecord,
    history: Sequence[MessageRecord],
    read: Sequence[MessageRecord],
    query: str,
    sent: set[int],
    budget: int,
    *,
    semantic: bool = False,
    embedded: recall_hybrid.QueryEmbedding | None = None,
) -> RecallResult:
    """Up to `budget` stored tokens of the active path's messages not in `sent`, best first by BM25 (with
    `semantic`, by BM25 fused with the embeddings' cosine: `chat.recall.hybrid`), each hit with the turns
    around it when they help (`engine.recall.packing`), oldest first in the answer. `embedded`: the
    current message's embedding when the window made it already (its charge is then the window's)."""
    terms = recall.query_terms(query)
    if not terms or budget <= 0:
        return RecallResult([])
    index = load_index(owner, conversation.conversation_id, with_runs=semantic and recall_hybrid.enabled())
    at_hand = {m.seq: m for m in history}
    off_path = {m.seq for m in read if m.seq not in at_hand}
    allowed = active_path(index, history) if conversation.active_leaf is not None else None

    def keep(doc: Doc) -> bool:
        if doc.seq in sent or doc.seq in off_path:
            return False
        return allowed is None or doc.seq in allowed

    tail = index.tail
    hits = recall.score(terms, index.segments, n_docs=tail.n_docs, total_length=tail.total_length, keep=keep)
    scores = {h.doc.seq: h.score for h in hits}
    tokens = {h.doc.seq: h.doc.tokens for h in hits}
    fresh = [m for m in history if not tail.holds(m.seq) and m.seq not in sent and m.status == "ok"]
    if fresh:
        weights = recall.term_weights(terms, index.segments, max(1, tail.n_docs))
        analysed = ((m.seq, recall.analyse(m.content or "")) for m in fresh)
        texts = recall.score_texts(weights, analysed, n_docs=tail.n_docs, total_length=tail.total_length)
        scores.update(texts)
        tokens.update({m.seq: m.tokens for m in fresh})
    ahead: dict[int, MessageRecord] | None = None
    charge: Charge | None = None
    if semantic:

        def expand(seq: int) -> list[int] | None:
            return _unit(seq, index, allowed) if seq not in at_hand or tail.holds(seq) else [seq]

        left = [m.seq for m in history if m.seq not in sent and m.status == "ok" and m.role != "system"]

        def dense_keep(seq: int) -> bool:
            if seq in sent or seq in off_path or (seq in at_hand and not tail.holds(seq)):
                return False
            return allowed is None or seq in allowed

        found = recall_hybrid.hybrid_scores(
            owner,
            conversation.conversation_id,
            query,
            scores,
            at_hand,
            left,
            expand,
            runs=index.runs,
            keep=dense_keep,
            around=lambda seq: _neighbours(seq, index.docs, at_hand),
            embedded=embedded,
        )
        if found is not None:
            scores, ahead, charge = found.scores, found.messages, found.charge
            tokens.update(found.tokens)
    docs = index.docs

    def members(seq: int) -> list[int] | None:
        return _unit(seq, index, allowed) if seq not in at_hand or tail.holds(seq) else [seq]

    def cost(seq: int) -> int:
        if seq in tokens:
            return tokens[seq]
        if seq in at_hand:
            return at_hand[seq].tokens
        return docs[seq].tokens if seq in docs else 0

    def excluded(seq: int) -> bool:
        if seq in sent or seq in off_path or (allowed is not None and seq not in allowed):
            return True
        # Semantic recall fetched its candidates already: a neighbour it did not fetch would cost a call.
        return ahead is not None and seq not in ahead and seq not in at_hand

    def neighbours(seq: int) -> list[int]:
        return _neighbours(seq, docs, at_hand)

    packed = packing.pack(
        scores,
        int(budget * FETCH_SLACK),
        unit=members,
        cost=cost,
        neighbours=neighbours,
        excluded=excluded,
        max_units=MAX_FETCH,
    )
    wanted = [seq for u in packed.units for seq in u.seqs if seq not in at_hand]
    pk = conversation_pk(owner, conversation.conversation_id)
    if ahead is not None:  # the hybrid pass fetched every candidate's message already
        fetched = ahead
    else:
        fetched = {m.seq: m for m in store.get_messages([(pk, seq) for seq in wanted[:MAX_FETCH]])}
    chosen: list[Recalled] = []
    did_not_fit = [u for u in packed.did_not_fit if u.tokens > budget]
    room = budget
    for unit in packed.units:
        records = [at_hand.get(s) or fetched.get(s) for s in unit.seqs]
        whole = [r for r in records if r is not None]
        if len(whole) != len(records) or not _whole(whole):
            continue
        tokens_of_unit = sum(r.tokens for r in whole)
        if tokens_of_unit > room:
            if unit.neighbour_of is None:
                did_not_fit.append(unit)
            continue
        room -= tokens_of_unit
        chosen.extend(Recalled(r, scores.get(r.seq, unit.score), unit.neighbour_of) for r in whole)
    chosen.sort(key=lambda r: r.message.seq)
    return RecallResult(chosen, charge, tuple(did_not_fit[:MAX_REPORTED]))
