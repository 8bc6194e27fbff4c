"""Hybrid recall at window time (MEM-51): BM25's candidates re-ranked with their vectors.

With the window policy's `"recall": {"semantic": true}` and RECALL_EMBEDDINGS_MODEL set, recall's
candidates (the current message embedded as RECALL_EMBEDDINGS_QUERY_MODEL, else the same model) are:
- the best BM25 hits of the conversation's index, each with its tool group (as recall takes it), and
- the messages the post's Query read that the recency window left out, even with no word in common
  with the current message (they cost no read: they are at hand),
within one BatchGetItem's 100 keys (a vector for each, a message for those not at hand: 50 candidates
at least). That BatchGetItem replaces the one plain recall makes for its messages, so recall stays
within 3 DynamoDB reads; the current message is embedded with one provider call, whose charge the
answer carries (`Hybrid.charge`): a post stores it on its reply, which the table's stream adds to the
owner's usage (no write of its own); the window route, which stores nothing, charges it with one
UpdateItem (`charge_now`). Their scores are the reciprocal rank fusion of the BM25 and the
cosine rankings (`engine.recall.vectors`).

What this finds that BM25 alone does not: among the candidates, a paraphrase BM25 ranks low (few shared
words, or only common ones) rises when its meaning is close. What it cannot find: an older message that
shares no indexed term with the current message and is not among the messages the post read; that
would take a read of every vector of the conversation (see docs/semantic-recall.md).

Any failure of the embeddings call (or a candidate set with no vector yet) falls back to BM25 alone:
semantic recall never fails a post.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import zip_longest
from typing import Final

from chat_core.chat import prices
from chat_core.engine.costs import Charge
from chat_core.engine.recall import dense, vectors
from chat_core.errors import ProviderFailed, StoreUnavailable
from chat_core.llm import embeddings
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store.keys import conversation_pk
from chat_core.store.recall import vector_items as store
from chat_core.store.records import MessageRecord

#: Keys one BatchGetItem takes: a vector for every candidate, a message for those not at hand.
MAX_KEYS: Final = store.BATCH_KEYS
#: Candidates from the messages at hand that BM25 did not score (the rest of the keys go to BM25's).
MAX_AT_HAND: Final = 20
#: A candidate BM25 did not score joins only this close to the current message (a cosine at or below 0
#: never counts): a rank fusion would otherwise give an unrelated message a share.
MIN_COSINE: Final = 0.1
#: Dense candidates: the sign bits' DENSE_SHORTLIST nearest by Hamming distance, the DENSE_DEPTH best of
#: them by their dot product with the float query, then rescored with their int8 vectors (tuned on
#: LoCoMo's tuning half, docs/semantic-recall.md).
DENSE_SHORTLIST: Final = 200
DENSE_DEPTH: Final = 50
#: Candidates are read in the order of a first fusion of BM25 with the sign bits' agreement (over BM25's
#: PRELIMINARY_LEXICAL best and the dense nearest) rather than BM25's and the dense list in turn.
PRELIMINARY_LEXICAL: Final = 100
#: Keys kept for the turns around the candidates (message keys only) once dense candidates are in.
NEIGHBOUR_KEYS: Final = 40
#: Seconds the current message's embedding may take on the post path, retries included (then BM25 alone).
QUERY_TIME_BUDGET_S: Final = 5.0
#: Characters of the current message embedded.
MAX_QUERY_CHARS: Final = 8000


@dataclass(frozen=True)
class Hybrid:
    """The fused score of each candidate, the messages fetched (not at hand) and the stored token counts
    of the candidates; `embedded` counts the candidates that had a vector; `charge`: the current
    message's embedding, not charged yet (MEM-50)."""

    scores: dict[int, float]
    messages: dict[int, MessageRecord]
    tokens: dict[int, int]
    embedded: int
    charge: Charge


