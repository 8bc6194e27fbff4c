"""Long-term facts (MEM-30..37): extraction of durable facts and preferences off the table's stream.

Off by default (FACTS_EXTRACTION=off). With `opt_in`, a conversation whose window policy asks for facts
(`"facts": true` or `{"max_tokens": N}`) is extracted from; with `all`, every conversation is but one whose
policy says `"facts": false` or `{"extract": false}`. On each turn-ended record (after usage and the
summary), the conversation's messages newer than its mark are shown to the model with the owner's
current facts; it answers add/update/delete operations as JSON (engine.facts validates them). A valid
answer is stored whole, with the mark moved and the call charged to the owner's usage, in one
transaction; a malformed one is logged and asked again once, then the batch fails so the stream retries
it. Nothing half is ever stored, and a turn is extracted once (the mark's condition).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.chat import budgets, prices
from chat_core.chat.summaries import conversations_in
from chat_core.engine import tokens
from chat_core.engine.fact_ops import Fact, MalformedOperations, Source, parse_operations, plan
from chat_core.errors import BudgetExceeded, ChatError, ProviderFailed, StoreUnavailable
from chat_core.llm.completion import time_budget_from_context
from chat_core.llm.offline_facts import FACTS_PROMPT_MARKER
from chat_core.llm.provider import get_provider
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as conversation_store
from chat_core.store import fact_items as store
from chat_core.store.keys import new_id
from chat_core.store.records import ConversationRecord, MessageRecord
from chat_core.store.summary_item import iter_messages

#: Without a mark yet, extraction starts with this many newest messages (not the whole history).
FIRST_MESSAGES: Final = 10
#: Times the model is asked when its answer is malformed, before the batch fails (and is retried).
ANSWER_ATTEMPTS: Final = 2
#: The extraction call's output cap (tokens).
OUTPUT_TOKENS: Final = 1000
_STORE_MARGIN_S: Final = 5.0

INSTRUCTIONS = (
    FACTS_PROMPT_MARKER + " You keep a list of durable facts about the user and their preferences, "
    "for later conversations. You get the current facts (with ids) and new messages (with ids) as JSON. "
    'Answer with JSON only: {"operations": [...]} where each operation is one of '
    '{"op": "add", "text": "...", "kind": "fact" | "preference", "sources": ["<message id>", ...]}, '
    '{"op": "update", "id": "<fact id>", "text": "...", "kind": "...", "sources": [...]} when a message '
    'changes or contradicts a current fact, {"op": "delete", "id": "<fact id>", "sources": [...]} when one '
    "no longer holds. Keep only what stays true beyond this conversation (names, places, work, lasting "
    "preferences), one short third-person sentence per fact, never secrets such as passwords. Sources are "
    'the ids of the messages a fact comes from. No operations: {"operations": []}.'
)


class FactsFailed(ChatError):
    """The facts of a conversation could not be extracted now; nothing was stored, the stream retries."""

    code = "facts_failed"


@dataclass(frozen=True)
class FactsOutcome:
    conversation_id: str
    status: str
    to_seq: int | None = None
    added: int = 0
    changed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def facts_spec(policy: Any) -> Any:
    """The `facts` entry of a window policy (None when it has none)."""
    return policy.get("facts") if isinstance(policy, Mapping) else None


def extraction_wanted(conversation: ConversationRecord, settings: Settings) -> bool:
    """Whether this conversation's turns are extracted (the deployment's mode, then its policy)."""
    mode = settings.facts_extraction
    spec = facts_spec(conversation.window_policy)
    if mode == "off" or spec is False or (isinstance(spec, Mapping) and spec.get("extract") is False):
        return False
    return mode == "all" or bool(spec)


def _usable(message: MessageRecord) -> bool:
    return (
        message.deleted_at is None
        and message.status == "ok"
        and message.role in ("user", "assistant")
        and bool(message.content)
    )


def _request(
    current: Sequence[Fact], messages: Sequence[MessageRecord], model: str, settings: Settings
) -> tuple[list[dict[str, str]], list[MessageRecord], int]:
    """The prompt, the messages it holds (oldest first, within the input budget) and its token count."""
    shown_facts = [{"id": f.fact_id, "text": f.text, "kind": f.kind} for f in current]
    used = tokens.count_tokens(INSTRUCTIONS, model) + tokens.count_tokens(json.dumps(shown_facts), model) + 32
    kept: list[MessageRecord] = []
    for message in messages:
        cost = tokens.count_tokens(message.content or "", model) + 16
        if kept and used + cost > settings.facts_input_max_tokens:
            break
        kept.append(message)
        used += cost
    body = {
        "current_facts": shown_facts,
        "messages": [{"id": m.message_id, "role": m.role, "text": m.content or ""} for m in kept],
    }
    prompt = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": json.dumps(body, ensure_ascii=False)},
    ]
    return prompt, kept, used


def _ask(
    prompt: list[dict[str, str]],
    current: Mapping[str, Fact],
    shown: Sequence[MessageRecord],
    model: str,
    budget: float | None,
    settings: Settings,
    conversation_id: str,
) -> tuple[Any, list[Any]]:
    """The model's completion and its validated operations (asked again once when malformed)."""
    ids = [m.message_id for m in shown]
    for attempt in range(1, ANSWER_ATTEMPTS + 1):
        try:
            completion = get_provider(settings).complete(
                prompt,
                model=model,
                time_budget_s=budget,
                options={"max_completion_tokens": OUTPUT_TOKENS},
            )
        except ProviderFailed as exc:
            metrics.add_metric(name="FactsFailures", unit=MetricUnit.Count, value=1)
            raise FactsFailed(
                f"the model could not extract facts from conversation {conversation_id}: {exc.message}",
                conversation_id=conversation_id,
                kind=exc.kind,
            ) from exc
        try:
            return completion, parse_operations(completion.content, current=current, message_ids=ids)
        except MalformedOperations as exc:
            metrics.add_metric(name="FactsMalformedAnswers", unit=MetricUnit.Count, value=1)
            logger.warning(
                "facts answer malformed; nothing stored",
                conversation_id=conversation_id,
                attempt=attempt,
                reason=str(exc),
                answer=completion.content[:500],
            )
    raise FactsFailed(
        f"the model's facts answer for conversation {conversation_id} was malformed; the stream retries",
        conversation_id=conversation_id,
        kind="malformed",
    )


