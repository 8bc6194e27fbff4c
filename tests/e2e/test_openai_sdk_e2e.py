"""API-13: the official `openai` Python SDK and LangChain's `ChatOpenAI` get durable memory by changing
their base URL. Real HTTP end to end: the SDK -> `chat-local-server` (as `make run`) -> the stand-in
model on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.local_server import ServerProcess
from tests.support.openai_sdk import sdk, stored
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "provider_responses"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture
def client(server: ServerProcess, model: OpenAIStandin) -> Iterator[openai.OpenAI]:
    with sdk(server) as sdk_client:
        yield sdk_client


def test_a_plain_turn_then_a_second_that_remembers_it(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-13: the answer is the chat.completion the model gave plus `conversation`; the next turn sends
    only its new message and the model still gets the first turn."""
    # When the SDK asks once, without a conversation
    raw = client.chat.completions.with_raw_response.create(
        model="standin-model", messages=[{"role": "user", "content": "My name is Ada."}]
    )
    first = raw.parse()
    # Then it parses as a ChatCompletion, names its conversation (header and body), as the model answered
    conversation_id = raw.headers["x-conversation-id"]
    assert first.model_extra is not None
    assert first.model_extra["conversation"] == conversation_id
    reply = stored(api, conversation_id)[-1]
    assert first.choices[0].message.content == reply["content"]
    assert first.id == reply["completion_id"]  # the model's own id, kept
    assert first.usage is not None
    assert first.usage.total_tokens > 0
    # When the next turn sends only its new message, naming the conversation
    second = client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "user", "content": "What is my name?"}],
        extra_body={"conversation": conversation_id},
    )
    # Then the model received the first turn too, and the conversation holds both turns once
    sent = model.requests[-1].json["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["My name is Ada.", "What is my name?"]
    assert second.choices[0].message.content
    assert [m["role"] for m in stored(api, conversation_id)] == ["user", "assistant", "user", "assistant"]


def test_a_stateless_client_resending_history_stores_each_message_once(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-13 tail rule: history the client resends is recognised, only what is new is stored."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    conversation_id = None
    for question in ("one?", "two?", "three?"):
        history.append({"role": "user", "content": question})
        extra = {"conversation": conversation_id} if conversation_id else {}
        answer = client.chat.completions.create(model="standin-model", messages=history, extra_body=extra)
        assert answer.model_extra is not None
        conversation_id = answer.model_extra["conversation"]
        history.append({"role": "assistant", "content": answer.choices[0].message.content})
        # the model always gets the system prompt first and the whole conversation once
        sent = model.requests[-1].json["messages"]
        assert sent[0] == {"role": "system", "content": "You are terse."}
        assert [m["content"] for m in sent[1:]] == [m["content"] for m in history[1:-1]]
    assert conversation_id is not None
    messages = stored(api, conversation_id)
    assert [m["content"] for m in messages] == [m["content"] for m in history[1:]]
    assert api.get(f"/conversations/{conversation_id}").json()["system_prompt"] == "You are terse."


def test_a_tool_call_round_trip(client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin) -> None:
    """API-11, API-13: a model offered tools calls one; the client posts the result and gets the answer."""
    asked = client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "user", "content": "Paris"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    message = asked.choices[0].message
    assert asked.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls
    assert message.tool_calls[0].function.name == "get_weather"
    assert model.requests[-1].json["tools"] == [WEATHER]
    assert asked.model_extra is not None
    conversation_id = asked.model_extra["conversation"]
    call_id = message.tool_calls[0].id
    final = client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "tool", "tool_call_id": call_id, "content": "18 C, sunny"}],
        tools=[WEATHER],  # type: ignore[list-item]
        extra_body={"conversation": conversation_id},
    )
    assert final.choices[0].message.content
    assert final.choices[0].finish_reason == "stop"
    roles = [m["role"] for m in stored(api, conversation_id)]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_generation_settings_reach_the_model_verbatim(client: openai.OpenAI, model: OpenAIStandin) -> None:
    """API-11 through the SDK: what the SDK sends is what the model receives."""
    client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "user", "content": "a haiku"}],
        temperature=0.4,
        top_p=0.8,
        seed=11,
        stop=["\n\n"],
        max_completion_tokens=64,
        presence_penalty=0.5,
        response_format={"type": "json_object"},
        user="end-user-3",
        metadata={"app": "tests"},
    )
    sent = model.requests[-1].json
    expected = {
        "temperature": 0.4,
        "top_p": 0.8,
        "seed": 11,
        "stop": ["\n\n"],
        "max_completion_tokens": 64,
        "presence_penalty": 0.5,
        "response_format": {"type": "json_object"},
        "user": "end-user-3",
        "metadata": {"app": "tests"},
    }
    assert {key: sent.get(key) for key in expected} == expected