def plan_candidates(
    lexical: Mapping[int, float],
    at_hand: Mapping[int, MessageRecord],
    extra: Sequence[int],
    expand: Callable[[int], list[int] | None],
    near: Sequence[int] = (),
    around: Callable[[int], Sequence[int]] = lambda seq: (),
    *,
    order: Sequence[int] | None = None,
) -> tuple[list[int], list[int]]:
    """The candidate seqs, BM25's best and the dense `near`est in turn (each with its group), then
    `extra`, within MAX_KEYS keys; and the turns `around` them to fetch (a message key each) while keys
    are left, so the window can send a hit with its neighbours (MEM-53)."""
    chosen: list[int] = []
    keys = 0
    seen: set[int] = set()

    def take(members: Sequence[int], reserve: int) -> bool:
        nonlocal keys
        fresh = [m for m in members if m not in seen]
        cost = sum(1 if m in at_hand else 2 for m in fresh)
        if keys + cost + reserve > MAX_KEYS:
            return False
        keys += cost
        seen.update(fresh)
        chosen.extend(fresh)
        return True

    if order is None:
        ranked = sorted(lexical, key=lambda s: (-lexical[s], -s))
        order = [s for pair in zip_longest(ranked, near) for s in pair if s is not None]
    reserve = NEIGHBOUR_KEYS if near else 0
    for seq in order:
        if seq in seen:
            continue
        members = expand(seq)
        if members is not None and not take(members, reserve):
            break
    spare = sorted((s for s in extra if s not in seen and s not in lexical), reverse=True)
    for seq in spare[:MAX_AT_HAND]:
        take([seq], reserve)
    nearby: list[int] = []
    for seq in list(chosen):
        for other in around(seq):
            if keys >= MAX_KEYS:
                return chosen, nearby
            if other not in seen and other not in at_hand:
                seen.add(other)
                nearby.append(other)
                keys += 1
    return chosen, nearby


@dataclass(frozen=True)
class QueryEmbedding:
    """The current message's embedding: its vector, the model that answered and the call's charge (not
    charged yet). A window with scope "all" makes it once for both recalls (MEM-13, MEM-51)."""

    vector: list[float]
    model: str
    charge: Charge


def compatible_models(answered: str, settings: Settings) -> set[str | None]:
    """The model names a stored vector may carry to be compared with a query answered by `answered`.
    MEM-55: a passage and a query may go by two names of one model (e5's `e5-passage` and `e5-query`),
    so a stored vector is this model's when it was recorded under the query's answer or either name."""
    return {None, answered, settings.recall_embeddings_model, settings.recall_embeddings_query_model}


def embed_query(query: str, settings: Settings | None = None) -> QueryEmbedding | None:
    """The current message embedded with one provider call (under RECALL_EMBEDDINGS_QUERY_MODEL, MEM-55),
    or None when semantic recall is off or the call failed (logged and counted: the caller falls back to
    BM25 alone)."""
    settings = settings or get_settings()
    model = settings.recall_query_model
    if not settings.recall_embeddings_model or not model or not query.strip():
        return None
    try:
        answer = embeddings.get_embedder(settings).embed(
            [query[:MAX_QUERY_CHARS]], model=model, time_budget_s=QUERY_TIME_BUDGET_S
        )
    except ProviderFailed as exc:
        metrics.add_metric(name="EmbeddingFailures", unit=MetricUnit.Count, value=1)
        logger.warning("semantic recall fell back to BM25: the embeddings call failed", error=exc.message)
        return None
    charge = prices.charge(
        answer.model, answer.prompt_tokens, 0, estimated=not answer.usage_reported, settings=settings
    )
    return QueryEmbedding(answer.vectors[0], answer.model, charge)


def preliminary_order(
    lexical: Mapping[int, float], near: Sequence[int], runs: Sequence[dense.Codes], scorer: dense.SignScorer
) -> list[int]:
    """BM25's PRELIMINARY_LEXICAL best and the dense `near`est, ranked by the fusion of their BM25 rank
    and their sign bits' agreement with the float query (`dense.SignScorer`): which candidates the
    BatchGetItem reads, before their int8 vectors rescore them. A candidate without bits yet (a message
    not embedded) keeps its BM25 rank alone."""
    top = sorted(lexical, key=lambda s: (-lexical[s], -s))[:PRELIMINARY_LEXICAL]
    wanted = set(top) | set(near)
    codes = {seq: code for run in runs for seq, code in run if seq in wanted}
    agreement = {seq: scorer(code) for seq, code in codes.items()}
    fused = vectors.fuse({s: lexical[s] for s in top}, agreement)
    return sorted(fused, key=lambda s: (-fused[s], -s))


