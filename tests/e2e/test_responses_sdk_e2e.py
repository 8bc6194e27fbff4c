"""RSP-2..RSP-7: the official `openai` SDK's Responses and Conversations clients against the real
`chat-local-server` (as `make run`), the stand-in model on loopback speaking only Chat Completions."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.support.local_server import ServerProcess
from tests.support.openai_sdk import sdk, stored
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def client(server: ServerProcess, model: OpenAIStandin) -> Iterator[openai.OpenAI]:
    with sdk(server) as sdk_client:
        yield sdk_client


def test_a_response_then_one_that_continues_it(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-2: the Response parses, output_text is the model's answer, usage has its details; a second
    response with previous_response_id sends the first turn to the model too, in one conversation, and
    not the first one's instructions (they were for that response only)."""
    first = client.responses.create(model="standin-model", input="My name is Ada.", instructions="Be terse.")
    assert first.object == "response"
    assert first.status == "completed"
    assert first.output_text.startswith("Stand-in reply")
    assert first.usage is not None
    assert first.usage.total_tokens > 0
    assert first.usage.input_tokens_details.cached_tokens == 0
    assert first.conversation is not None
    conversation_id = first.conversation.id
    assert first.instructions == "Be terse."
    second = client.responses.create(
        model="standin-model", input="What is my name?", previous_response_id=first.id
    )
    assert model.requests[-2].json["messages"][0] == {"role": "system", "content": "Be terse."}
    sent = model.requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["My name is Ada.", "What is my name?"]
    assert second.instructions is None
    assert client.responses.retrieve(first.id).instructions == "Be terse."
    assert second.previous_response_id == first.id
    assert second.conversation is not None
    assert second.conversation.id == conversation_id
    assert [m["role"] for m in stored(api, conversation_id)] == ["user", "assistant", "user", "assistant"]
    # retrieve and input_items
    again = client.responses.retrieve(second.id)
    assert again.output_text == second.output_text
    assert again.previous_response_id == first.id
    items = client.responses.input_items.list(second.id)
    assert [i.type for i in items.data] == ["message"]
    assert items.data[0].content[0].text == "What is my name?"  # type: ignore[union-attr]


