"""POST /v1/chat/completions (API-13): the Chat Completions wire format over a stored conversation.

The client sends what is new this turn; a client that resends the whole history every turn is
recognised (the tail rule below) and nothing is stored twice. The turn itself is an ordinary post
(`chat.post.post_message`): the same window, accounting, idempotency and turn log.

The tail rule. Leading `system`/`developer` messages are the conversation's system prompt. Of the
other messages, the last one is always new. Before it, the longest run of messages that ends where
the new part begins and equals the newest stored messages (role, text, tool calls, tool call id) is
recognised as already stored; what follows it is new. With nothing recognised, every message is new.
Error replies and the user messages they answered are not part of the stored tail (the client never
got those replies), so a client that resends after a failed turn is still recognised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chat_core.chat import attachments, paths
from chat_core.chat.create import new_conversation, title_from
from chat_core.chat.policy import MAX_POLICY_MESSAGES, count_message
from chat_core.chat.rules import check_id, not_found, now_iso
from chat_core.errors import InvalidInput
from chat_core.store import conversations as store
from chat_core.store.records import MessageRecord

SYSTEM_ROLES = ("system", "developer")
#: The message keys a Chat Completions answer carries, in the order OpenAI sends them.
_ANSWER_KEYS = ("content", "refusal", "tool_calls", "function_call", "annotations", "audio")


def text_of(content: Any, *, field: str) -> str | None:
    """The text of a message's content: a string, or a list of text parts joined; other parts refused."""
    if content is None or isinstance(content, str):
        return content
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") not in ("text", "input_text"):
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise InvalidInput(
                f"{field}: content parts of type {kind!r} are taken on user messages only", field=field
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidInput(f"{field}: a text part needs a string `text`", field=field)
        texts.append(text)
    return "\n".join(texts)


def _all_text(parts: Sequence[Any]) -> bool:
    return all(isinstance(p, Mapping) and p.get("type") in ("text", "input_text") for p in parts)


def _calls(calls: Any) -> list[tuple[str, str, str]]:
    found = []
    for call in calls or []:
        function = call.get("function") or {}
        found.append((str(call.get("id")), str(function.get("name")), str(function.get("arguments"))))
    return found


def _same(sent: Mapping[str, Any], stored: MessageRecord) -> bool:
    """A message the client sent equals a stored one (role, text, tool calls, the call it answers)."""
    if sent["role"] != stored.role:
        return False
    if isinstance(sent.get("content"), list):
        # API-17: a part kept in S3 matches the value it was made from by its digest.
        return attachments.same_parts(sent["content"], stored.parts or None)
    text = sent.get("content") or sent.get("refusal") or ""
    if text != (stored.content or stored.refusal or ""):
        return False
    if _calls(sent.get("tool_calls")) != _calls(stored.tool_calls):
        return False
    return (sent.get("tool_call_id") or None) == (stored.tool_call_id or None)


def new_messages(
    sent: Sequence[Mapping[str, Any]], stored: Sequence[MessageRecord]
) -> list[Mapping[str, Any]]:
    """The tail rule (see the module): the messages of `sent` that are not the newest stored ones."""
    # A failed turn (a user message, then an error reply) is not history: the client never got a reply.
    usable: list[MessageRecord] = []
    for message in stored:
        if message.status != "ok":
            if usable and usable[-1].role == "user":
                usable.pop()
            continue
        usable.append(message)
    for new_count in range(1, len(sent)):
        before = sent[: len(sent) - new_count]
        overlap = min(len(before), len(usable))
        if overlap and all(_same(a, b) for a, b in zip(before[-overlap:], usable[-overlap:], strict=True)):
            return list(sent[len(sent) - new_count :])
    return list(sent)


def split_system(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The system prompt a request carries (its leading system/developer messages, joined) and the other
    messages with their content as text."""
    rest = [dict(m) for m in messages]
    system: list[str] = []
    while rest and rest[0]["role"] in SYSTEM_ROLES:
        text = text_of(rest.pop(0).get("content"), field="messages")
        if text:
            system.append(text)
    offset = len(messages) - len(rest)
    for index, message in enumerate(rest):
        if message["role"] in SYSTEM_ROLES:
            raise InvalidInput(
                f"messages[{index + offset}]: system and developer messages must come first", field="messages"
            )
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, list) and not _all_text(content):
            continue  # API-15: a user's image, audio or file parts are kept as sent
        message["content"] = text_of(content, field=f"messages[{index + offset}]")
    if not rest:
        raise InvalidInput("messages needs a user message or tool results", field="messages")
    return ("\n\n".join(system) or None), rest


@dataclass(frozen=True)
class TurnPlan:
    """What a Chat Completions request posts: to which conversation (None: a new one), the user's
    content (None on a post of tool results) and the agent steps recorded before it."""

    conversation_id: str | None
    content: str | None
    recorded: list[dict[str, Any]]
    received: int  # messages the request carried after the system prompt
    new: int  # of which new
    #: A system prompt to store before the post (new, or changed from the stored one).
    system_prompt: str | None = None
    title: str | None = None
    #: The stored conversation's model (its system prompt is counted for it).
    model: str | None = None


def _as_post(new: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    last = new[-1]
    if last["role"] == "user":
        content, recorded = last.get("content") or "", list(new[:-1])
    elif last["role"] == "tool":
        content, recorded = None, list(new)
    else:
        raise InvalidInput("the last message must be the user's or a tool result", field="messages")
    kept = []
    for message in recorded:
        if message["role"] not in ("assistant", "tool"):
            raise InvalidInput(
                "a turn carries one new user message, last; the new messages before it may only be "
                "assistant steps and tool results (stored history is recognised by the tail rule)",
                field="messages",
            )
        keys = (
            ("role", "content", "tool_calls")
            if message["role"] == "assistant"
            else ("role", "tool_call_id", "content")
        )
        kept.append({key: message[key] for key in keys if message.get(key) is not None})
    return content, kept


def plan_turn(owner: str, messages: Sequence[Mapping[str, Any]], conversation_id: str | None) -> TurnPlan:
    """The turn a request makes (API-13): the tail rule against the stored messages (one Query, only
    when the request carries more than one message, or a system prompt, for an existing conversation).
    Nothing is written here: `open_conversation` does, once the turn has passed its checks."""
    system, sent = split_system(messages)
    new: Sequence[Mapping[str, Any]] = sent
    new_system: str | None = None
    stored_model: str | None = None
    if conversation_id is not None:
        check_id(conversation_id)
        if len(sent) > 1 or system is not None:
            reach = min(max(len(sent) - 1, 1), MAX_POLICY_MESSAGES)
            recent = store.read_recent(owner, conversation_id, reach)
            conversation = recent.conversation
            if conversation is None or conversation.is_deleted:
                raise not_found(conversation_id)
            # API-18: the tail is matched against the active path (a branched one is walked).
            new = new_messages(sent, paths.active_history(recent, reach).messages)
            if system is not None and system != conversation.system_prompt:
                new_system, stored_model = system, conversation.model
    else:
        new_system = system
    content, recorded = _as_post(new)
    first_user = next(
        (
            str(m.get("content") or "")
            for m in sent
            if m["role"] == "user" and isinstance(m.get("content"), str)
        ),
        "",
    )
    return TurnPlan(
        conversation_id,
        content,
        recorded,
        received=len(sent),
        new=len(new),
        system_prompt=new_system,
        title=title_from(first_user),
        model=stored_model,
    )


def open_conversation(owner: str, plan: TurnPlan, model: str, *, create: bool) -> str | None:
    """The plan's writes before its post: the request's system prompt becomes the conversation's
    (counted once, TOK-5), on a new conversation made here when there is one or when `create` (a
    stream names its conversation before the model answers). The conversation's id (None: the post
    creates it)."""
    if plan.conversation_id is not None:
        if plan.system_prompt is not None:
            tokens = count_message({"role": "system", "content": plan.system_prompt}, plan.model or model)
            changes = {"system_prompt": plan.system_prompt, "system_tokens": tokens}
            store.update_conversation(owner, plan.conversation_id, changes, now_iso())
        return plan.conversation_id
    if plan.system_prompt is None and not create:
        return None
    created = new_conversation(owner, model=model, system_prompt=plan.system_prompt, title=plan.title)
    return created.conversation_id


def completion_object(conversation_id: str, reply: Mapping[str, Any]) -> dict[str, Any]:
    """A stored reply as the chat.completion object the model answered, plus `conversation`."""
    message: dict[str, Any] = {"role": "assistant"}
    for key in _ANSWER_KEYS:
        if key == "content" or reply.get(key) is not None:
            message[key] = reply.get(key)
    message.setdefault("refusal", None)
    usage: dict[str, Any] = dict(reply.get("usage") or {})
    usage.update(reply.get("usage_details") or {})
    created = int(datetime.fromisoformat(str(reply["created_at"]).replace("Z", "+00:00")).timestamp())
    return {
        "id": reply.get("completion_id") or f"chatcmpl-{reply['message_id']}",
        "object": "chat.completion",
        "created": created,
        "model": reply.get("model"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.get("finish_reason") or "stop",
                "logprobs": None,
            }
        ],
        "usage": usage,
        "system_fingerprint": reply.get("system_fingerprint"),
        "conversation": conversation_id,
    }


def stream_chunk(conversation_id: str, reply: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A whole stored reply as the chunks a stream of it would have had (a replayed or non-streamed
    answer sent to a client that asked for a stream): the message, then its finish."""
    whole = completion_object(conversation_id, reply)
    head = {k: whole[k] for k in ("id", "created", "model", "system_fingerprint")}
    head.update(object="chat.completion.chunk", conversation=conversation_id)
    message = dict(whole["choices"][0]["message"])
    if message.get("tool_calls"):
        message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    finish = whole["choices"][0]["finish_reason"]
    return [
        {**head, "choices": [{"index": 0, "delta": message, "finish_reason": None, "logprobs": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish, "logprobs": None}]},
        {**head, "choices": [], "usage": whole["usage"]},
    ]
