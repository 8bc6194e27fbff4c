"""The Responses API over our conversations (RSP-2..RSP-6): a response is an answer of a conversation.

A response chain (`previous_response_id`) and a Responses `conversation` are one of our conversations:
the turn a `POST /v1/responses` makes is an ordinary post (`chat.post.post_message`: the same window,
accounting, budgets, idempotency and turn log), so everything our own routes show of a conversation
shows it too. What a request's input adds is split here (`plan_response`): the turn's last user message
(or its tool results) and the agent steps just before it are the post; anything earlier is appended
first, as `POST /conversations/{id}/messages` would.

A `previous_response_id` that is not the conversation's newest answer continues from it as a branch
(API-18): the active path is moved to that answer before the post. Deleting a response deletes its
answer (and the results of its tool calls) from the active path; the responses after it stay, can be
read and continued, and their context no longer holds the deleted answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from chat_core.chat import (
    assembly,
    delete,
    history,
    message_removal,
    navigation,
    paths,
    reads,
    response_settings,
    retention,
)
from chat_core.chat.commands import AppendMessages, ConversationSettings
from chat_core.chat.create import conversation_for_key, new_conversation, title_from
from chat_core.chat.generation import turn_settings
from chat_core.chat.policy import count_message
from chat_core.chat.response_items import (
    InputMessages,
    items_of,
    parse_item_id,
    parse_response_id,
    pick_item,
    response_id,
)
from chat_core.chat.rules import check_parts, conversation_of, now_iso
from chat_core.chat.views import message_view
from chat_core.engine.tokens.encodings import encoding_for_model
from chat_core.errors import ConversationNotFound, InvalidInput, NotFound
from chat_core.store import conversations as store
from chat_core.store import tree
from chat_core.store.recall import index as recall_index
from chat_core.store.records import ConversationRecord, MessageRecord

#: Messages read back from an answer to find the input of its turn (a post records at most 30 steps).
TURN_REACH: Final = 40
#: The most messages of a conversation its items list walks (pages of 100).
MAX_LISTED_MESSAGES: Final = 2000


class ResponseNotFound(NotFound):
    code = "response_not_found"


class PreviousResponseNotFound(NotFound):
    code = "previous_response_not_found"


class ItemNotFound(NotFound):
    code = "item_not_found"


def missing_response(value: str) -> ResponseNotFound:
    return ResponseNotFound(f"Response with id '{value}' not found.", field="response_id")


def missing_conversation(value: str) -> ConversationNotFound:
    return ConversationNotFound(f"Conversation with id '{value}' not found.", field="conversation")


def is_answer(message: MessageRecord) -> bool:
    """An answer the model gave in a post: it was asked with a window, whose local count it keeps
    (recorded agent steps carry no model, appended answers no prompt count)."""
    asked = message.local_usage is not None and message.local_usage.prompt_tokens > 0
    return message.role == "assistant" and message.model is not None and asked and message.deleted_at is None


def find_response(owner: str, value: str) -> tuple[ConversationRecord, MessageRecord]:
    """The caller's live conversation and the answer a response id names; a malformed, unknown,
    deleted or another user's id is the same 404 (two GetItems)."""
    parsed = parse_response_id(value)
    if parsed is None:
        raise missing_response(value)
    try:
        conversation = paths.live_conversation(owner, parsed[0])
    except ConversationNotFound as exc:
        raise missing_response(value) from exc
    answer = store.get_message(owner, parsed[0], parsed[1])
    if answer is None or not is_answer(answer):
        raise missing_response(value)
    return conversation, answer


def previous_answer(owner: str, value: str) -> tuple[ConversationRecord, MessageRecord]:
    """`find_response` for a request's `previous_response_id`: its 404 names that field, as OpenAI's."""
    try:
        return find_response(owner, value)
    except ResponseNotFound as exc:
        raise PreviousResponseNotFound(
            f"Previous response with id '{value}' not found.", field="previous_response_id"
        ) from exc


def live(owner: str, conversation_id: str) -> ConversationRecord:
    try:
        return paths.live_conversation(owner, conversation_id)
    except ConversationNotFound as exc:
        raise missing_conversation(conversation_id) from exc


@dataclass
class ResponsePlan:
    """What a `POST /v1/responses` writes: the post's content and agent steps, what is appended before
    it, the conversation it continues (None: a new one) and the answer it continues from."""

    content: Any
    recorded: list[dict[str, Any]]
    prefix: list[dict[str, Any]] = field(default_factory=list)
    conversation: ConversationRecord | None = None
    previous: MessageRecord | None = None
    system_prompt: str | None = None
    title: str | None = None
    #: The request's `instructions`: this turn's only (chat.response_settings), never the system prompt.
    instructions: str | None = None


