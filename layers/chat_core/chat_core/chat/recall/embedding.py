"""Semantic recall's upkeep (MEM-49, MEM-50), off the post path: vectors for the messages stored.

On the table's stream, beside the recall index (`chat.recall.upkeep`), only when RECALL_EMBEDDINGS_MODEL
is set: for each conversation that ended a turn in the batch, GetItem the mark, one Query of the
messages above its watermark up to the conversation item (nothing is embedded in a deleted one; up to
the first gap in the seqs, as the index takes them; at most MAX_PER_PASS messages a pass), one
embeddings call for the indexable ones (batched by the provider module), their vectors with
BatchWriteItem, then the mark and the call's charge to the owner's usage in one TransactWrite. The
mark also keeps every vector's sign bits for dense candidates (`store.recall.dense_runs`): sealed into
an immutable run every dense.SEAL messages (a PutItem, written before the mark), runs merged four at a
time as the lexical index's segments are.

Never embedded: deleted messages, the messages of a deleted conversation (and so turns stored with
`store: false`, whose conversation is deleted once answered: checked before the call and again after the
write, which then removes what it wrote), failed replies, system messages, empty texts. When the owner
has reached a budget (COST-4) nothing is embedded and the watermark stays: the messages are embedded by
the first upkeep after the budget resets, and lexical recall works meanwhile. A provider failure is
logged and leaves the watermark too (the next turn retries the backlog); a store failure is listed, so
the stream retries the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.chat import budgets, prices
from chat_core.chat.recall.upkeep import _readable, indexable, message_text
from chat_core.engine.recall import dense, vectors
from chat_core.errors import ProviderFailed, StoreUnavailable
from chat_core.llm import embeddings
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store.keys import conversation_pk, new_id
from chat_core.store.recall import dense_runs
from chat_core.store.recall import index as recall_index
from chat_core.store.recall import vector_items as store
from chat_core.store.recall.vector_items import Mark, MarkConflict
from chat_core.store.records import MessageRecord

#: Messages one pass takes (a backlog after a budget pause is taken over the next turns).
MAX_PER_PASS: Final = 256
#: Characters of a message sent to be embedded (embedding models take about 8,000 tokens).
MAX_CHARS: Final = 8000
_ATTEMPTS: Final = 4


def embeddable(message: MessageRecord) -> bool:
    """A message the upkeep embeds: one the recall index takes, with some text."""
    return indexable(message) and bool(message_text(message).strip())


def over_budget(owner: str, settings: Settings) -> bool:
    """Whether the owner has reached a budget (no read while budgets are off)."""
    if not settings.budgets_on:
        return False
    return bool(budgets.read_standing(owner, settings).reached())


def _with_codes(
    pk: str, mark: Mark, new_mark: Mark, codes: dense.Codes, dims: int
) -> tuple[Mark, list[tuple[str, int, int, bytes]], list[str]]:
    """`new_mark` with `codes` added to the dense state, the runs to write first and those merged away."""
    runs = list(mark.runs)
    pending = dense.decode(mark.codes)[1] if mark.codes else []
    gone: list[str] = []
    if mark.dims and mark.dims != dims:  # another model's vectors: their bits start over
        gone, runs, pending = [str(r["id"]) for r in runs], [], []
    pending += codes
    sealed: list[tuple[str, int, int, bytes]] = []
    if len(pending) >= dense.SEAL:
        sealed.append((new_id(), 0, len(pending), dense.encode(dims, pending)))
        runs.append({"id": sealed[-1][0], "level": 0, "count": len(pending)})
        pending = []
    while (plan := dense.merge_plan([int(r["level"]) for r in runs])) is not None:
        chosen = [runs[i] for i in plan]
        ids = [str(r["id"]) for r in chosen]
        fresh = {rid: dense.decode(data)[1] for rid, _, _, data in sealed}
        _, read = dense_runs.read_parts(pk, [], [i for i in ids if i not in fresh])
        merged = [c for i in ids for c in (fresh.get(i) or read.get(i) or [])]
        sealed = [s for s in sealed if s[0] not in ids]
        sealed.append((new_id(), int(chosen[0]["level"]) + 1, len(merged), dense.encode(dims, merged)))
        gone += [i for i in ids if i not in fresh]
        runs = [r for r in runs if str(r["id"]) not in ids]
        runs.append({"id": sealed[-1][0], "level": sealed[-1][1], "count": len(merged)})
    encoded = dense.encode(dims, pending) if pending else None
    return replace(new_mark, dims=dims, codes=encoded, runs=tuple(runs)), sealed, gone


def embed_conversation(owner: str, conversation_id: str, settings: Settings | None = None) -> int:
    """Embed the conversation's messages above its mark; the vectors written (0: up to date, skipped)."""
    settings = settings or get_settings()
    model = settings.recall_embeddings_model
    if not model:
        return 0
    for _ in range(_ATTEMPTS):
        mark = store.read_mark(owner, conversation_id)
        above, live = recall_index.messages_above(owner, conversation_id, mark.watermark)
        if not live:
            # Deleted (a `store: false` turn's conversation is, once answered): the purge takes it all.
            return 0
        taken = _readable(mark.watermark, above)[:MAX_PER_PASS]
        if not taken:
            return 0
        chosen = [m for m in taken if embeddable(m)]
        new_mark = replace(mark, version=mark.version + 1, watermark=max(m.seq for m in taken))
        written: dict[int, bytes] = {}
        sealed: list[tuple[str, int, int, bytes]] = []
        gone: list[str] = []
        charge = None
        if chosen:
            if over_budget(owner, settings):
                metrics.add_metric(name="EmbeddingsSkippedOverBudget", unit=MetricUnit.Count, value=1)
                logger.info(
                    "recall vectors skipped: the owner's budget is reached",
                    conversation_id=conversation_id,
                    messages=len(chosen),
                )
                return 0
            answer = embeddings.get_embedder(settings).embed(
                [message_text(m)[:MAX_CHARS] for m in chosen], model=model
            )
            written = {m.seq: vectors.quantise(v) for m, v in zip(chosen, answer.vectors, strict=True)}
            codes = [(m.seq, dense.bits(v)) for m, v in zip(chosen, answer.vectors, strict=True)]
            new_mark, sealed, gone = _with_codes(
                conversation_pk(owner, conversation_id), mark, new_mark, codes, len(answer.vectors[0])
            )
            found = prices.charge(
                answer.model, answer.prompt_tokens, 0, estimated=not answer.usage_reported, settings=settings
            )
            charge = (datetime.now(UTC).strftime("%Y-%m-%d"), found)
            model = answer.model
        try:
            dense_runs.write_runs(conversation_pk(owner, conversation_id), sealed)
            store.save(
                owner,
                conversation_id,
                written,
                model=model,
                mark=new_mark,
                expected_version=mark.version,
                charge=charge,
            )
        except MarkConflict:
            continue
        dense_runs.delete_runs(conversation_pk(owner, conversation_id), gone)
        if written and not store.conversation_live(owner, conversation_id):
            store.delete_vectors(owner, conversation_id, list(written))
            return 0
        metrics.add_metric(name="RecallVectorsWritten", unit=MetricUnit.Count, value=len(written))
        return len(written)
    raise MarkConflict(conversation_id)


def process_stream(targets: Sequence[tuple[str, str]], settings: Settings | None = None) -> dict[str, Any]:
    """Embed each (owner, conversation_id) that ended a turn in a stream batch (nothing at all when off).

    Store failures are listed (the caller raises for them, so the batch is retried; the mark makes the
    retry a no-op where done); a provider failure is logged and left to the next turn."""
    settings = settings or get_settings()
    if not embeddings.enabled(settings):
        return {"conversations": 0, "vectors": 0, "failures": []}
    written = 0
    failures: list[dict[str, Any]] = []
    for owner, conversation_id in targets:
        try:
            written += embed_conversation(owner, conversation_id, settings)
        except ProviderFailed as exc:
            metrics.add_metric(name="EmbeddingFailures", unit=MetricUnit.Count, value=1)
            logger.warning(
                "recall vectors not made: the embeddings call failed",
                conversation_id=conversation_id,
                kind=exc.kind,
                error=exc.message,
            )
        except (StoreUnavailable, MarkConflict) as exc:
            failures.append({"conversation_id": conversation_id, "error": str(exc)})
            logger.warning("recall vectors not stored", conversation_id=conversation_id, error=str(exc))
    return {"conversations": len(targets), "vectors": written, "failures": failures}
