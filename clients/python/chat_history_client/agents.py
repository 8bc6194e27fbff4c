"""`ChatHistorySession`: the OpenAI Agents SDK's `Session` protocol on Chat History Service.

    session = ChatHistorySession("user_123", base_url="http://127.0.0.1:3000", user_id="alice")
    result = await Runner.run(agent, "Hello", session=session)

The session id is the conversation's key (`PUT /conversation-keys/{key}`): one conversation per
session and user, created on the first write. Items are stored as the service's messages without a model
call (`POST /conversations/{id}/messages`): user, system and developer input as user and system messages,
assistant output as assistant messages, consecutive function calls as one assistant message with its
tool calls, their outputs as tool messages, anything else (reasoning, hosted tool calls) as an empty
assistant message. Every item reads back exactly as it was added: when the message alone cannot say it
all (ids, statuses, annotations, content parts), the item itself rides along in the message's
`metadata`, which the service keeps but never sends to a model.

One session object may be used from any event loop and thread (`asyncio.run(Runner.run(...))` twice,
`Runner.run_sync` on a worker thread, several threads at once): its client's connections live on a loop
of their own. `session_settings` is the SDK's `SessionSettings` (a dict is normalised, unknown fields are
refused), and its `limit` is what `get_items()` returns by default, as in the SDK's own sessions.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chat_history_client._calls import APPEND_BATCH
from chat_history_client.client import DEFAULT_BASE_URL, AsyncChatHistoryClient
from chat_history_client.errors import NotFound
from chat_history_client.types import Conversation, Message

if TYPE_CHECKING:
    from agents.memory.session_settings import SessionSettings

#: Where a message keeps the Agents SDK items it stands for, when it cannot say them exactly itself.
METADATA_KEY = "agents_items"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text") or part.get("refusal") or "") for part in content if isinstance(part, dict)
        )
    return ""


def _message_for(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The service message standing for `items` (one item, or consecutive function calls)."""
    first = items[0]
    kind = first.get("type")
    if kind == "function_call":
        calls = [
            {
                "id": str(item["call_id"]),
                "type": "function",
                "function": {"name": str(item["name"]), "arguments": str(item.get("arguments", ""))},
            }
            for item in items
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    if kind == "function_call_output":
        output = first.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return {"role": "tool", "tool_call_id": str(first["call_id"]), "content": text}
    role = first.get("role")
    if kind in (None, "message") and role in ("user", "system", "developer", "assistant"):
        text = _text(first.get("content"))
        if role == "user":
            return {"role": "user", "content": text or "(no text)"}
        if role in ("system", "developer"):
            return {"role": "system", "content": text or "(no text)"}
        return {"role": "assistant", "content": text}
    return {"role": "assistant", "content": ""}


def _items_of(message: Message) -> list[dict[str, Any]]:
    """The Agents SDK items a stored message stands for."""
    kept = (message.metadata or {}).get(METADATA_KEY)
    if isinstance(kept, list):
        return [dict(item) for item in kept]
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}]
    if message.role == "assistant" and message.tool_calls:
        return [
            {
                "type": "function_call",
                "call_id": call["id"],
                "name": call["function"]["name"],
                "arguments": call["function"]["arguments"],
            }
            for call in message.tool_calls
        ]
    role = "system" if message.role == "system" else message.role
    return [{"role": role, "content": message.content or ""}]


def _stored_view(message: dict[str, Any]) -> Message:
    """A message as the service would hand it back (to check whether it says its items exactly)."""
    return Message.from_api({"message_id": "", **message})


