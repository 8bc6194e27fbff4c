"""MEM-28: the MCP server (`python -m chat_history_client.mcp_server`) driven by the `mcp` package's own
client, `ClientSession`, over stdio (the identity from the environment) and over streamable HTTP (the
identity from each request's headers), against the local server: the tools are listed, each is called,
and the API's errors come back as tool errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.local_server import ServerProcess

CLIENT_ROOT = Path(__file__).resolve().parents[1]
REPO = CLIENT_ROOT.parents[1]
TOOLS = {"search_memory", "recent_history", "append_message", "list_conversations"}


def _env(server: ServerProcess, **extra: str) -> dict[str, str]:
    """The MCP server's environment: this checkout's client package first on the path, the service's URL."""
    path = os.pathsep.join([str(CLIENT_ROOT), os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path, "CHAT_HISTORY_URL": server.url, **extra}


def _result(answer: Any) -> dict[str, Any]:
    assert not answer.is_error, answer.content
    if answer.structured_content is not None:
        data = answer.structured_content
        return dict(data.get("result", data)) if isinstance(data, dict) else data
    return dict(json.loads(answer.content[0].text))


def _error_text(answer: Any) -> str:
    assert answer.is_error
    return " ".join(getattr(block, "text", "") for block in answer.content)


async def _exercise(session: ClientSession, conversation_id: str) -> None:
    """List the tools and call each (search only when its route exists); errors surface as tool errors."""
    await session.initialize()
    listed = await session.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS
    for tool in listed.tools:
        assert tool.description
    # append_message: to a conversation, then to a new one
    appended = _result(
        await session.call_tool(
            "append_message", {"conversation_id": conversation_id, "content": "My cat is named Miso"}
        )
    )
    assert appended["messages"][0]["content"] == "My cat is named Miso"
    fresh = _result(await session.call_tool("append_message", {"content": "A fresh start", "role": "user"}))
    assert fresh["conversation_id"] != conversation_id
    # recent_history: the newest N, oldest of them first
    recent = _result(
        await session.call_tool("recent_history", {"conversation_id": conversation_id, "limit": 2})
    )
    assert [m["content"] for m in recent["messages"]] == ["Sunny, 24 degrees.", "My cat is named Miso"]
    assert recent["messages"][0]["role"] == "assistant"
    # list_conversations: newest first, both there
    listed_conversations = _result(await session.call_tool("list_conversations", {"limit": 10}))
    ids = [c["conversation_id"] for c in listed_conversations["conversations"]]
    assert ids[:2] == [fresh["conversation_id"], conversation_id]
    # errors: another user's or a missing conversation, bad arguments
    missing = await session.call_tool("recent_history", {"conversation_id": "01J0000000000000000000000Z"})
    assert "404" in _error_text(missing)
    assert "conversation_not_found" in _error_text(missing)
    assert "limit" in _error_text(
        await session.call_tool("recent_history", {"conversation_id": "x", "limit": 0})
    )
    bad_role = await session.call_tool(
        "append_message", {"conversation_id": conversation_id, "content": "x", "role": "wizard"}
    )
    assert "422" in _error_text(bad_role) or "400" in _error_text(bad_role)
    # search_memory: the results of GET /memory/search
    searched = await session.call_tool("search_memory", {"query": "sunny degrees", "limit": 5})
    # The recall index is kept off the post path, from the table's stream, for every stored message
    # (MEM-5): the answer is found once the stream has delivered it (a deadline, no sleep).
    deadline = time.monotonic() + 30
    results = _result(searched)["results"]
    while not any("Sunny" in r["snippet"] for r in results) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        searched = await session.call_tool("search_memory", {"query": "sunny degrees", "limit": 5})
        results = _result(searched)["results"]
    assert any("Sunny" in r["snippet"] for r in results)
    assert {"conversation_id", "message_id", "seq", "role", "snippet", "score", "created_at"} <= set(
        results[0]
    )


def _conversation(server: ServerProcess, user: str) -> str:
    with server.client(user) as api:
        created = api.post("/conversations", json={"title": "Weather"})
        assert created.status_code == 201, created.text
        cid = str(created.json()["conversation_id"])
        appended = api.post(
            f"/conversations/{cid}/messages",
            json={
                "messages": [
                    {"role": "user", "content": "What is the weather in Lisbon?"},
                    {"role": "assistant", "content": "Sunny, 24 degrees."},
                ]
            },
        )
        assert appended.status_code == 201, appended.text
    return cid


def test_stdio_takes_its_identity_from_the_environment(server: ServerProcess) -> None:
    """MEM-28: over stdio, the tools act as CHAT_HISTORY_USER and see only that user's history."""
    cid = _conversation(server, "mcp-alice")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chat_history_client.mcp_server"],
        env=_env(server, CHAT_HISTORY_USER="mcp-alice"),
    )

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await _exercise(session, cid)

    asyncio.run(scenario())
    # Nobody else's conversations were touched: bob sees none
    with server.client("mcp-bob") as api:
        assert api.get("/conversations").json()["items"] == []


