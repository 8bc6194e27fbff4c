"""RSP-12: the Responses API's WebSocket mode on the real `chat-local-server` (`ws://.../v1/responses`), its
function run as API Gateway's WebSocket API runs it (the $connect / message / $disconnect events, events
posted back through @connections), with OpenAI's own clients: `client.responses.connect()` and the
Agents SDK's websocket transport; the stand-in model speaks Chat Completions behind it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agents import Agent, ModelSettings, RunConfig, Runner, function_tool
from agents.models.openai_provider import OpenAIProvider
from websockets.exceptions import ConnectionClosedOK
from websockets.sync.client import connect

from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

USER = {"X-User-Id": "socket-user"}
ENDS = ("response.completed", "response.failed", "response.incomplete", "error")


@pytest.fixture
def client(server: ServerProcess, model: OpenAIStandin) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=f"{server.url}/v1", api_key="unused-locally", default_headers=USER, max_retries=0
    ) as sdk:
        yield sdk


def turn(connection: Any, **request: Any) -> Any:
    """One `response.create` on an open `responses.connect()` connection: its last event."""
    connection.send({"type": "response.create", "model": "standin-model", **request})
    for event in connection:
        if event.type in ENDS:
            return event
    raise AssertionError("the socket closed before the turn ended")


def users(model: OpenAIStandin, last: str) -> list[str]:
    """The user messages of the model request made for the input `last` (the summarizer, run by the table's
    stream, may call the model too)."""
    request = next(r.json for r in reversed(model.requests) if r.json["messages"][-1].get("content") == last)
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_several_responses_on_one_socket_continue_by_previous_response_id(
    client: openai.OpenAI, model: OpenAIStandin
) -> None:
    """RSP-12: a socket answers one response after another; a continuation sends only its new input."""
    # Given one open socket
    with client.responses.connect() as connection:
        # When three responses are created on it, each continuing the one before with only new input
        first = turn(connection, input="My name is Ada.")
        second = turn(connection, input="I live in Lisbon.", previous_response_id=first.response.id)
        third = turn(connection, input="Who am I?", previous_response_id=second.response.id)
    # Then each completed, and the model saw the whole chain for the last
    assert [e.type for e in (first, second, third)] == ["response.completed"] * 3
    assert third.response.previous_response_id == second.response.id
    assert users(model, "Who am I?") == ["My name is Ada.", "I live in Lisbon.", "Who am I?"]
    assert third.response.output_text.startswith("Stand-in reply")


def test_store_false_continues_from_the_socket_and_keeps_nothing(
    client: openai.OpenAI, model: OpenAIStandin, api: httpx.Client
) -> None:
    """RSP-12, RSP-9: a `store: false` chain continues from what the socket keeps; nothing is stored."""
    # Given a store: false response on a socket
    with client.responses.connect() as connection:
        first = turn(connection, input="The code word is heron.", store=False)
        # When the next store: false request continues it with only its new input
        second = turn(
            connection, input="What is the code word?", store=False, previous_response_id=first.response.id
        )
    # Then the model saw both, the answer names what it continued, and neither response is stored
    assert second.type == "response.completed"
    assert users(model, "What is the code word?") == ["The code word is heron.", "What is the code word?"]
    assert second.response.previous_response_id == first.response.id
    for response in (first.response, second.response):
        assert api.get(f"/v1/responses/{response.id}", headers=USER).status_code == 404


def test_an_unknown_previous_response_is_previous_response_not_found(client: openai.OpenAI) -> None:
    """RSP-12: a store: false continuation of a response the socket does not keep is refused by name,
    and the socket stays open for the next request."""
    with client.responses.connect() as connection:
        # When a store: false request continues a response this socket never answered
        refused = turn(connection, input="Go on.", store=False, previous_response_id="resp_unknown")
        # Then it is refused as OpenAI refuses it, and the same socket serves the next request
        after = turn(connection, input="Start again.", store=False)
    assert refused.type == "error"
    assert refused.error.code == "previous_response_not_found"
    assert refused.error.param == "previous_response_id"
    assert after.type == "response.completed"


def test_a_failed_continuation_evicts_what_the_socket_kept(client: openai.OpenAI) -> None:
    """RSP-12: after a failed turn the socket no longer continues the response it kept."""
    with client.responses.connect() as connection:
        # Given a store: false response the socket keeps
        first = turn(connection, input="Remember me.", store=False)
        # When a continuation of it fails (a bad parameter)
        failed = turn(
            connection, input="Next.", store=False, previous_response_id=first.response.id, temperature=9
        )
        # Then a later continuation of the same response is not found
        again = turn(connection, input="Next.", store=False, previous_response_id=first.response.id)
    assert failed.type == "error"
    assert failed.error.param == "temperature"
    assert again.type == "error"
    assert again.error.code == "previous_response_not_found"


def test_bad_input_gets_an_error_event_then_a_clean_close(server: ServerProcess) -> None:
    """RSP-12: a message that is not a client event is answered with an `error` event and a close
    handshake (code 1000), not a dropped connection."""
    url = server.url.replace("http://", "ws://") + "/v1/responses"
    with connect(url, additional_headers=USER, open_timeout=30) as socket:
        # When the client sends something that is not JSON
        socket.send("this is not an event")
        event = json.loads(socket.recv(timeout=60))
        # Then an error event comes back, and the server closes the connection cleanly
        with pytest.raises(ConnectionClosedOK) as closed:
            socket.recv(timeout=60)
    assert event["type"] == "error"
    assert event["error"]["code"] == "invalid_event"
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1000


def test_a_socket_without_a_caller_is_refused(server: ServerProcess) -> None:
    """RSP-12, CON-2: no identity on connect, no connection (the handshake answers 401)."""
    url = server.url.replace("http://", "ws://") + "/v1/responses"
    with pytest.raises(Exception, match="401"):
        connect(url, open_timeout=30)


@function_tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_the_agents_sdk_websocket_transport_runs_a_tool_loop(
    server: ServerProcess, model: OpenAIStandin
) -> None:
    """RSP-12, RSP-7: the Agents SDK with `use_responses_websocket=True`: three runs on one provider (one
    socket), each a function tool call and its answer, chained by `previous_response_id`."""
    agent = Agent(
        name="Assistant",
        model="standin-model",
        tools=[lookup],
        model_settings=ModelSettings(tool_choice="auto"),
    )

    async def run() -> list[Any]:
        sdk = openai.AsyncOpenAI(
            base_url=f"{server.url}/v1", api_key="unused-locally", default_headers=USER, max_retries=0
        )
        provider = OpenAIProvider(openai_client=sdk, use_responses_websocket=True)
        config = RunConfig(model_provider=provider, tracing_disabled=True)
        results: list[Any] = []
        previous: str | None = None
        try:
            for city in ("Paris", "Oslo", "Lima"):
                result = await Runner.run(agent, city, previous_response_id=previous, run_config=config)
                previous = result.last_response_id
                results.append(result)
        finally:
            await provider.aclose()
            await sdk.close()
        return results

    # When the agent runs three times over the websocket transport
    since = len(server.lines)
    results = asyncio.run(run())
    # Then one socket carried every model request (the local server logs a socket when it closes), and
    # no request went over HTTP
    server.wait_for(r"GET\s+/v1/responses 101 .*websocket", since=since)
    assert not [line for line in server.lines[since:] if "POST   /v1/responses" in line]
    assert (
        len([line for line in server.lines[since:] if " 101 " in line and line.endswith("  websocket")]) == 1
    )
    # And each run called the tool and answered, and the model saw every earlier call and output
    assert [r.final_output.startswith("Stand-in reply") for r in results] == [True] * 3
    turns = [r.json for r in model.requests if r.json.get("tools")]  # not the summarizer's requests
    assert len(turns) == 6
    tools = [m["content"] for m in turns[-1]["messages"] if m["role"] == "tool"]
    assert tools == ["sunny in Paris", "sunny in Oslo", "sunny in Lima"]
