"""Semantic recall's upkeep (MEM-49, MEM-50), off the post path: vectors for the messages stored.

On the table's stream, beside the recall index (`chat.recall.upkeep`), only when RECALL_EMBEDDINGS_MODEL
is set: for each conversation that ended a turn in the batch, GetItem the mark, one Query of the
messages above its watermark up to the conversation item (nothing is embedded in a deleted one; up to
the first gap in the seqs, as the index takes them; at most MAX_PER_PASS messages a pass), one
embeddings call for the indexable ones (batched by the provider module), their vectors with
BatchWriteItem, then the mark and the call's charge to the owner's usage in one TransactWrite.

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
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.chat import budgets, prices
from chat_core.chat.recall.upkeep import _readable, indexable, message_text
from chat_core.engine.recall import vectors
from chat_core.errors import ProviderFailed, StoreUnavailable
from chat_core.llm import embeddings
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
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
        new_mark = Mark(mark.version + 1, max(m.seq for m in taken))
        written: dict[int, bytes] = {}
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
            found = prices.charge(
                answer.model, answer.prompt_tokens, 0, estimated=not answer.usage_reported, settings=settings
            )
            charge = (datetime.now(UTC).strftime("%Y-%m-%d"), found)
            model = answer.model
        try:
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
