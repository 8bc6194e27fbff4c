"""WIN-6: what a window did with each message it could choose from, for the console's inspector.

The window route answers the messages it would send; this says, message by message, which stored
messages were kept, dropped (with the engine's reason), stood for by the summary, or left out as failed
replies, with each one's stored token count, its pin, and the tool call it travels with. Pure: it reads
what `assembly.build_window` already has, so the inspector costs no extra DynamoDB call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from chat_core.chat import summary_window
from chat_core.chat.generation import TurnSettings
from chat_core.chat.recall.in_window import Recalled
from chat_core.engine.models import model_context
from chat_core.engine.window import WindowResult, message_text
from chat_core.store.records import ConversationRecord, MessageRecord, SummaryRecord

#: Characters of each message's text the inspector carries (the console shows a line per message).
PREVIEW_CHARS: Final = 160


def _preview(message: dict[str, Any]) -> str:
    text = message_text(message) or ""
    if not text and message.get("tool_calls"):
        text = ", ".join(str(c.get("function", {}).get("name", "")) for c in message["tool_calls"])
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _tool_groups(history: Sequence[MessageRecord]) -> dict[str, str]:
    """message_id -> the message_id of the assistant tool call it is kept or dropped with."""
    owner_of_call: dict[str, str] = {}
    groups: dict[str, str] = {}
    for message in history:
        if message.tool_calls:
            groups[message.message_id] = message.message_id
            for call in message.tool_calls:
                owner_of_call[str(call.get("id"))] = message.message_id
        elif message.tool_call_id and message.tool_call_id in owner_of_call:
            groups[message.message_id] = owner_of_call[message.tool_call_id]
    return groups


def _row(
    message_id: str | None,
    seq: int,
    role: str,
    tokens: int,
    state: str,
    reason: str | None,
    *,
    pinned: bool,
    group: str | None,
    preview: str,
) -> dict[str, Any]:
    """One inspector entry (the shape every entry has, whatever it stands for)."""
    return {
        "message_id": message_id,
        "seq": seq,
        "role": role,
        "tokens": tokens,
        "state": state,
        "reason": reason,
        "pinned": pinned,
        "tool_group": group,
        "preview": preview,
    }


def _entry(message: MessageRecord, state: str, reason: str | None, group: str | None) -> dict[str, Any]:
    view: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.tool_calls:
        view["tool_calls"] = list(message.tool_calls)
    return _row(
        message.message_id,
        message.seq,
        message.role,
        message.tokens,
        state,
        reason,
        pinned=bool(message.pinned),
        group=group,
        preview=_preview(view),
    )


def _mark_recalled(
    entries: list[dict[str, Any]],
    recalled: Sequence[Recalled],
    dropped: dict[str | int, str],
    groups: dict[str, str],
) -> None:
    """Recalled messages as entries: the history's own rows re-marked, the fetched ones added."""
    by_id = {e["message_id"]: e for e in entries if e["message_id"] is not None}
    for item in recalled:
        message = item.message
        ref = message.message_id
        state, reason = ("dropped", dropped[ref]) if ref in dropped else ("recalled", "recall")
        row = _entry(message, state, reason, groups.get(ref))
        row["recalled"] = True
        row["score"] = round(item.score, 4)
        if item.neighbour_of is not None:  # MEM-53: brought as the turn next to a hit
            row["neighbour_of"] = item.neighbour_of
        if ref in by_id:
            by_id[ref].update(row)
        else:
            entries.append(row)


def inspect_window(
    conversation: ConversationRecord,
    history: Sequence[MessageRecord],
    summary: SummaryRecord | None,
    window: WindowResult,
    model: str,
    generation: TurnSettings,
    *,
    recalled: Sequence[Recalled] = (),
    blocks: Sequence[Mapping[str, Any] | None] = (),
) -> dict[str, Any]:
    """Per message: `state` kept / dropped / summarised / failed / recalled; the summary (its text and
    range) and the budget line. The labelled system blocks the window carries (`blocks`: the known facts,
    MEM-35; the caller's other conversations, MEM-13) are rows after the system prompt, `kept`, with the
    reason `facts` or `across`.

    A message recall brought (MEM-8) is `recalled` with its BM25 `score` (or `dropped` with it, when
    the budget left it out), wherever it came from: the history read, or fetched by recall.

    `entries` are oldest first: the system prompt, then the stored messages the window read (pinned
    copies from the conversation item included); the message being sent counts in `tokens_used` only.
    """
    dropped = {d.ref: d.reason for d in window.stats.dropped}
    covered = summary.to_seq if summary is not None else 0
    groups = _tool_groups(history)
    entries: list[dict[str, Any]] = []
    if conversation.system_prompt:
        preview = _preview({"content": conversation.system_prompt})
        tokens = conversation.system_tokens
        reason = "system prompt (always kept)"
        entries.append(
            _row(None, 0, "system", tokens, "kept", reason, pinned=False, group=None, preview=preview)
        )
    for block in blocks:
        if block is None:
            continue
        kind = "facts" if "facts" in block else "across"
        text = _preview({"content": block["content"]})
        row = _row(
            None, 0, "system", int(block["tokens"]), "kept", kind, pinned=False, group=None, preview=text
        )
        row["block"] = {"kind": kind, "items": len(block["facts" if kind == "facts" else "entries"])}
        entries.append(row)
    seen = {m.message_id for m in history}
    for pin in sorted(conversation.pinned or [], key=lambda e: int(e.get("seq", 0))):
        if pin.get("message_id") in seen:
            continue
        ref = str(pin["message_id"])
        entries.append(
            _row(
                ref,
                int(pin.get("seq", 0)),
                pin["role"],
                int(pin.get("tokens") or 0),
                "dropped" if ref in dropped else "kept",
                dropped.get(ref, "pinned"),
                pinned=True,
                group=None,
                preview=_preview({"content": pin.get("content") or ""}),
            )
        )
    for message in history:
        group = groups.get(message.message_id)
        if message.status != "ok":
            entries.append(_entry(message, "failed", f"reply {message.status}: never sent", group))
        elif message.seq <= covered:
            entries.append(_entry(message, "summarised", f"in the summary of messages 1–{covered}", group))
        elif message.message_id in dropped:
            entries.append(_entry(message, "dropped", dropped[message.message_id], group))
        else:
            entries.append(_entry(message, "kept", "pinned" if message.pinned else None, group))
    if recalled:
        _mark_recalled(entries, recalled, dropped, groups)
    entries.sort(key=lambda e: e["seq"])
    limits = model_context(model)
    reserve = generation.reply_tokens if generation.reply_tokens is not None else limits.reserve_tokens
    carried = None
    if summary is not None:
        carried = {
            "from_seq": summary.from_seq,
            "to_seq": covered,
            "tokens": summary.tokens,
            "text": summary.text,
            "included": summary_window.summary_included(window),
        }
    return {
        "entries": entries,
        "summary": carried,
        "budget": {
            "context_length": limits.context_length,
            "reserve_tokens": reserve,
            "token_budget": window.stats.token_budget,
            "tokens_used": window.stats.tokens_used,
        },
    }
