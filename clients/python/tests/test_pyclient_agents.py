"""CLIENT-2: `ChatHistorySession`, the OpenAI Agents SDK `Session`, on the local server over HTTP.

The Agents SDK's own session tests run against this session in upstream/test_upstream_agents_session.py
(those of SQLite internals skipped as not applicable); here, the SDK's `Runner.run` with a stand-in
model server and the round trips below."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    SessionSettings,
    function_tool,
    set_tracing_disabled,
)
from chat_history_client import AsyncChatHistoryClient
from chat_history_client.agents import ChatHistorySession
from openai import AsyncOpenAI

from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

set_tracing_disabled(True)


def _session(server: ServerProcess, session_id: str, user: str = "alice") -> ChatHistorySession:
    return ChatHistorySession(session_id, base_url=server.url, user_id=user)


def _mixed_items(count: int) -> list[dict[str, Any]]:
    """`count` items of every kind the SDK stores: user input, assistant output, reasoning, function
    calls (two at once) and their outputs, with non-ASCII text."""
    items: list[dict[str, Any]] = []
    turn = 0
    while len(items) < count:
        turn += 1
        items += [
            {"role": "user", "content": f"question {turn}: 今日の天気は？ ☀"},
            {"type": "reasoning", "id": f"rs_{turn}", "summary": [{"type": "summary_text", "text": "думаю"}]},
            {
                "type": "function_call",
                "call_id": f"call_{turn}a",
                "name": "weather",
                "arguments": '{"city": "東京"}',
            },
            {
                "type": "function_call",
                "call_id": f"call_{turn}b",
                "name": "time",
                "arguments": "{}",
                "id": f"fc_{turn}b",
                "status": "completed",
            },
            {"type": "function_call_output", "call_id": f"call_{turn}a", "output": "晴れ, 21°C"},
            {
                "type": "function_call_output",
                "call_id": f"call_{turn}b",
                "output": [{"type": "input_text", "text": "12:00"}],
            },
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{turn}",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"answer {turn}: sunny", "annotations": []}],
            },
            {"role": "developer", "content": "stay brief"},
        ]
    return items[:count]


def test_two_hundred_mixed_items_read_back_identical_in_order(server: ServerProcess) -> None:
    """CLIENT-2: 200 items of every kind written through the session read back exactly, in order; limit
    returns the latest; pop returns the last item and removes it."""
    items = _mixed_items(200)

    async def run() -> tuple[list[Any], list[Any], Any, list[Any]]:
        session = _session(server, "agents-roundtrip")
        await session.add_items(items[:7])
        await session.add_items(items[7:])
        everything = await session.get_items()
        latest = await session.get_items(limit=3)
        popped = await session.pop_item()
        after = await session.get_items()
        await session.close()
        return everything, latest, popped, after

    everything, latest, popped, after = asyncio.run(run())
    assert everything == items
    assert latest == items[-3:]
    assert popped == items[-1]
    assert after == items[:-1]


def test_pop_of_one_of_two_calls_stored_together_keeps_the_other(server: ServerProcess) -> None:
    """CLIENT-2: function calls made at once are one stored message; popping the last keeps the first."""
    calls = _mixed_items(4)

    async def run() -> tuple[Any, list[Any]]:
        session = _session(server, "agents-pop-calls")
        await session.add_items(calls)
        popped = await session.pop_item()
        return popped, await session.get_items()

    popped, left = asyncio.run(run())
    assert popped == calls[3]
    assert left == calls[:3]


def test_empty_session_pop_is_none_and_clear_forgets(server: ServerProcess) -> None:
    """CLIENT-2: pop on an empty session is None; clear_session empties it; it can be used again."""

    async def run() -> list[Any]:
        session = _session(server, "agents-clear")
        assert await session.pop_item() is None
        assert await session.get_items() == []
        await session.add_items([{"role": "user", "content": "one"}])
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items([{"role": "user", "content": "two"}])
        return await session.get_items()

    assert asyncio.run(run()) == [{"role": "user", "content": "two"}]


def test_one_session_id_for_two_users_is_two_histories(server: ServerProcess) -> None:
    """CLIENT-2 / API-21: the same session id used by two users is two separate histories."""

    async def run() -> tuple[list[Any], list[Any]]:
        alice, bob = _session(server, "shared", "alice"), _session(server, "shared", "bob")
        await alice.add_items([{"role": "user", "content": "alice's secret"}])
        await bob.add_items([{"role": "user", "content": "bob's note"}])
        await bob.clear_session()
        return await alice.get_items(), await bob.get_items()

    alice_items, bob_items = asyncio.run(run())
    assert alice_items == [{"role": "user", "content": "alice's secret"}]
    assert bob_items == []


_WRITER = """
import asyncio, sys
from chat_history_client.agents import ChatHistorySession

async def main():
    session = ChatHistorySession("agents-two-writers", base_url=sys.argv[1], user_id="alice")
    for i in range(int(sys.argv[3])):
        await session.add_items([{"role": "user", "content": f"{sys.argv[2]}-{i}"}])
    await session.close()