def _charge(completion: Any, model: str, input_tokens: int, settings: Settings) -> Any:
    """COST-2/COST-3: the extraction call priced as a summary's is (reported usage, else local counts)."""
    reported = completion.usage_reported
    return prices.charge(
        completion.model or model,
        completion.usage.prompt_tokens if reported else input_tokens,
        completion.usage.completion_tokens if reported else tokens.count_tokens(completion.content, model),
        completion.extras if reported else None,
        estimated=not reported,
        settings=settings,
    )


def extract_conversation(
    owner: str, conversation_id: str, *, context: Any = None, settings: Settings | None = None
) -> FactsOutcome:
    """Extract the facts of a conversation's turns since its mark (one model call at most).

    Raises FactsFailed (the model failed or kept answering malformed JSON) and StoreUnavailable; a
    replay that finds the mark moved is not an error.
    """
    settings = settings or get_settings()
    if settings.facts_extraction == "off":
        return FactsOutcome(conversation_id, "disabled")
    conversation = conversation_store.get_conversation(owner, conversation_id)
    if conversation is None or conversation.is_deleted:
        return FactsOutcome(conversation_id, "no_conversation")
    if not extraction_wanted(conversation, settings):
        return FactsOutcome(conversation_id, "not_wanted")
    last_seq = conversation.next_seq - 1
    facts, marks = store.read_all(owner)
    mark = marks.get(conversation_id)
    first = mark + 1 if mark is not None else max(1, last_seq - FIRST_MESSAGES + 1)
    if first > last_seq:
        return FactsOutcome(conversation_id, "up_to_date", to_seq=mark)
    try:
        budgets.check(owner, settings)
    except BudgetExceeded:
        # COST-4: the owner's budget is spent; the turns wait (the mark stays) until it resets.
        return FactsOutcome(conversation_id, "over_budget")
    span = list(iter_messages(owner, conversation_id, first, last_seq))
    usable = [m for m in span if _usable(m)]
    newest = sorted((f for f in facts if f.active), key=lambda f: f.created_at, reverse=True)
    # Deletion really deletes (MEM-34): facts whose sources are all gone are neither shown nor kept.
    considered = newest[: settings.facts_max_current]
    standing = store.live_messages(owner, [s for f in considered for s in f.sources])
    current = [f for f in considered if any((s.conversation_id, s.seq) in standing for s in f.sources)]
    forgotten = [f.fact_id for f in considered if f not in current]
    now = _now()
    if not usable:
        store.save_extraction(
            owner,
            conversation_id,
            created=[],
            changed=[],
            previous_mark=mark,
            to_seq=last_seq,
            now=now,
            charge=None,
            forgotten=forgotten,
        )
        return FactsOutcome(conversation_id, "nothing_new", to_seq=last_seq)
    model = settings.facts_model or conversation.model
    prompt, shown, input_tokens = _request(current, usable, model, settings)
    to_seq = shown[-1].seq if len(shown) < len(usable) else last_seq
    budget = time_budget_from_context(context, safety_margin_s=_STORE_MARGIN_S)
    started = time.monotonic()
    by_id = {f.fact_id: f for f in current}
    completion, operations = _ask(prompt, by_id, shown, model, budget, settings, conversation_id)
    sources = {m.message_id: Source(conversation_id, m.message_id, m.seq) for m in shown}
    changes = plan(
        operations, current=by_id, messages=sources, now=now, new_id=new_id, model=completion.model or model
    )
    charge = _charge(completion, model, input_tokens, settings)
    try:
        store.save_extraction(
            owner,
            conversation_id,
            created=changes.created,
            changed=changes.changed,
            previous_mark=mark,
            to_seq=to_seq,
            now=now,
            charge=(now[:10], charge),
            forgotten=forgotten,
        )
    except store.MarkMoved:
        logger.info("facts already extracted; left as stored", conversation_id=conversation_id)
        return FactsOutcome(conversation_id, "superseded")
    metrics.add_metric(name="FactsWritten", unit=MetricUnit.Count, value=len(changes.created))
    logger.info(
        "facts extracted",
        conversation_id=conversation_id,
        to_seq=to_seq,
        added=len(changes.created),
        changed=len(changes.changed),
        latency_ms=round((time.monotonic() - started) * 1000, 1),
    )
    return FactsOutcome(conversation_id, "extracted", to_seq, len(changes.created), len(changes.changed))