def _split(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]]]:
    """(appended first, the post's content or None, the post's recorded steps)."""
    if not messages:
        raise InvalidInput("input needs a user message or a function_call_output", field="input")
    last = messages[-1]
    end = len(messages) - 1 if last["role"] == "user" else len(messages)
    if last["role"] not in ("user", "tool"):
        raise InvalidInput(
            "the last input item must be a user message or a function_call_output", field="input"
        )
    start = end
    while start > 0 and messages[start - 1]["role"] in ("assistant", "tool"):
        start -= 1
    recorded = []
    for message in messages[start:end]:
        keys = (
            ("role", "content", "tool_calls")
            if message["role"] == "assistant"
            else ("role", "tool_call_id", "content")
        )
        recorded.append({key: message[key] for key in keys if message.get(key) is not None})
    content = last.get("content") if last["role"] == "user" else None
    return [_appended(m) for m in messages[:start]], content, recorded


def _appended(message: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("role", "content", "tool_calls", "tool_call_id", "refusal")
    kept = {key: message[key] for key in keys if message.get(key) is not None}
    if kept["role"] == "assistant" and "content" not in kept and "tool_calls" not in kept:
        kept["content"] = kept.pop("refusal", "")
    kept.pop("refusal", None)
    return kept


def plan_response(
    owner: str,
    given: InputMessages,
    *,
    previous_response_id: str | None,
    conversation_id: str | None,
    instructions: str | None,
) -> ResponsePlan:
    """RSP-2: what the request adds and where (one or two GetItems; nothing is written here)."""
    if previous_response_id is not None and conversation_id is not None:
        raise InvalidInput(
            "send previous_response_id or conversation, not both", field="previous_response_id"
        )
    messages: Sequence[dict[str, Any]] = given.messages
    conversation: ConversationRecord | None = None
    previous: MessageRecord | None = None
    if previous_response_id is not None:
        conversation, previous = previous_answer(owner, previous_response_id)
    elif conversation_id is not None:
        conversation = live(owner, conversation_id)
    else:
        resent = _resent_answer(owner, given)
        if resent is not None:
            conversation, previous, after = resent
            messages = messages[after:]
    prefix, content, recorded = _split(messages)
    # `system` / `developer` input items are items of the conversation: its system prompt, kept.
    system = "\n\n".join(given.system) or None
    plan = ResponsePlan(content, recorded, prefix, conversation, previous, system_prompt=system)
    plan.instructions = instructions
    for reference in given.references:
        parsed = parse_item_id(reference)
        found = None
        if (
            parsed is not None
            and plan.conversation is not None
            and parsed[1] == plan.conversation.conversation_id
        ):
            found = store.get_message(owner, parsed[1], parsed[2])
        if found is None or found.deleted_at is not None:
            # Items of the conversation continued are in its context already; others are unknown.
            raise ItemNotFound(f"Item with id '{reference}' not found.", field="input")
    first_user = next(
        (m["content"] for m in given.messages if m["role"] == "user" and isinstance(m["content"], str)), ""
    )
    plan.title = title_from(first_user)
    return plan


def _resent_answer(owner: str, given: InputMessages) -> tuple[ConversationRecord, MessageRecord, int] | None:
    """RSP-1, the Responses tail rule: a client that keeps no server-side state resends our output
    items (with their ids) before what is new, as the Agents SDK does between a function call and its
    output. The newest input message made of one of the caller's stored answers names the conversation
    and the answer to continue from; the messages up to it are stored already. (conversation, answer,
    index of the first new message), or None (then the input starts a new conversation)."""
    for index in range(len(given.messages) - 1, -1, -1):
        for value in given.ids[index]:
            parsed = parse_item_id(value)
            if parsed is None or parsed[0] == "fco":
                continue
            try:
                conversation = paths.live_conversation(owner, parsed[1])
            except ConversationNotFound:
                continue
            answer = store.get_message(owner, parsed[1], parsed[2])
            if answer is not None and is_answer(answer):
                return conversation, answer, index + 1
    return None


def _leaf(conversation: ConversationRecord) -> int:
    return conversation.active_leaf if conversation.active_leaf is not None else conversation.next_seq - 1


def writes_before_post(plan: ResponsePlan) -> bool:
    """Whether `open_response` writes anything (then the request is counted before it, OPS-4)."""
    conversation = plan.conversation
    if conversation is None:
        return plan.system_prompt is not None or bool(plan.prefix)
    moves = plan.previous is not None and plan.previous.seq != _leaf(conversation)
    prompt = plan.system_prompt is not None and plan.system_prompt != conversation.system_prompt
    return moves or prompt or bool(plan.prefix)


def open_response(
    owner: str, plan: ResponsePlan, model: str, idempotency_key: str | None, *, kept: bool = True
) -> str | None:
    """The plan's writes before its post: a new conversation when the input needs one before the post
    (a system prompt, appended messages; with an Idempotency-Key it is named by the key, so a retry
    finds it again; marked unkept before any message when not `kept`, RSP-9), the system prompt, the
    active path moved to the answer continued, the appended messages. The conversation's id (None: the
    post creates it)."""
    conversation = plan.conversation
    if conversation is None:
        if plan.system_prompt is None and not plan.prefix:
            return None
        settings = ConversationSettings(title=plan.title, system_prompt=plan.system_prompt, model=model)
        if idempotency_key is None:
            conversation_id = new_conversation(
                owner, model=model, system_prompt=plan.system_prompt, title=plan.title
            ).conversation_id
        else:
            digest = hashlib.sha256(idempotency_key.encode()).hexdigest()[:40]
            view, _ = conversation_for_key(owner, f"responses:{digest}", settings)
            conversation_id = str(view["conversation_id"])
        if not kept:
            recall_index.mark_unkept(owner, conversation_id)
    else:
        conversation_id = conversation.conversation_id
        if plan.system_prompt is not None and plan.system_prompt != conversation.system_prompt:
            tokens = count_message({"role": "system", "content": plan.system_prompt}, conversation.model)
            changes = {"system_prompt": plan.system_prompt, "system_tokens": tokens}
            store.update_conversation(owner, conversation_id, changes, now_iso())
        if plan.previous is not None and plan.previous.seq != _leaf(conversation):
            navigation.set_active(owner, conversation_id, plan.previous.message_id)
    if plan.prefix:
        key = f"{idempotency_key}:input" if idempotency_key is not None else None
        history.append_messages(owner, conversation_id, AppendMessages(plan.prefix), idempotency_key=key)
    return conversation_id


def _window(owner: str, conversation: ConversationRecord, plan: ResponsePlan, model: str) -> dict[str, Any]:
    """The stats of the window a post of the plan would send (its system prompt and instructions, the
    path it continues; the content or a probe when it has none). Nothing is written."""
    text = plan.content if isinstance(plan.content, str) else None
    parts = plan.content if isinstance(plan.content, list) else None
    probe = text if text else ("" if parts else ".")
    check_parts(probe, parts)
    leaf = plan.previous.seq if plan.previous is not None else None
    recent = assembly.read_history(owner, conversation.conversation_id, None, leaf=leaf)
    read = conversation_of(recent.conversation, conversation.conversation_id)
    if plan.system_prompt is not None and plan.system_prompt != read.system_prompt:
        tokens = count_message({"role": "system", "content": plan.system_prompt}, model)
        read = replace(read, system_prompt=plan.system_prompt, system_tokens=tokens)
    window = assembly.assemble_window(
        response_settings.for_turn(read, plan.instructions, model),
        recent.messages,
        parts or probe,
        None,
        model,
        summary=recent.summary,
        generation=turn_settings(read.defaults, {}, model),
    )
    stats: dict[str, Any] = window.result.stats.to_dict()
    unsent = plan.content is None
    stats["probe_tokens"] = count_message({"role": "user", "content": probe}, model) if unsent else 0
    return stats


def count_input(owner: str, plan: ResponsePlan, model: str) -> tuple[int, bool]:
    """POST /v1/responses/input_tokens: the tokens the request's input would be sent with, its
    context included (the conversation's window, as a post would build it), and whether the count is
    exact (the model's encoding is known) or an estimate (the default encoding). Nothing is written."""
    exact = encoding_for_model(model) != encoding_for_model(None) or model.startswith(("gpt-", "o"))
    added = sum(count_message(m, model) for m in [*plan.prefix, *plan.recorded])
    if plan.conversation is None:
        prompt = "\n\n".join(p for p in (plan.instructions, plan.system_prompt) if p)
        system = count_message({"role": "system", "content": prompt}, model) if prompt else 0
        content = (
            count_message({"role": "user", "content": plan.content}, model) if plan.content is not None else 0
        )
        return system + added + content, exact
    stats = _window(owner, plan.conversation, plan, model)
    return max(int(stats["tokens_used"]) + added - stats["probe_tokens"], 0), exact


class ContextTooLong(InvalidInput):
    code = "context_length_exceeded"


def check_fits(owner: str, plan: ResponsePlan, model: str) -> None:
    """`truncation: "disabled"`: a 400 when the window would leave out any of the conversation (the
    window as a post would build it; nothing is written)."""
    if plan.conversation is None:
        return
    stats = _window(owner, plan.conversation, plan, model)
    if stats.get("dropped_count") or stats.get("over_budget"):
        raise ContextTooLong(
            f"the input does not fit the model's window ({stats.get('dropped_count', 0)} messages would be "
            'left out); send truncation: "auto" to let the window policy choose',
            field="truncation",
        )


def forget(owner: str, conversation_id: str) -> None:
    """DELETE /v1/conversations/{id}: a soft delete, as DELETE /conversations/{id}."""
    delete.delete_conversation(owner, conversation_id)


def discard(owner: str, conversation_id: str) -> None:
    """`store: false`: the conversation a response was made in, deleted for good at once (its whole
    partition; idempotent)."""
    retention.purge_partition(owner, conversation_id)


@dataclass(frozen=True)
class StoredResponse:
    """A response as stored: its conversation, its answer, the input of its turn, the answer before and
    the settings its request set (chat.response_settings)."""

    conversation: ConversationRecord
    answer: dict[str, Any]
    inputs: list[dict[str, Any]]
    previous_id: str | None
    settings: dict[str, Any] = field(default_factory=dict)


def turn_input(
    owner: str, conversation: ConversationRecord, answer: MessageRecord
) -> tuple[list[MessageRecord], MessageRecord | None]:
    """The messages of the turn an answer closed (oldest first) and the answer before them, if any: its
    ancestors back to the previous answer (one Query)."""
    first = max(1, answer.seq - TURN_REACH)
    found = {
        m.seq: m for m in store.read_messages(owner, conversation.conversation_id, first, answer.seq - 1)
    }
    inputs: list[MessageRecord] = []
    seq = tree.parent_seq(answer)
    while seq in found:
        message = found[seq]
        if is_answer(message):
            return inputs[::-1], message
        if message.deleted_at is None:
            inputs.append(message)
        seq = tree.parent_seq(message)
    return inputs[::-1], None


def _settings(owner: str, answer: MessageRecord) -> dict[str, Any]:
    """The settings an answer keeps, or those of the answer its reference names (one GetItem)."""
    seq = response_settings.reference(answer.settings)
    if seq is None:
        return response_settings.decode(answer.settings)
    holder = store.get_message(owner, answer.conversation_id, seq)
    return response_settings.decode(holder.settings) if holder is not None else {}


def get_response(owner: str, value: str) -> StoredResponse:
    conversation, answer = find_response(owner, value)
    inputs, previous = turn_input(owner, conversation, answer)
    return StoredResponse(
        conversation,
        message_view(answer),
        [message_view(m) for m in inputs],
        response_id(conversation.conversation_id, previous.seq) if previous is not None else None,
        _settings(owner, answer),
    )


def delete_response(owner: str, value: str) -> None:
    conversation, answer = find_response(owner, value)
    message_removal.delete_message(owner, conversation.conversation_id, answer.message_id)


# --- conversations ----------------------------------------------------------------------------------


def conversation_metadata(conversation: ConversationRecord) -> dict[str, str]:
    defaults = conversation.defaults if isinstance(conversation.defaults, Mapping) else {}
    metadata = defaults.get("metadata")
    return dict(metadata) if isinstance(metadata, Mapping) else {}


def conversation_views(owner: str, conversation_id: str) -> list[dict[str, Any]]:
    """The active path's messages (their views), oldest first."""
    live(owner, conversation_id)
    views: list[dict[str, Any]] = []
    cursor: str | None = None
    while len(views) < MAX_LISTED_MESSAGES:
        page = reads.get_conversation(owner, conversation_id, limit=100, cursor=cursor)
        views.extend(page["messages"])
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return views


def conversation_items(owner: str, conversation_id: str) -> list[dict[str, Any]]:
    return items_of(conversation_views(owner, conversation_id))


def find_item(owner: str, conversation_id: str, item_id: str) -> tuple[MessageRecord, dict[str, Any]]:
    parsed = parse_item_id(item_id)
    conversation = live(owner, conversation_id)
    message = None
    if parsed is not None and parsed[1] == conversation.conversation_id:
        message = store.get_message(owner, conversation_id, parsed[2])
    item = None
    if message is not None and message.deleted_at is None:
        item = pick_item(message_view(message), item_id)
    if message is None or item is None:
        raise ItemNotFound(f"Item with id '{item_id}' not found.", field="item_id")
    return message, item


def append_items(
    owner: str, conversation_id: str, messages: Sequence[dict[str, Any]], idempotency_key: str | None = None
) -> list[dict[str, Any]]:
    """Items added to a conversation as they are (no model call): their stored items."""
    live(owner, conversation_id)
    stored = history.append_messages(
        owner,
        conversation_id,
        AppendMessages([_appended(m) for m in messages]),
        idempotency_key=idempotency_key,
    )
    return items_of(stored["messages"])


def delete_item(owner: str, conversation_id: str, item_id: str) -> None:
    """An item's message is deleted (a call's answer with all its calls and their results)."""
    message, _ = find_item(owner, conversation_id, item_id)
    message_removal.delete_message(owner, conversation_id, message.message_id)
