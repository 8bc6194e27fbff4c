"""`ChatHistoryMessageHistory`: LangChain's `BaseChatMessageHistory` on Chat History Service.

    history = ChatHistoryMessageHistory("user_123", base_url="http://127.0.0.1:3000", user_id="alice")
    chain = RunnableWithMessageHistory(runnable, lambda sid: ChatHistoryMessageHistory(sid, ...))

The session id is the conversation's key (`PUT /conversation-keys/{key}`): one conversation per
session and user, created on the first write; `clear()` deletes it. Human, AI (with tool calls), tool and
system messages are stored as the service's user, assistant, tool and system messages, without a model
call, and read back equal to what was added: what the service's message cannot say (ids, names,
`additional_kwargs`, `response_metadata`, content blocks, other message types) rides along in the
message's `metadata`, which the service keeps but never sends to a model.

The async methods (`aget_messages`, `aadd_messages`, `aclear`) may be awaited from any event loop and
thread, and one history object may serve several of them (its async client's connections live on a loop
of their own); the sync methods may be called from any thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from chat_history_client._calls import APPEND_BATCH
from chat_history_client.client import DEFAULT_BASE_URL, AsyncChatHistoryClient, ChatHistoryClient
from chat_history_client.errors import NotFound
from chat_history_client.types import Conversation, Message

#: Where a message keeps the LangChain message it stands for, when it cannot say it exactly itself.
METADATA_KEY = "langchain_message"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part if isinstance(part, str) else str(part.get("text") or "")
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        )
    return ""


def _service_message(message: BaseMessage) -> dict[str, Any]:
    """The service message closest to `message`."""
    text = _text(message.content)
    if isinstance(message, AIMessage):
        out: dict[str, Any] = {"role": "assistant", "content": text}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": str(call.get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": json.dumps(call["args"], ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ]
            if not text:
                out["content"] = None
        return out
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": text or "(no text)"}
    return {"role": "user", "content": text or "(no text)"}


def _langchain_message(message: Message) -> BaseMessage:
    """The LangChain message a stored message stands for."""
    kept = (message.metadata or {}).get(METADATA_KEY)
    if isinstance(kept, dict):
        return messages_from_dict([kept])[0]
    content = message.content or ""
    if message.role == "assistant":
        calls = [
            {
                "name": call["function"]["name"],
                "args": json.loads(call["function"]["arguments"] or "{}"),
                "id": call["id"],
                "type": "tool_call",
            }
            for call in message.tool_calls or []
        ]
        return AIMessage(content=content, tool_calls=calls)
    if message.role == "tool":
        return ToolMessage(content=content, tool_call_id=message.tool_call_id or "")
    if message.role == "system":
        return SystemMessage(content=content)
    return HumanMessage(content=content)


def to_service_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The service messages for LangChain `messages`, each carrying its LangChain form in `metadata`
    when it cannot say it exactly by itself."""
    out = []
    for message in messages:
        stored = _service_message(message)
        kept = message_to_dict(message)
        try:
            exact = (
                message_to_dict(_langchain_message(Message.from_api({"message_id": "", **stored}))) == kept
            )
        except (ValueError, TypeError, KeyError):
            exact = False
        if not exact:
            stored["metadata"] = {METADATA_KEY: kept}
        out.append(stored)
    return out


class ChatHistoryMessageHistory(BaseChatMessageHistory):
    """The messages of one conversation of Chat History Service, named by `session_id` for this user.
    Pass ready clients, or the clients' arguments (`base_url`, `token` or `user_id`)."""

    def __init__(
        self,
        session_id: str,
        *,
        client: ChatHistoryClient | None = None,
        async_client: AsyncChatHistoryClient | None = None,
        base_url: str = DEFAULT_BASE_URL,
        token: str | None = None,
        user_id: str | None = None,
        conversation_settings: dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self._client = client or ChatHistoryClient(base_url, token=token, user_id=user_id)
        self._async_args = {"base_url": base_url, "token": token, "user_id": user_id}
        self._async_client = async_client
        self._async_guard = threading.Lock()
        self._settings = dict(conversation_settings or {"title": f"session {session_id}"})
        self._conversation_id: str | None = None

    # Sync

    def _conversation(self, *, create: bool) -> str | None:
        if self._conversation_id is None:
            found: Conversation | None
            if create:
                found = self._client.conversation_for_key(self.session_id, **self._settings)
            else:
                found = self._client.find_conversation(self.session_id)
            self._conversation_id = found.conversation_id if found is not None else None
        return self._conversation_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every message of the session, oldest first."""
        for _ in range(2):
            conversation_id = self._conversation(create=False)
            if conversation_id is None:
                return []
            try:
                return [_langchain_message(m) for m in self._client.iter_messages(conversation_id)]
            except NotFound:
                self._conversation_id = None  # cleared by another process: read what is there now
        return []

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store `messages` at the end of the session, in order (batches of at most 30)."""
        stored = to_service_messages(messages)
        for start in range(0, len(stored), APPEND_BATCH):
            batch = stored[start : start + APPEND_BATCH]
            conversation_id = self._conversation(create=True)
            assert conversation_id is not None
            try:
                self._client.append_messages(conversation_id, batch)
            except NotFound:
                self._conversation_id = None  # cleared meanwhile: a new conversation takes the key
                conversation_id = self._conversation(create=True)
                assert conversation_id is not None
                self._client.append_messages(conversation_id, batch)

    def clear(self) -> None:
        """Forget every message: the conversation is deleted; the next write starts a new one."""
        conversation_id = self._conversation(create=False)
        self._conversation_id = None
        if conversation_id is not None:
            self._client.delete_conversation(conversation_id, missing_ok=True)

    # Async

    def _aclient(self) -> AsyncChatHistoryClient:
        with self._async_guard:  # one client, however many threads ask first
            if self._async_client is None:
                self._async_client = AsyncChatHistoryClient(**self._async_args)  # type: ignore[arg-type]
            return self._async_client

    async def _aconversation(self, *, create: bool) -> str | None:
        if self._conversation_id is None:
            client = self._aclient()
            found: Conversation | None
            if create:
                found = await client.conversation_for_key(self.session_id, **self._settings)
            else:
                found = await client.find_conversation(self.session_id)
            self._conversation_id = found.conversation_id if found is not None else None
        return self._conversation_id

    async def aget_messages(self) -> list[BaseMessage]:
        for _ in range(2):
            conversation_id = await self._aconversation(create=False)
            if conversation_id is None:
                return []
            try:
                return [_langchain_message(m) async for m in self._aclient().iter_messages(conversation_id)]
            except NotFound:
                self._conversation_id = None
        return []

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        stored = to_service_messages(messages)
        for start in range(0, len(stored), APPEND_BATCH):
            batch = stored[start : start + APPEND_BATCH]
            conversation_id = await self._aconversation(create=True)
            assert conversation_id is not None
            try:
                await self._aclient().append_messages(conversation_id, batch)
            except NotFound:
                self._conversation_id = None
                conversation_id = await self._aconversation(create=True)
                assert conversation_id is not None
                await self._aclient().append_messages(conversation_id, batch)

    async def aclear(self) -> None:
        conversation_id = await self._aconversation(create=False)
        self._conversation_id = None
        if conversation_id is not None:
            await self._aclient().delete_conversation(conversation_id, missing_ok=True)