def process_stream(
    records: Sequence[Mapping[str, Any]],
    *,
    targets: Sequence[tuple[str, str]] | None = None,
    context: Any = None,
    settings: Settings | None = None,
) -> dict[str, Any] | None:
    """Extract facts for every conversation that ended a turn in a stream batch (None while extraction
    is off), or for `targets` (the handler leaves out the turns of store: false responses, RSP-9, whose
    partition their request deletes: an extraction that read it just before would store a fact of a
    turn never kept). Each is tried; FactsFailed is raised at the end if any failed, so Lambda retries
    the batch."""
    settings = settings or get_settings()
    if settings.facts_extraction == "off":
        return None
    targets = conversations_in(records) if targets is None else targets
    outcomes: list[FactsOutcome] = []
    failures: list[dict[str, Any]] = []
    for owner, conversation_id in targets:
        try:
            outcomes.append(extract_conversation(owner, conversation_id, context=context, settings=settings))
        except (FactsFailed, StoreUnavailable) as exc:
            failures.append({"conversation_id": conversation_id, "code": exc.code, "error": exc.message})
    if failures:
        raise FactsFailed(
            f"{len(failures)} of {len(targets)} conversation(s) could not be extracted; the stream retries",
            failures=failures,
        )
    return {
        "conversations": len(targets),
        "extracted": sum(1 for o in outcomes if o.status == "extracted"),
        "outcomes": [o.to_dict() for o in outcomes],
    }
