"""CLIENT-3: `ChatHistoryMessageHistory`, LangChain's `BaseChatMessageHistory`, on the local server over
HTTP.

langchain-core and langchain-tests publish no standard test suite for chat message histories, so the
history is exercised through `RunnableWithMessageHistory` with a fake chat model, and by the round
trips below."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from chat_history_client.langchain import ChatHistoryMessageHistory
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from tests.support.local_server import ServerProcess


def _history(server: ServerProcess, session_id: str, user: str = "alice") -> ChatHistoryMessageHistory:
    return ChatHistoryMessageHistory(session_id, base_url=server.url, user_id=user)


def _mixed(count: int) -> list[BaseMessage]:
    """`count` messages of every kind: text, AI tool calls (two at once) and their results, system,
    non-ASCII, ids and extra fields."""
    out: list[BaseMessage] = []
    turn = 0
    while len(out) < count:
        turn += 1
        out += [
            HumanMessage(content=f"question {turn}: 北京天气？ ❄"),
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "weather", "args": {"city": "北京"}, "id": f"call_{turn}a", "type": "tool_call"},
                    {"name": "time", "args": {}, "id": f"call_{turn}b", "type": "tool_call"},
                ],
            ),
            ToolMessage(content="晴, -3°C", tool_call_id=f"call_{turn}a"),
            ToolMessage(content="08:00", tool_call_id=f"call_{turn}b", name="time"),
            AIMessage(content=f"answer {turn}", id=f"run-{turn}", response_metadata={"model_name": "m"}),
            SystemMessage(content="stay brief"),
            HumanMessage(content=[{"type": "text", "text": "multi"}, {"type": "text", "text": "part"}]),
            ChatMessage(role="critic", content="too long"),
        ]
    return out[:count]


def test_two_hundred_mixed_messages_read_back_identical_in_order(server: ServerProcess) -> None:
    """CLIENT-3: 200 messages of every kind added through the history read back equal, in order."""
    messages = _mixed(200)
    history = _history(server, "lc-roundtrip")
    history.add_messages(messages[:9])
    history.add_messages(messages[9:])
    assert _history(server, "lc-roundtrip").messages == messages


def test_async_variants_and_clear(server: ServerProcess) -> None:
    """CLIENT-3: aadd_messages / aget_messages / aclear work like their sync twins."""

    async def run() -> tuple[list[BaseMessage], list[BaseMessage]]:
        history = _history(server, "lc-async")
        await history.aadd_messages([HumanMessage(content="hi"), AIMessage(content="hello")])
        before = await history.aget_messages()
        await history.aclear()
        return before, await history.aget_messages()

    before, after = asyncio.run(run())
    assert before == [HumanMessage(content="hi"), AIMessage(content="hello")]
    assert after == []


def test_one_session_id_for_two_users_is_two_histories(server: ServerProcess) -> None:
    """CLIENT-3 / API-21: the same session id used by two users is two separate histories."""
    _history(server, "lc-shared", "alice").add_messages([HumanMessage(content="alice only")])
    bob = _history(server, "lc-shared", "bob")
    assert bob.messages == []
    bob.add_messages([HumanMessage(content="bob only")])
    bob.clear()
    assert _history(server, "lc-shared", "alice").messages == [HumanMessage(content="alice only")]


_WRITER = """
import sys
from chat_history_client.langchain import ChatHistoryMessageHistory
from langchain_core.messages import HumanMessage

history = ChatHistoryMessageHistory("lc-two-writers", base_url=sys.argv[1], user_id="alice")
for i in range(int(sys.argv[3])):
    history.add_messages([HumanMessage(content=f"{sys.argv[2]}-{i}")])
"""


def test_two_processes_adding_to_one_history_lose_nothing(server: ServerProcess, tmp_path: Path) -> None:
    """CLIENT-3 / REL-5: LangChain's DynamoDB history rewrites one item and loses messages under
    concurrent writers; here two processes add at once and every message is kept, in each writer's order."""
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    writers = [
        subprocess.Popen([sys.executable, str(script), server.url, name, "15"]) for name in ("left", "right")
    ]
    assert [w.wait(timeout=240) for w in writers] == [0, 0]
    contents = [str(m.content) for m in _history(server, "lc-two-writers").messages]
    assert sorted(contents) == sorted([f"left-{i}" for i in range(15)] + [f"right-{i}" for i in range(15)])
    for name in ("left", "right"):
        assert [c for c in contents if c.startswith(name)] == [f"{name}-{i}" for i in range(15)]


def test_runnable_with_message_history_remembers(server: ServerProcess) -> None:
    """CLIENT-3: `RunnableWithMessageHistory` unchanged: the second call's prompt holds the first turn,
    and the store holds both turns."""
    model = FakeMessagesListChatModel(
        responses=[AIMessage(content="Hi Ana!"), AIMessage(content="You are Ana.")]
    )
    seen: list[list[BaseMessage]] = []

    def record(prompt: object) -> object:
        seen.append(list(prompt.to_messages()))  # type: ignore[attr-defined]
        return prompt

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | record | model,
        lambda session_id: _history(server, session_id),
        input_messages_key="question",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "lc-runnable"}}
    chain.invoke({"question": "I am Ana."}, config=config)
    answer = chain.invoke({"question": "Who am I?"}, config=config)
    assert answer.content == "You are Ana."
    assert [m.content for m in seen[1]] == ["Be brief.", "I am Ana.", "Hi Ana!", "Who am I?"]
    assert [m.content for m in _history(server, "lc-runnable").messages] == [
        "I am Ana.",
        "Hi Ana!",
        "Who am I?",
        "You are Ana.",
    ]
