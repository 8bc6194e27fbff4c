"""RSP-7: the OpenAI Agents SDK with its default model (`OpenAIResponsesModel`, the Responses API)
against the real `chat-local-server`, the stand-in model speaking only Chat Completions: server-side
state through `conversation_id`, `previous_response_id`, `auto_previous_response_id` and the SDK's
stock `OpenAIConversationsSession`, unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from agents import Agent, OpenAIConversationsSession, RunConfig, Runner, function_tool
from agents.models.openai_provider import OpenAIProvider
from agents.models.openai_responses import OpenAIResponsesModel

from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture
def client(server: ServerProcess, model: OpenAIStandin) -> Iterator[openai.AsyncOpenAI]:
    return openai.AsyncOpenAI(
        base_url=f"{server.url}/v1",
        api_key="unused-locally",
        default_headers={"X-User-Id": "agent-user"},
        max_retries=0,
    )


def config(client: openai.AsyncOpenAI) -> RunConfig:
    """The SDK's default provider (Responses API) with our base URL; tracing off (no network)."""
    return RunConfig(model_provider=OpenAIProvider(openai_client=client), tracing_disabled=True)


def users(model: OpenAIStandin) -> list[str]:
    return [m["content"] for m in model.requests[-1].json["messages"] if m["role"] == "user"]


def stored(api: httpx.Client, conversation_id: str) -> list[dict[str, Any]]:
    answer = api.get(f"/conversations/{conversation_id}", headers={"X-User-Id": "agent-user"})
    messages: list[dict[str, Any]] = answer.json()["messages"]
    return messages


def test_the_default_model_is_the_responses_model(client: openai.AsyncOpenAI) -> None:
    agent = Agent(name="Assistant", instructions="Be brief.", model="standin-model")
    resolved = config(client).model_provider.get_model(agent.model if isinstance(agent.model, str) else None)
    assert isinstance(resolved, OpenAIResponsesModel)


def test_conversation_id_keeps_the_conversation_on_the_server(
    client: openai.AsyncOpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    agent = Agent(name="Assistant", instructions="Be brief.", model="standin-model")

    async def run() -> str:
        conversation = await client.conversations.create()
        await Runner.run(agent, "My name is Ada.", conversation_id=conversation.id, run_config=config(client))
        second = await Runner.run(
            agent, "What is my name?", conversation_id=conversation.id, run_config=config(client)
        )
        assert "What is my name?" in second.final_output
        return conversation.id

    conversation_id = asyncio.run(run())
    assert users(model) == ["My name is Ada.", "What is my name?"]
    assert model.requests[-1].json["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in stored(api, conversation_id)] == ["user", "assistant", "user", "assistant"]


def test_previous_response_id_chains_runs(client: openai.AsyncOpenAI, model: OpenAIStandin) -> None:
    agent = Agent(name="Assistant", model="standin-model")

    async def run() -> None:
        first = await Runner.run(agent, "I live in Lisbon.", run_config=config(client))
        assert first.last_response_id is not None
        await Runner.run(
            agent, "Where do I live?", previous_response_id=first.last_response_id, run_config=config(client)
        )

    asyncio.run(run())
    assert users(model) == ["I live in Lisbon.", "Where do I live?"]


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_auto_previous_response_id_with_a_function_tool(
    client: openai.AsyncOpenAI, model: OpenAIStandin
) -> None:
    """RSP-1: the tool's call and its output go back with the same call id, chained by response id."""
    agent = Agent(name="Assistant", model="standin-model", tools=[get_weather])

    async def run() -> Any:
        return await Runner.run(agent, "Paris", auto_previous_response_id=True, run_config=config(client))

    result = asyncio.run(run())
    sent = model.requests[-1].json["messages"]
    call = sent[-2]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert sent[-1] == {"role": "tool", "tool_call_id": call["id"], "content": "sunny in Paris"}
    assert result.final_output.startswith("Stand-in reply")
    # only the new item went with the second request: the first turn came from the chain
    assert len(model.requests[-1].json["messages"]) == 3


def test_the_stock_openai_conversations_session(
    client: openai.AsyncOpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    agent = Agent(name="Assistant", model="standin-model", tools=[get_weather])

    async def run() -> tuple[str, list[Any]]:
        session = OpenAIConversationsSession(openai_client=client)
        await Runner.run(agent, "Oslo", session=session, run_config=config(client))
        await Runner.run(agent, "And tomorrow?", session=session, run_config=config(client))
        items = await session.get_items()
        popped = await session.pop_item()
        assert popped is not None
        return await session._get_session_id(), items

    session_id, items = asyncio.run(run())
    assert users(model) == ["Oslo", "And tomorrow?"]
    # Then the session holds both runs as items (each run called the tool once), the same call ids paired
    kinds = [item.get("type") for item in items]
    assert kinds == ["message", "function_call", "function_call_output", "message"] * 2
    assert items[1]["call_id"] == items[2]["call_id"]
    # and it is our conversation: the session's items are its messages (the popped answer deleted)
    roles = [m["role"] for m in stored(api, session_id)]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]


def test_a_stateless_run_with_a_tool_continues_its_own_answer(
    client: openai.AsyncOpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-1, the Responses tail rule: with no server-side state named, the SDK resends the model's
    function_call item (our id) before its output; the turn continues that answer, stored once."""
    agent = Agent(name="Assistant", model="standin-model", tools=[get_weather])

    async def run() -> Any:
        return await Runner.run(agent, "Rome", run_config=config(client))

    result = asyncio.run(run())
    assert result.final_output.startswith("Stand-in reply")
    assert result.last_response_id is not None
    conversation_id = result.last_response_id.split("_")[1]
    assert [m["role"] for m in stored(api, conversation_id)] == ["user", "assistant", "tool", "assistant"]
