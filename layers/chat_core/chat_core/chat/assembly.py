"""The context window a post sends: stored history, pins and summary through the one selection engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from chat_core.chat import memory, paths, summary_window
from chat_core.chat.commands import BuildWindow
from chat_core.chat.generation import NO_SETTINGS, TurnSettings, turn_settings
from chat_core.chat.inspector import inspect_window
from chat_core.chat.policy import count_message, first_reach, history_reach, short_of_budget, window_policy
from chat_core.chat.recall import across as recall_across
from chat_core.chat.recall import hybrid as recall_hybrid
from chat_core.chat.recall.in_window import Recalled, recall_messages, recall_option
from chat_core.chat.rules import check_id, check_parts, conversation_of, not_found
from chat_core.engine import recall, tokens
from chat_core.engine.costs import Charge
from chat_core.engine.models import model_context
from chat_core.engine.recall import packing
from chat_core.engine.window import WindowPolicy, WindowResult, message_text, select_window, to_openai
from chat_core.observability import MetricUnit, metrics
from chat_core.store import conversations as store
from chat_core.store.records import ConversationRecord, MessageRecord, SummaryRecord


def read_history(
    owner: str, conversation_id: str, override: Mapping[str, Any] | None, *, leaf: int | None = None
) -> store.Recent:
    """API-4: one Query for the conversation and the newest messages its window can use.

    Only a conversation whose own policy reaches past the default 10 messages, and that has that many,
    costs a second Query (still independent of the conversation's length). A budget-only policy reads
    what its budget can use, and one Query more only when that falls short (API-24). A branched
    conversation's history is its active path (API-18): one more Query per branch point the window
    reaches past; `leaf` reads the path ending there instead (an edit or a regeneration continues from it).
    """
    reach = first_reach(override) if override else history_reach(None)
    recent = store.read_recent(owner, conversation_id, reach)
    conversation = recent.conversation
    if conversation is None or conversation.is_deleted:
        raise not_found(conversation_id)
    stored = override or conversation.window_policy
    wanted = first_reach(stored)
    if conversation.active_leaf is not None or leaf is not None:
        # API-24 on a path: what the read holds, when it covers the budget; else the walk reads on.
        if wanted < history_reach(stored):
            walked = paths.active_history(recent, wanted, leaf=leaf, max_queries=0)
            if not short_of_budget(stored, walked.messages):
                return walked
        return paths.active_history(recent, history_reach(stored), leaf=leaf)
    if wanted > reach and not recent.exhaustive:
        recent = store.read_recent(owner, conversation_id, wanted)
        if recent.conversation is None or recent.conversation.is_deleted:
            raise not_found(conversation_id)
    return paths.active_history(_fill_budget(owner, conversation_id, recent, stored), history_reach(stored))


def _fill_budget(
    owner: str, conversation_id: str, recent: store.Recent, stored: Mapping[str, Any] | None
) -> store.Recent:
    """API-24: a budget-only policy's first read sized by estimate (`first_reach`): when its messages
    fall short of the budget, one more Query reads the older ones, up to `history_reach` in all."""
    messages = recent.messages
    room = history_reach(stored) - len(messages)
    if recent.exhaustive or room <= 0 or not messages or not short_of_budget(stored, paths.live(messages)):
        return recent
    if recent.summary is not None and messages[0].seq <= recent.summary.to_seq + 1:
        return recent  # what is older is the summary's: the window never sends it
    older = store.read_recent(owner, conversation_id, room, before_seq=messages[0].seq)
    return replace(recent, messages=[*older.messages, *messages], exhaustive=older.exhaustive)


def _window_message(message: MessageRecord) -> dict[str, Any]:
    """A stored message as the window engine takes it: OpenAI keys plus bookkeeping (tokens, pinned...)."""
    window: dict[str, Any] = {
        "role": message.role,
        # A refusal (API-10) is sent back as what the model said; content parts (API-15) as sent.
        "content": message.parts or message.content or message.refusal or "",
        "tokens": message.tokens,
        "message_id": message.message_id,
        "seq": message.seq,
    }
    if message.tool_calls:
        window["tool_calls"] = list(message.tool_calls)
        window["content"] = message.content or None
    if message.tool_call_id:
        window["tool_call_id"] = message.tool_call_id
    if message.name and message.role != "tool":
        window["name"] = message.name
    if message.pinned:
        window["pinned"] = True
    counted_with = getattr(message, "tokens_encoding", None)  # the tokenizer of `tokens`, once recorded
    if counted_with:
        window["tokens_encoding"] = counted_with
    return window


def _pinned_messages(
    conversation: ConversationRecord, history: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """WIN-3: the conversation's pinned messages older than the history the Query returned (copies kept on
    the conversation item, oldest first); pinned messages inside that history are flagged there instead."""
    in_history = {m["message_id"] for m in history}
    pinned = []
    for entry in sorted(conversation.pinned or [], key=lambda e: int(e.get("seq", 0))):
        if entry.get("message_id") in in_history:
            continue
        message = {
            "role": entry["role"],
            "content": entry.get("content") or "",
            "tokens": int(entry.get("tokens") or 0),
            "message_id": entry["message_id"],
            "seq": int(entry.get("seq", 0)),
            "pinned": True,
        }
        if entry.get("name"):
            message["name"] = entry["name"]
        pinned.append(message)
    return pinned


def _room_for_tail(policy: WindowPolicy, tail: Sequence[Mapping[str, Any]]) -> WindowPolicy:
    """The policy for the history before `tail`, which is always sent (like the current message is)."""
    changes: dict[str, Any] = {}
    if policy.max_messages is not None:
        changes["max_messages"] = max(0, policy.max_messages - len(tail))
    if policy.max_chars is not None:
        changes["max_chars"] = max(0, policy.max_chars - sum(len(message_text(m)) for m in tail))
    budget = policy.token_budget
    if budget is not None:
        count = policy.token_counter()
        changes["max_tokens"] = max(0, budget - sum(count(m) for m in tail))
    return policy.with_changes(**changes) if changes else policy


def _room_for_settings(policy: WindowPolicy, generation: TurnSettings, model: str) -> WindowPolicy:
    """API-11, TOK-8: a turn with tools or a reply size keeps the model's context for them: the tools
    take their tokens off the context, the reply size is the reserve (else the model's usual reserve)."""
    if not generation.tool_tokens and generation.reply_tokens is None:
        return policy
    limits = model_context(model)
    reserve = generation.reply_tokens if generation.reply_tokens is not None else limits.reserve_tokens
    return policy.with_changes(
        context_length=max(0, limits.context_length - generation.tool_tokens), reserve_tokens=reserve
    )


@dataclass(frozen=True)
class AssembledWindow:
    """The window to send and its local prompt count: the stored counts of what it holds (TOK-5)."""

    result: WindowResult
    prompt_tokens: int
    #: MEM-35: the known-facts block it carries, if its policy asked for one (memory.facts_block).
    facts: Mapping[str, Any] | None = None
    #: MEM-6: the older messages recall brought (sent unless the budget dropped them), oldest first.
    recalled: tuple[Recalled, ...] = ()
    #: MEM-13: the block of the caller's other conversations (recall's scope "all").
    across: Mapping[str, Any] | None = None
    #: MEM-50: model calls the window made (the current message's embedding), not charged yet: a post's
    #: reply carries them, the window route charges them itself.
    charges: tuple[Charge, ...] = ()
    #: MEM-54: recall's best units that did not fit its budget (skipped whole, never cut).
    did_not_fit: tuple[packing.Unit, ...] = ()


@dataclass(frozen=True)
class RecallSource:
    """What recall needs besides the window's inputs: the owner and every message the post's Query read."""

    owner: str
    read: Sequence[MessageRecord]


def _with_recalled(
    policy: WindowPolicy,
    recalled: Sequence[Recalled],
    usable: list[dict[str, Any]],
    pinned: list[dict[str, Any]],
) -> tuple[WindowPolicy, list[dict[str, Any]], list[dict[str, Any]]]:
    """The second selection's inputs: recalled messages join the pinned ones (kept first, in seq order,
    never counted by the policy's caps), and leave the history the recency window walks."""
    extra = [_window_message(r.message) | {"recalled": True} for r in recalled]
    ids = {m["message_id"] for m in extra}
    changes: dict[str, Any] = {}
    if policy.max_messages is not None:
        changes["max_messages"] = policy.max_messages + len(extra)
    if policy.max_chars is not None:
        changes["max_chars"] = policy.max_chars + sum(len(message_text(m)) for m in extra)
    policy = policy.with_changes(**changes) if changes else policy
    together = sorted([*pinned, *extra], key=lambda m: int(m["seq"]))
    return policy, [m for m in usable if m["message_id"] not in ids], together


def assemble_window(
    conversation: ConversationRecord,
    history: Sequence[MessageRecord],
    content: str | list[dict[str, Any]] | None,
    user: MessageRecord | None,
    model: str,
    policy_override: Mapping[str, Any] | None = None,
    *,
    summary: SummaryRecord | None = None,
    tail_from_seq: int | None = None,
    generation: TurnSettings = NO_SETTINGS,
    recall_from: RecallSource | None = None,
) -> AssembledWindow:
    """The window sent with `content` (failed replies are left out of the history it chooses from).

    With a summary (seed 001) the window carries it after the system prompt and chooses only from the
    messages newer than the range it covers. Pinned messages are kept before other history (WIN-3). On
    a post of tool results (`tail_from_seq`), the tool calls and their results are sent whole in place of
    a current message, and the history before them fills what room is left. The turn's tools and reply
    size (`generation`) take their room out of the model's context first. With the policy's `recall`
    (MEM-6) and a `recall_from`, older messages relevant to `content` join the window before the
    recency window, within recall's share of the budget.
    """

    stored_policy = policy_override or conversation.window_policy
    policy = _room_for_settings(window_policy(stored_policy, model), generation, model)
    policy, facts = memory.with_facts(conversation.owner, stored_policy, policy, model)
    system = None
    system_tokens = 0
    if conversation.system_prompt:
        system_tokens = conversation.system_tokens
        system = {"role": "system", "content": conversation.system_prompt, "tokens": system_tokens}
    usable = [_window_message(m) for m in summary_window.after_summary(history, summary) if m.status == "ok"]
    pinned = _pinned_messages(conversation, usable)
    if pinned or any(m.get("pinned") for m in usable):
        policy = policy.with_changes(honor_pinned=True)
    carried = summary_window.summary_message(summary) if summary is not None else None
    current: dict[str, Any] | None = None
    tail: list[dict[str, Any]] = []
    if tail_from_seq is None:
        current = {"role": "user", "content": content or ""}
        current["tokens"] = user.tokens if user is not None else count_message(current, model)
        if user is not None:
            current["message_id"] = user.message_id
    else:
        cut = next((i for i, m in enumerate(usable) if m["seq"] >= tail_from_seq), len(usable))
        usable, tail = usable[:cut], usable[cut:]
        policy = _room_for_tail(policy, tail)
    recalled: list[Recalled] = []
    did_not_fit: tuple[packing.Unit, ...] = ()
    charge: Charge | None = None
    across: dict[str, Any] | None = None
    option = recall_option(stored_policy)
    if option is not None and recall_from is not None and current is not None:
        share = option.budget(policy.token_budget)
        if policy.token_budget is not None:
            # MEM-54: recall's share is taken from the room the window has once what it always carries
            # (reply priming, system prompt, summary, pinned messages, the current message) is in, or
            # the second selection would drop recalled hits for lack of room, keeping their neighbours.
            fixed = policy.priming_tokens + system_tokens + int(current["tokens"])
            fixed += sum(int(m["tokens"]) for m in pinned)
            if carried is not None:
                fixed += int(carried["tokens"])
            share = min(share, max(0, policy.token_budget - fixed))
        query = message_text(current)
        semantic = option.semantic
        embedded: recall_hybrid.QueryEmbedding | None = None
        if option.scope == "all":  # MEM-13: half the share for the caller's other conversations
            if semantic and recall_hybrid.enabled() and recall.query_terms(query):
                # One embedding for both recalls (MEM-51); when it fails both are BM25's alone.
                embedded = recall_hybrid.embed_query(query)
                semantic = embedded is not None
            with recall_hybrid.charged_if_failed(recall_from.owner, embedded):
                across = recall_across.across_block(
                    recall_from.owner, conversation.conversation_id, query, share // 2, model, embedded
                )
            if across is not None:
                share -= int(across["tokens"])
                if policy.token_budget is not None:
                    policy = policy.with_changes(
                        max_tokens=max(0, policy.token_budget - int(across["tokens"]))
                    )
        first = policy
        if policy.token_budget is not None:
            first = policy.with_changes(max_tokens=max(0, policy.token_budget - share))
        recency = select_window(
            history=usable, policy=first, system=system, current=current, pinned=pinned, summary=carried
        )
        left_out = {d.ref for d in recency.stats.dropped}
        sent_seqs = {int(m["seq"]) for m in (*pinned, *usable) if m["message_id"] not in left_out}
        if user is not None:
            sent_seqs.add(user.seq)
        with recall_hybrid.charged_if_failed(recall_from.owner, embedded):
            found = recall_messages(
                recall_from.owner,
                conversation,
                history,
                recall_from.read,
                query,
                sent_seqs,
                share,
                semantic=semantic,
                embedded=embedded,
            )
        recalled, did_not_fit = found.recalled, found.did_not_fit
        charge = embedded.charge if embedded is not None else found.charge
        if recalled:
            policy, usable, pinned = _with_recalled(policy, recalled, usable, pinned)
    result = select_window(
        history=usable, policy=policy, system=system, current=current, pinned=pinned, summary=carried
    )
    if tail:
        result = WindowResult(result.messages + [to_openai(m) for m in tail], result.stats)
    result = memory.insert_block(memory.insert_block(result, across), facts)
    dropped = {d.ref for d in result.stats.dropped}
    sent = [m for m in (*pinned, *usable) if m["message_id"] not in dropped]
    prompt = system_tokens + sum(int(m["tokens"]) for m in (*sent, *tail))
    if current is not None:
        prompt += int(current["tokens"])
    if summary is not None and summary_window.summary_included(result):
        prompt += summary.tokens
    # Tool definitions are billed as prompt tokens (TOK-8).
    # The stored counts are exact counts for `model`, so is the reply priming (a family's own header).
    prompt += sum(int(block["tokens"]) for block in (facts, across) if block is not None)
    return AssembledWindow(
        result,
        prompt + tokens.reply_priming_tokens(model=model) + generation.tool_tokens,
        facts,
        tuple(recalled),
        across,
        (charge,) if charge is not None else (),
        did_not_fit,
    )


def recall_stats(
    recalled: Sequence[Recalled], window: WindowResult, did_not_fit: Sequence[packing.Unit] = ()
) -> dict[str, Any]:
    """MEM-8: how many recalled messages the window sends and their stored tokens (MEM-53: how many came
    as a hit's neighbours); MEM-54: the hits that did not fit, skipped whole rather than cut."""
    dropped = {d.ref for d in window.stats.dropped}
    sent = [r for r in recalled if r.message.message_id not in dropped]
    stats: dict[str, Any] = {
        "messages": len(sent),
        "tokens": sum(r.message.tokens for r in sent),
        "neighbours": sum(1 for r in sent if r.neighbour_of is not None),
    }
    if did_not_fit:
        stats["did_not_fit"] = [
            {"seqs": list(u.seqs), "tokens": u.tokens, "score": round(u.score, 4)} for u in did_not_fit
        ]
    return stats


def build_window(owner: str, conversation_id: str, request: BuildWindow) -> dict[str, Any]:
    """POST /conversations/{id}/window: the window a post of `content` would send; no model call, no write."""

    check_parts(request.text, request.parts)
    check_id(conversation_id)
    override = request.window_policy
    recent = read_history(owner, conversation_id, override)
    conversation = conversation_of(recent.conversation, conversation_id)
    model = request.model or conversation.model
    generation = turn_settings(conversation.defaults, request.settings, model)
    assembled = assemble_window(
        conversation,
        recent.messages,
        request.for_model(),
        None,
        model,
        override,
        summary=recent.summary,
        generation=generation,
        recall_from=RecallSource(owner, recent.read),
    )
    recall_hybrid.charge_now(owner, assembled.charges)  # no reply carries them: charged here
    window = assembled.result
    inspected = inspect_window(
        conversation,
        recent.messages,
        recent.summary,
        window,
        model,
        generation,
        recalled=assembled.recalled,
        blocks=(assembled.facts, assembled.across),
    )
    metrics.add_metric(name="WindowsBuilt", unit=MetricUnit.Count, value=1)
    stats = window.stats.to_dict()
    stats["model"] = model
    stats["summary"] = summary_window.summary_stats(recent.summary, window)
    stats.update(generation.window_stats())
    if assembled.facts is not None:
        stats["facts"] = {"included": len(assembled.facts["facts"]), "tokens": assembled.facts["tokens"]}
    if assembled.recalled or assembled.across is not None or assembled.did_not_fit:
        stats["recall"] = recall_stats(assembled.recalled, window, assembled.did_not_fit)
    if assembled.across is not None:
        stats["recall"]["across"] = {
            "entries": assembled.across["entries"],
            "tokens": assembled.across["tokens"],
        }
    # What the model call would carry besides the messages (API-11), the reply size as clamped.
    return {
        "messages": window.messages,
        "settings": generation.options,
        "stats": stats,
        # WIN-6: message by message, what the window kept, dropped (and why) or left to the summary.
        "inspect": inspected,
    }