def _groups(items: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Items grouped as they are stored: consecutive function calls together, all else one by one."""
    groups: list[list[dict[str, Any]]] = []
    for item in items:
        if item.get("type") == "function_call" and groups and groups[-1][-1].get("type") == "function_call":
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def to_messages(items: Sequence[Any]) -> list[dict[str, Any]]:
    """The service messages for Agents SDK `items`, each carrying its items in `metadata` when it cannot
    say them exactly by itself."""
    plain = [json.loads(json.dumps(item, default=_dump)) for item in items]
    messages = []
    for group in _groups(plain):
        message = _message_for(group)
        if _items_of(_stored_view(message)) != group:
            message["metadata"] = {METADATA_KEY: group}
        messages.append(message)
    return messages


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_unset=True)
    raise TypeError(f"cannot store {type(value).__name__} in a session")


def session_settings_of(value: SessionSettings | Mapping[str, Any] | None) -> SessionSettings:
    """`value` as the SDK's `SessionSettings`: None is the default settings, a mapping is read field by
    field and an unknown field is refused (TypeError, naming it, in the SDK's own words)."""
    from agents.memory.session_settings import SessionSettings

    if value is None:
        return SessionSettings()
    if isinstance(value, SessionSettings):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(
            f"session_settings must be a SessionSettings instance or a dict, got {type(value).__name__}"
        )
    known = {field.name for field in dataclasses.fields(SessionSettings) if field.init}
    unknown = sorted(str(name) for name in value if name not in known)
    if unknown:
        raise TypeError(f"Unknown session settings: {', '.join(unknown)}")
    return SessionSettings(**value)


def _latest(items: list[Any], limit: int | None) -> list[Any]:
    """The latest `limit` items, oldest first, as the SDK's sessions count: None or a negative limit is
    every item, 0 none."""
    if limit is None or limit < 0:
        return items
    return items[-limit:] if limit > 0 else []


class _Done:
    """What `close()` returns: awaiting it is allowed (and does nothing more); not awaiting it is fine."""

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()


class ChatHistorySession:
    """An Agents SDK `Session` whose items live in one conversation of Chat History Service, named by
    `session_id` for this user. Pass a ready `client`, or the client's arguments (`base_url`, `token` or
    `user_id`). `session_settings` (a `SessionSettings` or a dict of its fields) holds the default
    `limit` of `get_items()`."""

    def __init__(
        self,
        session_id: str,
        *,
        client: AsyncChatHistoryClient | None = None,
        base_url: str = DEFAULT_BASE_URL,
        token: str | None = None,
        user_id: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        conversation_settings: dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings: SessionSettings | None = session_settings_of(session_settings)
        self._owns_client = client is None
        self._client = client or AsyncChatHistoryClient(base_url, token=token, user_id=user_id)
        self._settings = dict(conversation_settings or {"title": f"session {session_id}"})
        self._conversation_id: str | None = None
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("ChatHistorySession is closed")

    async def _conversation(self, *, create: bool) -> str | None:
        if self._conversation_id is None:
            found: Conversation | None
            if create:
                found = await self._client.conversation_for_key(self.session_id, **self._settings)
            else:
                found = await self._client.find_conversation(self.session_id)
            self._conversation_id = found.conversation_id if found is not None else None
        return self._conversation_id

    async def _messages(self) -> list[Message]:
        conversation_id = await self._conversation(create=False)
        if conversation_id is None:
            return []
        try:
            return [m async for m in self._client.iter_messages(conversation_id)]
        except NotFound:
            self._conversation_id = None  # cleared by another process: read what is there now
            conversation_id = await self._conversation(create=False)
            if conversation_id is None:
                return []
            return [m async for m in self._client.iter_messages(conversation_id)]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first; with `limit` (else the session settings' limit), the latest
        that many (0: none; negative: all, as in the SDK's SQLite session)."""
        self._check_open()
        if limit is None and self.session_settings is not None:
            limit = session_settings_of(self.session_settings).limit
        return _latest([item for message in await self._messages() for item in _items_of(message)], limit)

    async def add_items(self, items: list[Any]) -> None:
        """Store `items` at the end of the session (in order; batches of at most 30 messages)."""
        self._check_open()
        messages = to_messages(items)
        if not messages:
            return
        for start in range(0, len(messages), APPEND_BATCH):
            batch = messages[start : start + APPEND_BATCH]
            conversation_id = await self._conversation(create=True)
            assert conversation_id is not None
            try:
                await self._client.append_messages(conversation_id, batch)
            except NotFound:
                self._conversation_id = None  # cleared meanwhile: a new conversation takes the key
                conversation_id = await self._conversation(create=True)
                assert conversation_id is not None
                await self._client.append_messages(conversation_id, batch)

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (None when the session is empty)."""
        self._check_open()
        messages = await self._messages()
        if not messages:
            return None
        last = messages[-1]
        items = _items_of(last)
        conversation_id = await self._conversation(create=False)
        assert conversation_id is not None
        await self._client.delete_message(conversation_id, last.message_id)
        if len(items) > 1:  # one of several function calls stored together: the others stay
            await self._client.append_messages(conversation_id, to_messages(items[:-1]))
        return items[-1]

    async def clear_session(self) -> None:
        """Forget every item: the conversation is deleted; the next write starts a new one."""
        self._check_open()
        conversation_id = await self._conversation(create=False)
        self._conversation_id = None
        if conversation_id is not None:
            await self._client.delete_conversation(conversation_id, missing_ok=True)

    def close(self) -> Awaitable[None]:
        """Close the session, and the client it made (a `client` passed in stays open for its owner);
        later calls are refused. Synchronous, like the SDK's SQLite session's, and awaitable, so both
        `session.close()` and `await session.close()` work, from any thread or loop."""
        self._closed = True
        if self._owns_client:
            self._client.close()
        return _Done()
