"""Summary compression (seed 001): a running, incremental summary of what no longer fits the window.

When a conversation's history outgrows its window by `summary_margin_messages`, the span that no longer
fits (and is not summarized yet) is summarized by the model together with the previous summary, never
from scratch, and stored as the `~SUMMARY` item with the range it covers. Windows then carry it as a
system-side message right after the system prompt, followed only by messages newer than that range.
This runs off the table's stream, after the turn is stored: it never slows or blocks a post.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from chat_core.chat import paths, prices
from chat_core.chat.policy import MAX_POLICY_MESSAGES, has_limits, window_policy
from chat_core.chat.summary_window import after_summary, summary_content, summary_message
from chat_core.engine import tokens
from chat_core.engine.window import select_window
from chat_core.errors import ProviderFailed, StoreUnavailable, SummaryFailed
from chat_core.llm.completion import time_budget_from_context
from chat_core.llm.provider import get_provider
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as conversation_store
from chat_core.store import summary_item as store
from chat_core.store.partitions import parse_conversation_pk
from chat_core.store.records import ConversationRecord, MessageRecord, SummaryRecord
from chat_core.store.summary_item import SummarySuperseded

# Tokens a rendered message line costs beyond its text ("[12] assistant: " and the newline), budgeted.
_LINE_OVERHEAD_TOKENS = 8
# Seconds kept free after the model call to store the summary before the function's deadline.
_STORE_MARGIN_S = 5.0
# Reach of the one Query that reads the conversation (the default window's 10 messages).
_FIRST_READ = 10

SUMMARY_INSTRUCTIONS = (
    "You maintain the running summary of a conversation between a user and an assistant, so the "
    "conversation can go on after its earliest messages leave the model's context window. Merge the "
    "previous summary (if any) and the new messages into one updated summary. Keep what later turns may "
    "need: facts, names, numbers, decisions, the user's goals and preferences, tool results, open "
    "questions. Leave out small talk. Write in the language of the conversation, as short plain prose "
    "or bullet points, at most about {words} words. Reply with the summary only."
)

Status = Literal["summarized", "not_needed", "disabled", "no_conversation", "superseded"]


# -- deciding and summarizing -------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """The span that no longer fits the window and is not summarized yet: `first_seq..last_seq`."""

    first_seq: int
    last_seq: int

    @property
    def size(self) -> int:
        return self.last_seq - self.first_seq + 1


def pending_span(
    conversation: ConversationRecord,
    recent: Sequence[MessageRecord],
    summary: SummaryRecord | None,
    *,
    model: str,
) -> Pending | None:
    """Where the next post's window would start, and so which messages fell out of it unsummarized.

    The window is the conversation's own policy over the newest messages with the current summary in
    place and an empty prospective message. `recent` are the newest messages (oldest first), as many as
    the window can reach. None when nothing has fallen out beyond the summary.
    """

    covered = summary.to_seq if summary is not None else 0
    usable = [m for m in after_summary(recent, summary) if m.status == "ok"]
    if not usable:
        return None
    system = None
    if conversation.system_prompt:
        system = {
            "role": "system",
            "content": conversation.system_prompt,
            "tokens": conversation.system_tokens,
        }
    history = [{"role": m.role, "content": m.content or "", "tokens": m.tokens} for m in usable]
    window = select_window(
        history=history,
        policy=window_policy(conversation.window_policy, model),
        system=system,
        current={"role": "user", "content": ""},
        summary=summary_message(summary) if summary is not None else None,
    )
    kept = window.stats.kept_history
    # The kept history is the newest contiguous run; anything older than `recent` is beyond the
    # window's reach (the read took as many messages as the window can ever hold).
    first_kept = usable[len(usable) - kept].seq if kept else usable[-1].seq + 1
    if first_kept <= covered + 1:
        return None
    return Pending(covered + 1, first_kept - 1)


@dataclass(frozen=True)
class SummaryOutcome:
    """What one run did for a conversation."""

    conversation_id: str
    status: Status
    from_seq: int | None = None
    to_seq: int | None = None
    rounds: int = 0
    chunks: int = 0
    pending: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _message_text(message: MessageRecord) -> str:
    """One message as a transcript line's text: content, and any tool calls it made."""
    text = message.content or ""
    calls = message.tool_calls
    if isinstance(calls, list) and calls:
        rendered = []
        for call in calls:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            rendered.append(f"{function.get('name', '?')}({function.get('arguments', '')})")
        text = (text + "\n" if text else "") + "called " + ", ".join(rendered)
    return text