def test_a_function_call_round_trip_through_previous_response_id(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-1, RSP-2: a function_call item carries the model's call id; its function_call_output goes back
    as the tool message answering that id, and the model answers."""
    asked = client.responses.create(model="standin-model", input="Paris", tools=[WEATHER])  # type: ignore[list-item]
    calls = [item for item in asked.output if item.type == "function_call"]
    assert len(calls) == 1
    assert calls[0].name == "get_weather"
    call = calls[0]
    answered = client.responses.create(
        model="standin-model",
        previous_response_id=asked.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    sent = model.requests[-1].json["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == call.call_id
    assert sent[-1] == {"role": "tool", "tool_call_id": call.call_id, "content": "sunny"}
    assert answered.output_text
    assert answered.conversation is not None
    roles = [m["role"] for m in stored(api, answered.conversation.id)]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_refusals_and_isolation(client: openai.OpenAI, server: ServerProcess, model: OpenAIStandin) -> None:
    """RSP-2, RSP-7: unsupported parameters and tool types are 400s naming them; another user's
    response is 404 exactly as a missing one."""
    with pytest.raises(openai.BadRequestError, match="background"):
        client.responses.create(model="standin-model", input="hi", background=True)
    with pytest.raises(openai.BadRequestError, match="web_search"):
        client.responses.create(model="standin-model", input="hi", tools=[{"type": "web_search"}])  # type: ignore[list-item]
    with pytest.raises(openai.BadRequestError, match="not both"):
        client.responses.create(
            model="standin-model", input="hi", previous_response_id="resp_x", conversation="c"
        )
    mine = client.responses.create(model="standin-model", input="secret")
    with sdk(server, "mallory") as other:
        with pytest.raises(openai.NotFoundError) as theirs:
            other.responses.retrieve(mine.id)
        missing_id = mine.id[:-1] + ("0" if mine.id[-1] != "0" else "1")
        with pytest.raises(openai.NotFoundError) as missing:
            other.responses.retrieve(missing_id)
        assert str(theirs.value.body).replace(mine.id, "X") == str(missing.value.body).replace(
            missing_id, "X"
        )
        with pytest.raises(openai.NotFoundError):
            other.responses.create(model="standin-model", input="more", previous_response_id=mine.id)


def test_delete_and_store_false(client: openai.OpenAI, model: OpenAIStandin) -> None:
    """RSP-3: a deleted response is gone; RSP-2: store: false answers and keeps nothing retrievable."""
    made = client.responses.create(model="standin-model", input="forget me")
    deleted = client.responses.delete(made.id)
    assert deleted is None or getattr(deleted, "deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    unstored = client.responses.create(model="standin-model", input="ephemeral", store=False)
    assert unstored.output_text
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)


def test_streaming_events_in_order(client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin) -> None:
    """RSP-5: the named events in order, each with its sequence_number; stored whole at the end."""
    with client.responses.stream(model="standin-model", input="Tell me a story") as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[2:4] == ["response.output_item.added", "response.content_part.added"]
    assert "response.output_text.delta" in kinds
    tail = [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert kinds[-4:] == tail
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")  # type: ignore[union-attr]
    assert deltas == final.output_text
    assert final.conversation is not None
    assert stored(api, final.conversation.id)[-1]["content"] == final.output_text
    assert client.responses.retrieve(final.id).output_text == final.output_text


def test_streamed_function_call(client: openai.OpenAI, model: OpenAIStandin) -> None:
    """RSP-5: a function call streams its arguments and ends with their `.done`."""
    stream = client.responses.create(model="standin-model", input="Oslo", tools=[WEATHER], stream=True)  # type: ignore[list-item]
    events = list(stream)
    kinds = [e.type for e in events]
    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds
    final = events[-1]
    assert final.type == "response.completed"
    assert final.response.output[0].type == "function_call"


def test_input_tokens(client: openai.OpenAI, model: OpenAIStandin) -> None:
    """RSP-3: input_tokens counts the input with its context, no model call."""
    before = len(model.requests)
    alone = client.responses.input_tokens.count(model="standin-model", input="How many tokens is this?")
    assert alone.input_tokens > 0
    made = client.responses.create(model="standin-model", input="A first turn with some words in it.")
    more = client.responses.input_tokens.count(
        model="standin-model", input="How many tokens is this?", previous_response_id=made.id
    )
    assert more.input_tokens > alone.input_tokens
    assert len(model.requests) == before + 1


def test_conversations(client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin) -> None:
    """RSP-6: a Responses conversation is our conversation: items, metadata, responses in it."""
    conversation = client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "I live in Lisbon."}],
        metadata={"topic": "travel"},
    )
    assert conversation.metadata == {"topic": "travel"}
    assert stored(api, conversation.id)[0]["content"] == "I live in Lisbon."
    answer = client.responses.create(
        model="standin-model", input="Where do I live?", conversation=conversation.id
    )
    sent = model.requests[-1].json["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["I live in Lisbon.", "Where do I live?"]
    items = client.conversations.items.list(conversation.id, order="asc")
    assert [i.type for i in items.data] == ["message", "message", "message"]
    assert items.data[-1].id == answer.output[0].id
    added = client.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "Noted."}]
    )
    item_id = added.data[0].id
    assert client.conversations.items.retrieve(item_id, conversation_id=conversation.id).id == item_id
    client.conversations.items.delete(item_id, conversation_id=conversation.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(item_id, conversation_id=conversation.id)
    updated = client.conversations.update(conversation.id, metadata={"topic": "home"})
    assert updated.metadata == {"topic": "home"}
    assert client.conversations.retrieve(conversation.id).metadata == {"topic": "home"}
    assert client.conversations.delete(conversation.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)


def test_truncation_disabled_refuses_what_the_window_would_cut(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-2: truncation "disabled" is a 400 when the window would leave messages out; "auto" lets the
    conversation's window policy choose (WIN-3), as a post does."""
    first = client.responses.create(model="standin-model", input="one")
    assert first.conversation is not None
    patched = api.patch(
        f"/conversations/{first.conversation.id}", json={"window_policy": {"max_messages": 2}}
    )
    assert patched.status_code == 200, patched.text
    second = client.responses.create(model="standin-model", input="two", previous_response_id=first.id)
    before = len(model.requests)
    with pytest.raises(openai.BadRequestError, match="does not fit"):
        client.responses.create(
            model="standin-model", input="three", previous_response_id=second.id, truncation="disabled"
        )
    assert len(model.requests) == before
    cut = client.responses.create(
        model="standin-model", input="three", previous_response_id=second.id, truncation="auto"
    )
    assert cut.truncation == "auto"
    assert len(model.requests[-1].json["messages"]) == 2


def test_a_broken_stream_is_stored_incomplete(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-5: the model's stream breaks part way: the client gets response.failed, what arrived is
    stored as incomplete (as on /v1/chat/completions)."""
    model.set_mode("stream_cut")
    stream = client.responses.create(model="standin-model", input="Break in the middle of this", stream=True)
    events = list(stream)
    last = events[-1]
    assert last.type in ("response.failed", "response.incomplete")
    assert last.response.status == "incomplete"
    assert last.response.conversation is not None
    reply = stored(api, last.response.conversation.id)[-1]
    assert reply["status"] == "incomplete"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")  # type: ignore[union-attr]
    assert reply["content"] == deltas


def test_a_retried_request_with_an_idempotency_key_is_answered_once(
    client: openai.OpenAI, model: OpenAIStandin
) -> None:
    """RSP-2, API-6: the same Idempotency-Key replays the first response; the model is asked once."""
    headers = {"Idempotency-Key": "resp-retry-1"}
    first = client.responses.create(
        model="standin-model", input="Only once", instructions="Be brief.", extra_headers=headers
    )
    asked = len(model.requests)
    again = client.responses.create(
        model="standin-model", input="Only once", instructions="Be brief.", extra_headers=headers
    )
    assert again.id == first.id
    assert again.output_text == first.output_text
    assert len(model.requests) == asked