asyncio.run(main())
"""


def test_two_processes_appending_to_one_session_lose_nothing(server: ServerProcess, tmp_path: Path) -> None:
    """CLIENT-2 / REL-5: two processes add to one session at once (the first write of each creates
    the conversation for the key); every item is there, each writer's in its own order."""
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    writers = [
        subprocess.Popen([sys.executable, str(script), server.url, name, "15"]) for name in ("left", "right")
    ]
    assert [w.wait(timeout=240) for w in writers] == [0, 0]

    async def read() -> list[Any]:
        return await _session(server, "agents-two-writers").get_items()

    contents = [item["content"] for item in asyncio.run(read())]
    assert sorted(contents) == sorted([f"left-{i}" for i in range(15)] + [f"right-{i}" for i in range(15)])
    for name in ("left", "right"):
        assert [c for c in contents if c.startswith(name)] == [f"{name}-{i}" for i in range(15)]


def test_runner_run_remembers_across_runs_with_tools(server: ServerProcess, model: OpenAIStandin) -> None:
    """CLIENT-2: `Runner.run(agent, input, session=...)` with a tool: the second run's model request holds
    the first run's question, tool call, tool output and answer, read back from the service."""

    @function_tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    client = AsyncOpenAI(base_url=model.base_url, api_key="standin")
    agent = Agent(
        name="helper",
        instructions="Be brief.",
        tools=[lookup],
        model=OpenAIChatCompletionsModel(model="standin-model", openai_client=client),
    )

    async def run() -> tuple[Any, list[Any]]:
        session = _session(server, "agents-runner")
        await Runner.run(agent, "What is the weather in Oslo?", session=session)
        second = await Runner.run(agent, "And tomorrow?", session=session)
        return second, await session.get_items()

    second, stored = asyncio.run(run())
    assert second.final_output
    kinds = [item.get("type", "message") for item in stored]
    assert kinds.count("function_call") == 2
    assert kinds.count("function_call_output") == 2
    outputs = [item["output"] for item in stored if item.get("type") == "function_call_output"]
    assert "sunny in" in outputs[0]
    last_request = model.requests[-1].json["messages"]
    sent = json.dumps(last_request, ensure_ascii=False)
    assert "What is the weather in Oslo?" in sent
    assert "sunny in" in sent
    assert last_request[-1]["role"] in ("user", "tool")


def test_a_session_over_a_given_client(server: ServerProcess) -> None:
    """CLIENT-2: a session can share one AsyncChatHistoryClient (its connection pool)."""

    async def run() -> list[Any]:
        async with AsyncChatHistoryClient(server.url, user_id="alice") as client:
            session = ChatHistorySession("agents-shared-client", client=client)
            await session.add_items([{"role": "user", "content": "shared"}])
            return await session.get_items()

    assert asyncio.run(run()) == [{"role": "user", "content": "shared"}]


@pytest.mark.parametrize("item", [{"role": "user", "content": ""}, {"type": "item_reference", "id": "x"}])
def test_items_without_text_still_round_trip(server: ServerProcess, item: dict[str, Any]) -> None:
    """CLIENT-2: an item with no text (an empty input, a reference) is stored and read back as given."""

    async def run() -> list[Any]:
        session = _session(server, f"agents-odd-{item.get('type', 'empty')}")
        await session.add_items([item])
        return await session.get_items()

    assert asyncio.run(run()) == [item]


def test_session_settings_are_the_sdks_and_their_limit_is_the_default(server: ServerProcess) -> None:
    """CLIENT-2: `session_settings` is the SDK's `SessionSettings`: the default when none is given, a dict
    normalised, an unknown field or another type refused; its `limit` is `get_items()`'s default (an
    explicit limit wins; 0 is none, a negative limit all, as in the SDK's SQLite session)."""
    assert _session(server, "agents-settings").session_settings == SessionSettings()
    limited = ChatHistorySession(
        "agents-settings", base_url=server.url, user_id="alice", session_settings={"limit": 2}
    )
    assert isinstance(limited.session_settings, SessionSettings)
    assert limited.session_settings.limit == 2
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        ChatHistorySession("x", base_url=server.url, user_id="alice", session_settings={"limitt": 1})
    with pytest.raises(TypeError, match="SessionSettings instance or a dict"):
        ChatHistorySession("x", base_url=server.url, user_id="alice", session_settings=3)  # type: ignore[arg-type]
    items = [{"role": "user", "content": f"m{i}"} for i in range(5)]

    async def run() -> tuple[list[Any], ...]:
        await limited.add_items(items)
        return (
            await limited.get_items(),
            await limited.get_items(limit=4),
            await limited.get_items(limit=0),
            await limited.get_items(limit=-1),
        )

    default, explicit, none, every = asyncio.run(run())
    assert (default, explicit, none, every) == (items[-2:], items[-4:], [], items)