def _line(message: MessageRecord) -> str:
    role = message.role
    name = message.name
    who = f"{role} ({name})" if isinstance(name, str) and name else role
    return f"[{message.seq}] {who}: {_message_text(message)}"


#: The summary call's `max_completion_tokens`, as a multiple of SUMMARY_MAX_TOKENS.
SUMMARY_OUTPUT_FACTOR = 2


def truncate_tokens(text: str, limit: int, model: str) -> str:
    """`text` cut to at most `limit` tokens of the model's encoding (an ellipsis marks a cut)."""
    encoding = tokens.get_encoding(tokens.encoding_for_model(model))
    ids = encoding.encode_ordinary(text)
    if len(ids) <= limit:
        return text
    cut = encoding.decode(ids[: max(0, limit - 1)]).rstrip("\ufffd").rstrip()
    return cut + "\u2026"


@dataclass(frozen=True)
class SummaryRequest:
    """The messages sent to the model for one incremental step, and the range it folds in."""

    messages: list[dict[str, str]]
    first_seq: int
    last_seq: int
    lines: int
    input_tokens: int


def build_request(
    previous: SummaryRecord | None,
    span: Iterable[MessageRecord],
    pending: Pending,
    *,
    model: str,
    settings: Settings,
) -> SummaryRequest | None:
    """The summarizing prompt: the previous summary plus the newly dropped messages, within the budget.

    Messages are taken oldest first while they fit `summary_input_max_tokens`; the range ends before the
    first one that does not (the next step goes on from there). A single message too long for the
    budget on its own is cut to fit. None when the span holds nothing to summarize.
    """
    words = max(20, settings.summary_max_tokens * 3 // 4)
    instructions = SUMMARY_INSTRUCTIONS.format(words=words)
    if previous is not None:
        head = f"Previous summary (messages {previous.from_seq}\u2013{previous.to_seq}):\n"
        head += previous.text
    else:
        head = "Previous summary: none yet."
    used = tokens.count_tokens(instructions, model) + tokens.count_tokens(head, model) + 32
    budget = settings.summary_input_max_tokens
    lines: list[str] = []
    last_seq = pending.first_seq - 1
    for message in span:
        seq = message.seq
        if seq > pending.last_seq:
            break
        if message.status != "ok":
            last_seq = seq  # failed replies were never sent to the model; fold their slot in silently
            continue
        line = _line(message)
        cost = tokens.count_tokens(line, model) + _LINE_OVERHEAD_TOKENS
        if used + cost > budget:
            if lines:
                break
            line = truncate_tokens(line, max(16, budget - used - _LINE_OVERHEAD_TOKENS), model)
            cost = tokens.count_tokens(line, model) + _LINE_OVERHEAD_TOKENS
        lines.append(line)
        used += cost
        last_seq = seq
    else:
        last_seq = pending.last_seq
    if not lines:
        return None
    body = (
        f"{head}\n\nNew messages ({pending.first_seq}\u2013{last_seq}):\n"
        + "\n".join(lines)
        + "\n\nWrite the updated summary."
    )
    return SummaryRequest(
        messages=[{"role": "system", "content": instructions}, {"role": "user", "content": body}],
        first_seq=pending.first_seq,
        last_seq=last_seq,
        lines=len(lines),
        input_tokens=used,
    )


def _read(owner: str, conversation_id: str) -> conversation_store.Recent:
    """The conversation, its summary and as many newest messages as its window can reach."""

    recent = conversation_store.read_recent(owner, conversation_id, _FIRST_READ)
    conversation = recent.conversation
    if conversation is None or conversation.is_deleted:
        return recent
    reach = _FIRST_READ
    if has_limits(conversation.window_policy):
        reach = max(reach, int(conversation.window_policy.get("max_messages") or MAX_POLICY_MESSAGES))
    if conversation.active_leaf is None and reach > _FIRST_READ and len(recent.messages) >= _FIRST_READ:
        recent = conversation_store.read_recent(owner, conversation_id, reach)
    # API-18: the active path (its summary only if it stands for the path's beginning).
    return paths.active_history(recent, reach)


def step_budget(context: Any) -> float | None:
    """Seconds one step's model call may take in this invocation (the store's margin kept)."""
    return time_budget_from_context(context, safety_margin_s=_STORE_MARGIN_S)


def summarize_conversation(
    owner: str,
    conversation_id: str,
    *,
    context: Any = None,
    settings: Settings | None = None,
) -> SummaryOutcome:
    """Bring a conversation's summary up to date (seed 001), one incremental step per model call.

    Does nothing when the history still fits the window within the margin. Raises SummaryFailed when
    the model fails (the stored summary is left as it was, the stream retries) and StoreUnavailable when
    DynamoDB does. A replay or a concurrent run that finds the summary moved on is not an error.
    """
    settings = settings or get_settings()
    if not settings.summary_enabled:
        return SummaryOutcome(conversation_id, "disabled")
    recent = _read(owner, conversation_id)
    conversation = recent.conversation
    if conversation is None or conversation.is_deleted:
        return SummaryOutcome(conversation_id, "no_conversation")
    model = settings.summary_model or conversation.model
    summary = recent.summary
    # The stored summary, even when it stands for another branch: a new one replaces it conditionally.
    stored = store.get_summary(owner, conversation_id) if conversation.active_leaf is not None else summary
    outcome = SummaryOutcome(conversation_id, "not_needed")
    for chunk in range(settings.summary_max_steps):
        pending = pending_span(conversation, recent.messages, summary, model=conversation.model)
        if pending is None or pending.size < settings.summary_margin_messages:
            if chunk == 0 and pending is not None:
                outcome = SummaryOutcome(conversation_id, "not_needed", pending=pending.size)
            break
        budget = time_budget_from_context(context, safety_margin_s=_STORE_MARGIN_S)
        if chunk and budget is not None and budget < settings.llm_timeout_seconds:
            break  # the rest waits for the next turn's record rather than racing the deadline
        status, step = summarize_step(
            owner, conversation, summary, pending, model, budget, settings, stored=stored
        )
        if step is None:
            if chunk == 0:
                outcome = SummaryOutcome(conversation_id, status, pending=pending.size)
            break
        summary = stored = step
        outcome = SummaryOutcome(
            conversation_id,
            "summarized",
            from_seq=summary.from_seq,
            to_seq=summary.to_seq,
            rounds=summary.rounds,
            chunks=chunk + 1,
        )
    return outcome


def summarize_step(
    owner: str,
    conversation: ConversationRecord,
    previous: SummaryRecord | None,
    pending: Pending,
    model: str,
    time_budget_s: float | None,
    settings: Settings,
    *,
    stored: SummaryRecord | None,
) -> tuple[Status, SummaryRecord | None]:
    """One incremental step: read the span, ask the model, store conditionally (the new summary, or
    None with why nothing was stored)."""
    conversation_id = conversation.conversation_id
    span: Iterable[MessageRecord] = store.iter_messages(
        owner, conversation_id, pending.first_seq, pending.last_seq
    )
    span = (m for m in span if m.deleted_at is None)  # API-20: a deleted message is never summarized
    if conversation.active_leaf is not None:
        # API-18: only the active path's messages in the span (walked from the active leaf).
        span = [
            m
            for m in paths.live(paths.whole_path(conversation, until_seq=pending.first_seq))
            if m.seq <= pending.last_seq
        ]
    request = build_request(previous, span, pending, model=model, settings=settings)
    if request is None:
        return "not_needed", None
    started = time.monotonic()
    try:
        completion = get_provider(settings).complete(
            request.messages,
            model=model,
            time_budget_s=time_budget_s,
            # An output cap, not only a request for brevity; twice the stored length leaves a reasoning
            # model room to think (the text is cut to summary_max_tokens when stored).
            options={"max_completion_tokens": settings.summary_max_tokens * SUMMARY_OUTPUT_FACTOR},
        )
    except ProviderFailed as exc:
        metrics.add_metric(name="SummaryFailures", unit=MetricUnit.Count, value=1)
        logger.warning(
            "summary failed; the previous summary stays",
            conversation_id=conversation_id,
            kind=exc.kind,
            status_code=exc.status_code,
            error=exc.message,
        )
        raise SummaryFailed(
            f"the model could not summarize conversation {conversation_id}: {exc.message}",
            conversation_id=conversation_id,
            kind=exc.kind,
            status_code=exc.status_code,
        ) from exc
    text = truncate_tokens(completion.content.strip(), settings.summary_max_tokens, model)
    if not text:
        metrics.add_metric(name="SummaryFailures", unit=MetricUnit.Count, value=1)
        raise SummaryFailed(
            f"the model returned an empty summary for conversation {conversation_id}",
            conversation_id=conversation_id,
            kind="empty",
        )
    from_seq = previous.from_seq if previous is not None else 1
    content = summary_content(from_seq, request.last_seq, text)
    written_by = completion.model or model
    input_tokens = completion.usage.prompt_tokens or request.input_tokens
    output_tokens = completion.usage.completion_tokens
    # COST-2/COST-3: the summary's model call is priced and charged to the conversation's owner with
    # the summary's write; the summary item keeps what summarizing this conversation has cost so far.
    reported = completion.usage_reported
    charge = prices.charge(
        written_by,
        input_tokens if reported else request.input_tokens,
        output_tokens if reported else tokens.count_tokens(completion.content, model),
        completion.extras if reported else None,
        estimated=not reported,
        settings=settings,
    )
    spent_before = previous.cost_total_micros if previous is not None else 0
    item = SummaryRecord(
        conversation_id=conversation_id,
        from_seq=from_seq,
        to_seq=request.last_seq,
        text=text,
        tokens=int(
            tokens.count_message_tokens({"role": "system", "content": content}, model=conversation.model)
        ),
        model=written_by,
        created_at=_now(),
        rounds=(previous.rounds if previous is not None else 0) + 1,
        messages_covered=(previous.messages_covered if previous is not None else 0) + request.lines,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_micros=charge.cost_micros,
        cost_total_micros=spent_before + (charge.cost_micros or 0),
    )
    try:
        store.save_summary(
            item,
            previous_to_seq=stored.to_seq if stored is not None else None,
            owner=owner,
            charge=(item.created_at[:10], charge),
        )
    except SummarySuperseded:
        logger.info("summary superseded; left as stored", conversation_id=conversation_id)
        return "superseded", None
    metrics.add_metric(name="SummariesWritten", unit=MetricUnit.Count, value=1)
    logger.info(
        "summary stored",
        conversation_id=conversation_id,
        from_seq=from_seq,
        to_seq=request.last_seq,
        folded_messages=request.lines,
        tokens=item.tokens,
        rounds=item.rounds,
        latency_ms=round((time.monotonic() - started) * 1000, 1),
    )
    return "summarized", item


# -- the stream ---------------------------------------------------------------------------------------


def _image_string(record: Mapping[str, Any], image: str, name: str) -> str | None:
    value = ((record.get("dynamodb") or {}).get(image) or {}).get(name)
    return value.get("S") if isinstance(value, Mapping) else None


def is_turn_end(record: Mapping[str, Any]) -> bool:
    """The INSERT of a post's reply (an assistant message with a model, ok or error): the end of a turn,
    the one record per turn that summaries run on (the same rule as the template's FilterCriteria)."""
    return (
        record.get("eventName") == "INSERT"
        and _image_string(record, "NewImage", "type") == "message"
        and _image_string(record, "NewImage", "role") == "assistant"
        and _image_string(record, "NewImage", "model") is not None
    )


def conversations_in(records: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(owner, conversation_id) of each conversation that ended a turn in `records`, once, in order."""
    seen: dict[str, tuple[str, str]] = {}
    for record in records:
        if not is_turn_end(record):
            continue
        pk = _image_string(record, "Keys", "pk")
        parsed = parse_conversation_pk(pk) if pk else None
        if parsed is None:
            logger.warning("stream record ignored: not a conversation message", pk=pk)
            continue
        seen.setdefault(pk or "", parsed)
    return list(seen.values())


def process_stream(records: Sequence[Mapping[str, Any]], *, context: Any = None) -> dict[str, Any]:
    """Summarize every conversation that ended a turn in a stream batch.

    Each conversation is tried; if any failed, SummaryFailed is raised at the end so Lambda retries the
    batch (bisecting it, within the mapping's retry limit, then to the on-failure queue). Conversations
    already brought up to date are a cheap no-op on the retry: one Query, no model call.
    """
    targets = conversations_in(records)
    outcomes: list[SummaryOutcome] = []
    failures: list[dict[str, Any]] = []
    for owner, conversation_id in targets:
        try:
            outcomes.append(summarize_conversation(owner, conversation_id, context=context))
        except (SummaryFailed, StoreUnavailable) as exc:
            failures.append({"conversation_id": conversation_id, "code": exc.code, "error": exc.message})
    summarized = sum(1 for o in outcomes if o.status == "summarized")
    logger.info(
        "stream batch summarized",
        records=len(records),
        conversations=len(targets),
        summarized=summarized,
        failed=len(failures),
    )
    if failures:
        raise SummaryFailed(
            f"{len(failures)} of {len(targets)} conversation(s) could not be summarized; the stream retries",
            failures=failures,
        )
    return {
        "records": len(records),
        "conversations": len(targets),
        "summarized": summarized,
        "outcomes": [o.to_dict() for o in outcomes],
    }