def hybrid_scores(
    owner: str,
    conversation_id: str,
    query: str,
    lexical: Mapping[int, float],
    at_hand: Mapping[int, MessageRecord],
    extra: Sequence[int],
    expand: Callable[[int], list[int] | None],
    settings: Settings | None = None,
    *,
    runs: Sequence[dense.Codes] = (),
    keep: Callable[[int], bool] = lambda seq: True,
    around: Callable[[int], Sequence[int]] = lambda seq: (),
    embedded: QueryEmbedding | None = None,
) -> Hybrid | None:
    """The candidates fused, or None (BM25 alone) when semantic recall is off or its call failed.
    `runs`: the conversation's dense codes, whose nearest (as `keep` allows) join BM25's candidates.
    `embedded`: the current message's embedding made already (its charge is the answer's), else made here."""
    settings = settings or get_settings()
    if not settings.recall_embeddings_model or not query.strip():
        return None
    if not lexical and not runs and not extra:
        return None
    answer = embedded or embed_query(query, settings)
    if answer is None:
        return None
    charge = answer.charge
    shortlist = dense.nearest(dense.bits(answer.vector), runs, DENSE_SHORTLIST, keep)
    scorer = dense.SignScorer(answer.vector)
    near = scorer.best(shortlist, DENSE_DEPTH)
    order = preliminary_order(lexical, near, runs, scorer)
    seqs, nearby = plan_candidates(lexical, at_hand, extra, expand, near, around, order=order)
    pk = conversation_pk(owner, conversation_id)
    # The call was made: charged even though the request fails (a caller's own embedding, by the caller).
    with charged_if_failed(owner, None if embedded is not None else answer):
        messages, stored = store.candidates_for(pk, seqs, have=set(at_hand), also=nearby)
    wanted = vectors.normalise(answer.vector)
    ours = compatible_models(answer.model, settings)
    semantic: dict[int, float] = {}
    for seq in seqs:
        found_vector = stored.get(seq)
        if found_vector is None or found_vector[0] not in ours:
            continue  # none yet, or made by another model (RECALL_EMBEDDINGS_MODEL changed): BM25's rank only
        data = found_vector[1]
        try:
            close = vectors.cosine(wanted, vectors.dequantise(data))
        except ValueError:
            continue
        if close > (0.0 if seq in lexical else MIN_COSINE):
            semantic[seq] = close
    found = {s: lexical[s] for s in seqs if s in lexical}
    fused = vectors.fuse(found, semantic)
    counts = {s: m.tokens for s, m in messages.items()} | {s: at_hand[s].tokens for s in seqs if s in at_hand}
    return Hybrid({s: fused[s] for s in seqs if s in fused}, messages, counts, len(semantic), charge)


def enabled(settings: Settings | None = None) -> bool:
    """Whether semantic recall is configured (RECALL_EMBEDDINGS_MODEL): the window then reads dense runs."""
    return bool((settings or get_settings()).recall_embeddings_model)


@contextmanager
def charged_if_failed(owner: str, embedded: QueryEmbedding | None) -> Iterator[None]:
    """A store failure under it charges the query embedding the window made before it is raised (the call
    was made; no reply will carry it)."""
    try:
        yield
    except StoreUnavailable:
        if embedded is not None:
            charge_now(owner, [embedded.charge])
        raise


def charge_now(owner: str, charges: Sequence[Charge]) -> None:
    """Query embeddings no reply carries (the window route's) charged to the owner's usage of the day,
    one UpdateItem each; a store failure is logged (the answer goes on)."""
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    for charge in charges:
        try:
            store.charge_query(owner, (day, charge))
        except StoreUnavailable as exc:
            logger.warning("a query embedding's charge was not recorded", error=exc.message)