def test_stdio_without_identity_answers_tool_errors(server: ServerProcess) -> None:
    """MEM-28: with neither CHAT_HISTORY_TOKEN nor CHAT_HISTORY_USER, every tool says so as a tool error."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chat_history_client.mcp_server"], env=_env(server)
    )

    async def scenario() -> str:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return _error_text(await session.call_tool("list_conversations", {}))

    assert "CHAT_HISTORY_USER" in asyncio.run(scenario())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_mcp(server: ServerProcess) -> Iterator[str]:
    """The MCP server on streamable HTTP (no identity of its own): its endpoint URL."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chat_history_client.mcp_server",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
        ],
        env={**os.environ, **_env(server)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            httpx.get(url, timeout=1)
            break
        if process.poll() is not None:
            raise RuntimeError(process.stderr.read().decode() if process.stderr else "the MCP server exited")
        time.sleep(0.1)
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.asynccontextmanager
async def _http_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An MCP client session over streamable HTTP whose requests carry `headers`."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        yield session


def test_streamable_http_passes_each_requests_identity_on(server: ServerProcess, http_mcp: str) -> None:
    """MEM-28: over streamable HTTP, each MCP client's X-User-Id (or bearer token) is the identity the
    tools act as; a client without one gets tool errors."""
    cid = _conversation(server, "mcp-carol")

    async def scenario() -> None:
        async with _http_session(http_mcp, {"X-User-Id": "mcp-carol"}) as session:
            await _exercise(session, cid)
        async with _http_session(http_mcp, {"X-User-Id": "mcp-dave"}) as session:
            await session.initialize()
            missing = await session.call_tool("recent_history", {"conversation_id": cid})
            assert "conversation_not_found" in _error_text(missing)
        async with _http_session(http_mcp, {}) as session:
            await session.initialize()
            nobody = await session.call_tool("list_conversations", {})
            assert "no identity" in _error_text(nobody)

    asyncio.run(scenario())


def test_search_memory_finds_what_was_said(server: ServerProcess) -> None:
    """MEM-28: search_memory answers GET /memory/search's results across the caller's conversations."""
    cid = _conversation(server, "mcp-erin")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chat_history_client.mcp_server"],
        env=_env(server, CHAT_HISTORY_USER="mcp-erin"),
    )

    async def scenario() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return _result(await session.call_tool("search_memory", {"query": "weather Lisbon", "limit": 3}))

    results = asyncio.run(scenario())["results"]
    assert results
    assert results[0]["conversation_id"] == cid
    assert {"conversation_id", "message_id", "seq", "role", "snippet", "score", "created_at"} <= set(
        results[0]
    )


def test_mem5_an_appended_message_is_found_by_search_memory(server: ServerProcess) -> None:
    """MEM-5, MEM-28: an agent's memory written with append_message alone (no model answer ever) is found
    by search_memory once the table's stream has delivered it (a deadline, no sleep)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chat_history_client.mcp_server"],
        env=_env(server, CHAT_HISTORY_USER="mcp-frank"),
    )

    async def scenario() -> tuple[str, list[dict[str, Any]]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            # Given a message appended through the MCP server, in a conversation of its own
            appended = _result(
                await session.call_tool("append_message", {"content": "The boat is moored at pier nine"})
            )
            # When search_memory looks for a word of it until a deadline
            deadline = time.monotonic() + 30
            while True:
                found = _result(
                    await session.call_tool("search_memory", {"query": "moored pier", "limit": 5})
                )
                if found["results"] or time.monotonic() > deadline:
                    return str(appended["conversation_id"]), list(found["results"])
                await asyncio.sleep(0.1)

    conversation_id, results = asyncio.run(scenario())
    # Then the appended message is found
    assert [r["conversation_id"] for r in results] == [conversation_id]
    assert "pier nine" in results[0]["snippet"]
