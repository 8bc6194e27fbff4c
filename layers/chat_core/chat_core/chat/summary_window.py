"""What a window carries of a conversation's stored summary: the message, the history after it, stats."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chat_core.engine.window import WindowResult
from chat_core.store.records import MessageRecord, SummaryRecord

#: The id a summary carries in window stats (`dropped` refs, when it does not fit).
SUMMARY_REF = "summary"


def summary_label(from_seq: int, to_seq: int) -> str:
    """The heading of the summary message: which messages it stands for."""
    return f"Summary of earlier conversation (messages {from_seq}\u2013{to_seq}):"


def summary_content(from_seq: int, to_seq: int, text: str) -> str:
    return f"{summary_label(from_seq, to_seq)}\n{text}"


def summary_message(summary: SummaryRecord) -> dict[str, Any]:
    """The system-side message a window carries for a stored summary (with its stored count, TOK-5)."""
    return {
        "role": "system",
        "content": summary_content(summary.from_seq, summary.to_seq, summary.text),
        "tokens": summary.tokens,
        "message_id": SUMMARY_REF,
    }


def after_summary(history: Sequence[MessageRecord], summary: SummaryRecord | None) -> list[MessageRecord]:
    """The history a window may choose from besides the summary: only messages newer than its range.

    The summary stands for everything up to `to_seq`, so those messages are not sent a second time.
    """
    if summary is None:
        return list(history)
    covered = summary.to_seq
    return [m for m in history if m.seq > covered]


def summary_included(window: WindowResult) -> bool:
    """True when the window kept the summary it was offered (False when it did not fit, or had none)."""
    return not any(d.ref == SUMMARY_REF for d in window.stats.dropped)


def summary_stats(summary: SummaryRecord | None, window: WindowResult) -> dict[str, Any] | None:
    """What window stats say about the summary: the range it covers, its size, whether it was sent."""
    if summary is None:
        return None
    return {
        "from_seq": summary.from_seq,
        "to_seq": summary.to_seq,
        "tokens": summary.tokens,
        "model": summary.model,
        "created_at": summary.created_at,
        "rounds": summary.rounds,
        # COST-2: what summarizing this conversation has cost, every round together (micro-dollars).
        "cost_micros": summary.cost_total_micros,
        "included": summary_included(window),
    }
