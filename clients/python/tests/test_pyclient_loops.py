"""CLIENT-1, CLIENT-2, CLIENT-3: the clients and the adapters from any event loop and thread, on the local
server: one object used by `asyncio.run` twice (a closed loop behind it), by `Runner.run_sync` on a worker
thread, and by several threads at once; `ChatHistorySession.close()` awaited or not."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ScriptedModel
from chat_history_client import AsyncChatHistoryClient, ChatHistoryClient, _background
from chat_history_client.agents import ChatHistorySession
from chat_history_client.langchain import ChatHistoryMessageHistory
from langchain_core.messages import AIMessage, HumanMessage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from tests.support.local_server import ServerProcess

set_tracing_disabled(True)


def _reply(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[], logprobs=[])],
        status="completed",
    )


def _in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """`work(i)` on `count` threads started together; their results in order (a failure is raised)."""
    results: list[Any] = [None] * count
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            start.wait()
            results[index] = work(index)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def test_one_session_through_asyncio_run_twice_and_run_sync_on_a_thread(server: ServerProcess) -> None:
    """CLIENT-2: the reported script: `asyncio.run(Runner.run(agent, text, session=s))` twice with one
    session object (the first loop closed before the second starts), then `Runner.run_sync` on a worker
    thread with a loop of its own that is closed after; each run's model input holds the turns before."""
    session = ChatHistorySession("loops-runner", base_url=server.url, user_id="loops-alice")
    model = ScriptedModel()
    agent = Agent(name="helper", model=model)

    model.enqueue([_reply("Paris")])
    first = asyncio.run(Runner.run(agent, "Capital of France?", session=session))
    model.enqueue([_reply("Berlin")])
    second = asyncio.run(Runner.run(agent, "And Germany?", session=session))

    def run_sync() -> Any:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            model.enqueue([_reply("Rome")])
            return Runner.run_sync(agent, "And Italy?", session=session)
        finally:
            loop.close()

    (third,) = _in_threads(1, lambda _: run_sync())
    assert (first.final_output, second.final_output, third.final_output) == ("Paris", "Berlin", "Rome")
    sent = [str(item.get("content")) for item in model.calls[-1].input]
    assert "Capital of France?" in sent[0]
    assert any("Berlin" in text for text in sent)
    assert sent[-1] == "And Italy?"
    items = asyncio.run(session.get_items())
    assert [item.get("content") for item in items if item.get("role") == "user"] == [
        "Capital of France?",
        "And Germany?",
        "And Italy?",
    ]
    session.close()


def test_one_session_from_four_threads_at_once(server: ServerProcess) -> None:
    """CLIENT-2 / REL-5: four threads, each with its own loop, add to one session object at once (the
    first writes race to create the conversation); nothing is lost, each thread's items in its order."""
    session = ChatHistorySession("loops-threads", base_url=server.url, user_id="loops-alice")

    def writer(index: int) -> None:
        async def write() -> None:
            for turn in range(5):
                await session.add_items([{"role": "user", "content": f"t{index}-{turn}"}])

        asyncio.run(write())

    _in_threads(4, writer)
    contents = [item["content"] for item in asyncio.run(session.get_items())]
    assert sorted(contents) == sorted(f"t{i}-{turn}" for i in range(4) for turn in range(5))
    for index in range(4):
        assert [c for c in contents if c.startswith(f"t{index}-")] == [f"t{index}-{t}" for t in range(5)]
    session.close()


def test_session_close_awaited_or_not_and_calls_after_it_refused(server: ServerProcess) -> None:
    """CLIENT-2: `close()` works called plainly (as the SDK's SQLite session's) and awaited; later calls
    are refused with a clear error; a client passed in stays open for its owner."""
    plain = ChatHistorySession("loops-close", base_url=server.url, user_id="loops-bob")
    asyncio.run(plain.add_items([{"role": "user", "content": "kept"}]))
    plain.close()
    with pytest.raises(RuntimeError, match="ChatHistorySession is closed"):
        asyncio.run(plain.add_items([]))
    with pytest.raises(RuntimeError, match="ChatHistorySession is closed"):
        asyncio.run(plain.get_items())

    async def awaited() -> list[Any]:
        client = AsyncChatHistoryClient(server.url, user_id="loops-bob")
        session = ChatHistorySession("loops-close", client=client)
        items = await session.get_items()
        await session.close()
        assert (await client.find_conversation("loops-close")) is not None  # still open
        await client.aclose()
        return items

    assert asyncio.run(awaited()) == [{"role": "user", "content": "kept"}]