def test_another_users_conversation_and_bad_input_answer_openai_errors(
    server: ServerProcess, client: openai.OpenAI, model: OpenAIStandin
) -> None:
    """API-13, API-7: 404 for another user's conversation, 400 naming an unknown field, OpenAI's shape."""
    mine = client.chat.completions.create(
        model="standin-model", messages=[{"role": "user", "content": "secret"}]
    )
    assert mine.model_extra is not None
    calls = len(model.requests)
    with sdk(server, user="mallory") as other, pytest.raises(openai.NotFoundError) as found:
        other.chat.completions.create(
            model="standin-model",
            messages=[{"role": "user", "content": "show me"}],
            extra_body={"conversation": mine.model_extra["conversation"]},
        )
    assert isinstance(found.value.body, dict)
    assert set(found.value.body) == {"message", "type", "param", "code"}
    assert found.value.body["code"] == "conversation_not_found"
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model="standin-model", messages=[{"role": "user", "content": "x"}], extra_body={"temprature": 1}
        )
    assert isinstance(refused.value.body, dict)
    assert refused.value.body["param"] == "temprature"
    assert len(model.requests) == calls


def test_models_are_listed(client: openai.OpenAI) -> None:
    """API-13: GET /v1/models lists the configured models."""
    assert "standin-model" in [m.id for m in client.models.list()]


def test_langchain_chat_openai_holds_a_three_turn_conversation(
    server: ServerProcess, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-13: LangChain's ChatOpenAI, pointed at the endpoint, resends its history every turn; each
    message is stored once."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    conversation_id = api.post("/conversations", json={"title": "langchain"}).json()["conversation_id"]
    chat = ChatOpenAI(
        model="standin-model",
        base_url=f"{server.url}/v1",
        api_key="unused-locally",  # type: ignore[arg-type]
        default_headers={"X-User-Id": "alice", "X-Conversation-Id": conversation_id},
        max_retries=0,
    )
    history: list[Any] = [SystemMessage("You are a guide.")]
    for question in ("Where is Lisbon?", "What is there to see?", "And to eat?"):
        history.append(HumanMessage(question))
        reply = chat.invoke(history)
        assert isinstance(reply, AIMessage)
        history.append(reply)
    messages = stored(api, conversation_id)
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3
    assert [m["content"] for m in messages] == [m.content for m in history[1:]]
    assert model.requests[-1].json["messages"][0] == {"role": "system", "content": "You are a guide."}


def test_the_readme_sdk_example_works_as_pasted(server: ServerProcess, model: OpenAIStandin) -> None:
    """API-13, DOC-1: every block of the README and docs/ marked `# needs: make run` (the OpenAI SDK and
    framework examples of docs/frameworks.md) runs against a real local server (its address swapped for
    this server's) and prints the model's answers."""
    from tests.unit.test_readme_examples import SERVER_BLOCKS

    assert SERVER_BLOCKS, "no block of the README or docs/ talks to `make run`"
    for block in SERVER_BLOCKS:
        code = block.code.replace("http://127.0.0.1:3000", server.url)
        exec(compile(code, str(block.path), "exec"), {"__name__": "readme_example"})
    assert model.requests, "the example never reached the model"


def test_a_streamed_reply_arrives_chunk_by_chunk_and_is_stored_whole(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-14: `stream: true` answers Server-Sent Events as the model produces them (not buffered); the
    SDK parses every chunk; the stored reply is their concatenation; usage comes last when asked."""
    # Given a model that pauses between the chunks it sends
    model.configure(chunk_delay=0.05)
    arrivals: list[float] = []
    pieces: list[str] = []
    chunks = []
    # When the SDK asks for a stream
    stream = client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "user", "content": "tell me a short story about a lighthouse keeper"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        arrivals.append(time.monotonic())
        chunks.append(chunk)
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    # Then the chunks arrived over time, as the model sent them (the model paused >= 0.05 s per word)
    assert len(pieces) >= 10
    assert arrivals[-1] - arrivals[0] >= 0.05 * (len(pieces) - 2)
    # And each names the conversation; the last carries the usage; the stored reply is the text
    assert all(c.model_extra and c.model_extra["conversation"] for c in chunks)
    conversation_id = chunks[0].model_extra["conversation"]  # type: ignore[index]
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ["stop"]
    reply = stored(api, conversation_id)[-1]
    assert reply["status"] == "ok"
    assert reply["content"] == "".join(pieces)
    # And the model was asked for a stream with usage
    assert model.requests[-1].json["stream"] is True
    assert model.requests[-1].json["stream_options"] == {"include_usage": True}


def test_a_stream_cut_mid_way_is_stored_as_incomplete(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-14: when the model's stream breaks, what arrived is stored with status "incomplete", the
    client gets OpenAI's mid-stream error, and the turn log says why."""
    model.configure(mode="stream_cut")
    pieces: list[str] = []
    stream = client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "user", "content": "count slowly to twenty please"}],
        stream=True,
    )
    names: list[str] = []

    def read_all() -> None:
        for chunk in stream:
            names.append((chunk.model_extra or {})["conversation"])
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)

    with pytest.raises(openai.APIError) as broke:
        read_all()
    assert "incomplete" in str(broke.value)
    assert pieces
    conversation_id = names[0]
    reply = stored(api, conversation_id)[-1]
    assert reply["status"] == "incomplete"
    assert reply["content"] == "".join(pieces)
    assert "stream" in reply["error"]["message"]
    events = [
        json.loads(line) for line in api.get(f"/conversations/{conversation_id}/events").text.splitlines()
    ]
    assert events[-1]["type"] == "turn_end"
    assert events[-1]["meta"]["status"] == "incomplete"
    # And the next turn does not send the broken reply to the model
    model.configure(mode="ok")
    client.chat.completions.create(
        model="standin-model",
        messages=[{"role": "user", "content": "again"}],
        extra_body={"conversation": conversation_id},
    )
    assert [m["role"] for m in model.requests[-1].json["messages"]] == ["user", "user"]


