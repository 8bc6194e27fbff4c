"""Compaction (RSP-10): a conversation's history folded into its summary on request, and the
`compaction` item that carries it to a later request.

Compacting is the summarizer's job done now and to the end: the summary (seed 001, `chat.summaries`)
is brought up to the given message, one incremental step per model call, priced and charged to the
owner like any summary, and stored as the conversation's summary (per user, in its partition; the
window inspector shows it). The item is self-contained: its `encrypted_content` holds the summary and
the range it covers (`compaction_items`), so a request that passes it back as input is expanded again
without reading anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chat_core.chat import summaries
from chat_core.errors import ConversationNotFound
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as conversation_store
from chat_core.store import summary_item
from chat_core.store.records import SummaryRecord


@dataclass(frozen=True)
class Compaction:
    """A conversation's summary up to `summary.to_seq` and what this request's model calls used."""

    conversation_id: str
    summary: SummaryRecord | None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_micros: int = 0
    steps: int = 0


def compact(
    owner: str,
    conversation_id: str,
    *,
    until_seq: int,
    model: str,
    context: Any = None,
    settings: Settings | None = None,
) -> Compaction:
    """Fold the conversation's messages up to `until_seq` into its summary (a model call per step of
    `summary_input_max_tokens`; none when the summary covers them already)."""
    settings = settings or get_settings()
    recent = conversation_store.read_recent(owner, conversation_id, 1)
    conversation = recent.conversation
    if conversation is None or conversation.is_deleted:
        raise ConversationNotFound(f"Conversation with id '{conversation_id}' not found.")
    # API-18: on a branched conversation the stored summary may stand for another path: the active path
    # is summarized from its start and the stored one replaced (conditionally, as the summarizer does).
    branched = conversation.active_leaf is not None
    stored = summary_item.get_summary(owner, conversation_id) if branched else recent.summary
    summary = None if branched else stored
    used = Compaction(conversation_id, summary)
    for step in range(settings.summary_max_steps):
        covered = summary.to_seq if summary is not None else 0
        if covered >= until_seq:
            break
        pending = summaries.Pending(covered + 1, until_seq)
        budget = summaries.step_budget(context)
        _, made = summaries.summarize_step(
            owner, conversation, summary, pending, model, budget, settings, stored=stored
        )
        if made is None:
            break
        summary = stored = made
        used = Compaction(
            conversation_id,
            summary,
            used.input_tokens + (made.input_tokens or 0),
            used.output_tokens + (made.output_tokens or 0),
            used.cost_micros + (made.cost_micros or 0),
            step + 1,
        )
    return used