def test_the_async_client_serves_loops_one_after_another_and_at_once(server: ServerProcess) -> None:
    """CLIENT-1: one AsyncChatHistoryClient awaited by `asyncio.run` twice and by four threads' loops at
    once; `close()` from synchronous code ends it, after which calls are refused."""
    client = AsyncChatHistoryClient(server.url, user_id="loops-carol")
    conversation = asyncio.run(client.conversation_for_key("loops-client"))
    asyncio.run(client.append_messages(conversation.conversation_id, [{"role": "user", "content": "a"}]))

    def append(index: int) -> int:
        async def go() -> int:
            stored = await client.append_messages(
                conversation.conversation_id, [{"role": "user", "content": f"thread {index}"}]
            )
            return len(stored)

        return asyncio.run(go())

    assert _in_threads(4, append) == [1, 1, 1, 1]

    async def read() -> list[str]:
        return [str(m.content) async for m in client.iter_messages(conversation.conversation_id)]

    assert sorted(asyncio.run(read())) == ["a", "thread 0", "thread 1", "thread 2", "thread 3"]
    client.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(client.get_conversation(conversation.conversation_id))


def test_the_sync_client_serves_eight_threads_at_once(server: ServerProcess) -> None:
    """CLIENT-1: one ChatHistoryClient shared by eight threads, five appends each, all stored."""
    with ChatHistoryClient(server.url, user_id="loops-dave") as client:
        conversation = client.conversation_for_key("loops-sync")

        def append(index: int) -> None:
            for turn in range(5):
                client.append_messages(
                    conversation.conversation_id, [{"role": "user", "content": f"{index}-{turn}"}]
                )

        _in_threads(8, append)
        contents = [m.content for m in client.iter_messages(conversation.conversation_id)]
    assert sorted(contents) == sorted(f"{i}-{t}" for i in range(8) for t in range(5))


class _Slow(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(3)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def slow_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_cancelled_await_cancels_the_request_on_the_client_loop(slow_url: str) -> None:
    """CLIENT-1: a caller's timeout (a cancelled await) stops the request where it runs, the client
    loop, at once: no request is left behind."""
    client = AsyncChatHistoryClient(slow_url, user_id="loops-erin")

    async def call() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.get_conversation("c1"), timeout=0.3)
        return time.monotonic() - started

    assert asyncio.run(call()) < 2.0

    async def pending() -> int:
        await asyncio.sleep(0.2)
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    assert _background.wait(pending(), timeout=5) == 0
    client.close()


class _Counting(BaseHTTPRequestHandler):
    """Answers every GET 404 after a short while, on kept-alive connections; counts connections and the
    most requests it held at once."""

    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    connections: ClassVar[set[int]] = set()
    in_flight = 0
    most = 0

    def do_GET(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.connections.add(self.client_address[1])
            cls.in_flight += 1
            cls.most = max(cls.most, cls.in_flight)
        time.sleep(0.01)
        with cls.lock:
            cls.in_flight -= 1
        body = b'{"error": {"code": "not_found", "message": "no such conversation"}}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_burst_of_calls_at_once_shares_twenty_kept_alive_connections() -> None:
    """CLIENT-1: 300 calls gathered at once (LangGraph's `abatch`, an agent's fan-out) are all answered,
    at most 20 at a time, each on one of at most 20 connections kept alive: no connection is opened per
    call and dropped after it."""
    _Counting.connections.clear()
    _Counting.in_flight = _Counting.most = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    client = AsyncChatHistoryClient(f"http://127.0.0.1:{httpd.server_address[1]}", user_id="loops-burst")

    async def burst() -> list[Any]:
        return await asyncio.gather(
            *(client.get_conversation(f"c{i}") for i in range(300)), return_exceptions=True
        )

    try:
        # Given a client and a server that takes a moment per call
        # When 300 calls are awaited at once
        outcomes = asyncio.run(burst())
    finally:
        client.close()
        httpd.shutdown()
        httpd.server_close()
    # Then every call got its answer (the server's 404, raised as NotFound)
    assert [type(o).__name__ for o in outcomes] == ["NotFound"] * 300
    # And the server saw at most 20 connections, and never more than 20 calls at once
    assert len(_Counting.connections) <= 20
    assert _Counting.most <= 20


def test_async_langchain_history_from_two_loops_and_a_thread(server: ServerProcess) -> None:
    """CLIENT-3: one history's async methods awaited by `asyncio.run` twice and from another thread."""
    history = ChatHistoryMessageHistory("loops-lc", base_url=server.url, user_id="loops-frank")
    asyncio.run(history.aadd_messages([HumanMessage("one")]))
    asyncio.run(history.aadd_messages([AIMessage("two")]))
    _in_threads(1, lambda _: asyncio.run(history.aadd_messages([HumanMessage("three")])))
    assert [m.content for m in asyncio.run(history.aget_messages())] == ["one", "two", "three"]
    assert [m.content for m in history.messages] == ["one", "two", "three"]
    asyncio.run(history.aclear())
    assert asyncio.run(history.aget_messages()) == []