def test_a_client_that_goes_away_leaves_what_it_was_sent_stored(
    server: ServerProcess, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-14: the client disconnects mid-stream; the model is no longer read and what the client was
    sent is stored as incomplete."""
    model.configure(chunk_delay=0.1)
    body = {
        "model": "standin-model",
        "messages": [{"role": "user", "content": "a long answer about the history of the printing press"}],
        "stream": True,
    }
    with (
        httpx.Client(base_url=server.url, headers={"X-User-Id": "alice"}, timeout=30) as raw,
        raw.stream("POST", "/v1/chat/completions", json=body) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        conversation_id = response.headers["x-conversation-id"]
        lines = response.iter_lines()
        received = [line for _, line in zip(range(6), lines, strict=False)]
        assert any(line.startswith("data: ") for line in received)
    # (the connection is closed here, half way through the model's answer)
    deadline = time.monotonic() + 30
    reply: dict[str, Any] = {}
    while time.monotonic() < deadline:
        messages = stored(api, conversation_id)
        reply = messages[-1] if messages and messages[-1]["role"] == "assistant" else {}
        if reply:
            break
        time.sleep(0.1)
    assert reply.get("status") == "incomplete", reply
    assert "went away" in reply["error"]["message"]
    full = (
        "Stand-in reply: "
        + 'you said "a long answer about the history of the printing press" (1 messages received).'
    )
    assert 0 < len(reply["content"]) < len(full)


def test_post_messages_streams_with_accept_event_stream(api: httpx.Client, model: OpenAIStandin) -> None:
    """API-14 on the service's own API: `Accept: text/event-stream` on POST /messages streams the model's
    chunks, then the stored turn (`"object": "chat.turn"`, the 201 body) closes the stream."""
    pieces: list[str] = []
    turn: dict[str, Any] = {}
    with api.stream(
        "POST", "/messages", json={"content": "stream my answer"}, headers={"Accept": "text/event-stream"}
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if event.get("object") == "chat.turn":
                turn = event
            for choice in event.get("choices") or []:
                pieces.append(choice["delta"].get("content") or "")
    assert turn["status"] == 201
    assert turn["assistant_message"]["content"] == "".join(pieces)
    assert len([p for p in pieces if p]) >= 5
    stored_reply = stored(api, turn["conversation_id"])[-1]
    assert stored_reply["content"] == "".join(pieces)
    # And without the header the same route answers JSON as before
    plain = api.post(
        "/messages", json={"content": "whole please", "conversation_id": turn["conversation_id"]}
    )
    assert plain.status_code == 201
    assert "stream" not in model.requests[-1].json


def test_an_image_part_from_the_sdk_reaches_the_model_and_is_stored(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-15 through /v1: a user's image part is sent to the model and kept with the message."""
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]
    answer = client.chat.completions.create(
        model="standin-model", messages=[{"role": "user", "content": parts}]
    )  # type: ignore[misc]
    assert model.requests[-1].json["messages"][-1]["content"] == parts
    assert answer.model_extra is not None
    user = stored(api, answer.model_extra["conversation"])[0]
    assert user["content_parts"] == parts
    assert user["content"] == "What is this?"


def test_a_provider_that_does_not_stream_still_gives_a_streaming_client_its_chunks(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-14: a model that answers `stream: true` with one whole JSON body (two parallel tool calls,
    recorded from the provider): the client still gets a stream the SDK parses, then [DONE]."""
    canned = json.loads((FIXTURES / "tool_calls_detailed_usage.json").read_text(encoding="utf-8"))
    model.configure(mode="canned", canned=canned)
    chunks = list(
        client.chat.completions.create(
            model="standin-model", messages=[{"role": "user", "content": "weather and time?"}], stream=True
        )
    )
    calls = [c for chunk in chunks for choice in chunk.choices for c in (choice.delta.tool_calls or [])]
    assert [(c.index, c.function.name) for c in calls] == [(0, "get_weather"), (1, "get_time")]  # type: ignore[union-attr]
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finishes == ["tool_calls"]
    conversation_id = chunks[0].model_extra["conversation"]  # type: ignore[index]
    stored_calls = stored(api, conversation_id)[-1]["tool_calls"]
    assert stored_calls == canned["choices"][0]["message"]["tool_calls"]
