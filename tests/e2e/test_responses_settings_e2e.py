"""RSP-2, RSP-8, RSP-9: what a response keeps of its request, through the official `openai` SDK against
the real `chat-local-server`, the stand-in model on loopback recording what it is sent: a retrieved
response shows the settings it ran with, `instructions` apply to one response only, and `store: false`
leaves no message in the table once answered (a retry with its Idempotency-Key answers the same)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from chat_core.store.keys import conversation_pk

from tests.support.local_server import ServerProcess, local_client, settle_streams
from tests.support.openai_sdk import sdk
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    "strict": False,
}
SHOWN = (
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "max_output_tokens",
    "text",
    "reasoning",
    "truncation",
    "metadata",
)


@pytest.fixture
def client(server: ServerProcess, model: OpenAIStandin) -> Iterator[openai.OpenAI]:
    with sdk(server) as sdk_client:
        yield sdk_client


def _partition(api: httpx.Client, owner: str, conversation_id: str) -> list[dict[str, Any]]:
    """Every item of the conversation's partition in the local table (keyed by the bare id, RSP-6)."""
    health = api.get("/_local/health").json()
    dynamodb = local_client(health["dynamodb_endpoint"])
    answer = dynamodb.query(
        TableName=health["table"],
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={
            ":pk": {"S": conversation_pk(owner, conversation_id.removeprefix("conv_"))}
        },
    )
    items: list[dict[str, Any]] = answer["Items"]
    return items


def test_a_retrieved_response_shows_the_settings_it_ran_with(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-2: every setting the create call answered is what a later retrieve shows; a response made
    with none shows the defaults and keeps nothing beside its answer."""
    made = client.responses.create(
        model="standin-model",
        input="Define serendipity.",
        instructions="Answer in one line.",
        tools=[LOOKUP],  # type: ignore[list-item]
        tool_choice="none",
        parallel_tool_calls=False,
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=200,
        text={"format": {"type": "json_object"}},
        reasoning={"effort": "low"},
        truncation="auto",
        metadata={"ticket": "T-1"},
    )
    sent = model.requests[-1].json
    assert (sent["temperature"], sent["top_p"], sent["tool_choice"]) == (0.3, 0.9, "none")
    assert sent["response_format"] == {"type": "json_object"}
    again = client.responses.retrieve(made.id)
    created, read = made.model_dump(), again.model_dump()
    assert {k: read[k] for k in SHOWN} == {k: created[k] for k in SHOWN}
    assert read["instructions"] == "Answer in one line."
    assert read["tools"][0]["name"] == "lookup"
    assert read["metadata"] == {"ticket": "T-1"}
    assert (read["temperature"], read["max_output_tokens"], read["parallel_tool_calls"]) == (0.3, 200, False)
    same = dict(
        instructions="Answer in one line.",
        tools=[LOOKUP],
        tool_choice="none",
        parallel_tool_calls=False,
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=200,
        text={"format": {"type": "json_object"}},
        reasoning={"effort": "low"},
        truncation="auto",
        metadata={"ticket": "T-1"},
    )
    # A chained response with the same settings keeps them once (a reference), and shows them whole.
    chained = client.responses.create(
        model="standin-model",
        input="And luck?",
        previous_response_id=made.id,
        **same,  # type: ignore[arg-type]
    )
    read = client.responses.retrieve(chained.id).model_dump()
    assert {k: read[k] for k in SHOWN} == {k: created[k] for k in SHOWN}
    plain = client.responses.create(model="standin-model", input="Hello", previous_response_id=chained.id)
    shown = client.responses.retrieve(plain.id)
    assert (shown.instructions, shown.tools, shown.temperature, shown.metadata) == (None, [], 1.0, {})
    assert plain.conversation is not None
    answers = [
        i
        for i in _partition(api, "alice", plain.conversation.id)
        if i.get("role", {}).get("S") == "assistant"
    ]
    kept = [item.get("settings", {}).get("S") for item in answers]
    assert kept[0] is not None
    assert kept[0].startswith("{")
    assert kept[1:] == ["=2:" + kept[1].split(":")[1], None]


def test_instructions_apply_to_one_response(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-8: a response's instructions are sent with its own turn only, before the conversation's
    system prompt (set through our routes), which every turn keeps; neither replaces the other."""
    first = client.responses.create(model="standin-model", input="One", instructions="Speak like a pirate.")
    assert first.conversation is not None
    conversation_id = first.conversation.id
    assert model.requests[-1].json["messages"][0] == {"role": "system", "content": "Speak like a pirate."}
    assert api.get(f"/conversations/{conversation_id}").json().get("system_prompt") is None
    patched = api.patch(f"/conversations/{conversation_id}", json={"system_prompt": "You help with maps."})
    assert patched.status_code == 200, patched.text
    second = client.responses.create(model="standin-model", input="Two", previous_response_id=first.id)
    assert model.requests[-1].json["messages"][0] == {"role": "system", "content": "You help with maps."}
    assert [m["role"] for m in model.requests[-1].json["messages"]].count("system") == 1
    third = client.responses.create(
        model="standin-model", input="Three", previous_response_id=second.id, instructions="Be brief."
    )
    assert model.requests[-1].json["messages"][0] == {
        "role": "system",
        "content": "Be brief.\n\nYou help with maps.",
    }
    assert third.instructions == "Be brief."
    client.responses.create(model="standin-model", input="Four", previous_response_id=third.id)
    assert model.requests[-1].json["messages"][0] == {"role": "system", "content": "You help with maps."}
    assert api.get(f"/conversations/{conversation_id}").json()["system_prompt"] == "You help with maps."
    # Counting the input takes the instructions into account the same way.
    with_them = client.responses.input_tokens.count(
        model="standin-model", input="Five", previous_response_id=third.id, instructions="Be brief."
    )
    without = client.responses.input_tokens.count(
        model="standin-model", input="Five", previous_response_id=third.id
    )
    assert with_them.input_tokens > without.input_tokens


def test_store_false_keeps_no_message_and_a_retry_answers_the_same(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin, server: ServerProcess
) -> None:
    """RSP-9: a store: false response's conversation is deleted for good as soon as it is answered (no
    message item is left); the same Idempotency-Key answers the same response, whole or streamed,
    without asking the model again; its usage is still counted."""
    before = api.get("/usage").json()
    headers = {"Idempotency-Key": "unstored-1"}
    made = client.responses.create(
        model="standin-model", input="Keep nothing of this", store=False, extra_headers=headers
    )
    assert made.output_text.startswith("Stand-in reply")
    assert made.store is False
    assert made.conversation is None
    conversation_id = made.id.removeprefix("resp_").rsplit("_", 1)[0]
    assert _partition(api, "alice", conversation_id) == []
    assert api.get(f"/conversations/{conversation_id}").status_code == 404
    asked = len(model.requests)
    again = client.responses.create(
        model="standin-model", input="Keep nothing of this", store=False, extra_headers=headers
    )
    assert again.model_dump() == made.model_dump()
    with client.responses.stream(
        model="standin-model", input="Keep nothing of this", store=False, extra_headers=headers
    ) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response()
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert streamed.output_text == made.output_text
    assert len(model.requests) == asked
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    # The usage of the day counts it (the stream priced the answer before it was deleted).
    settle_streams(server.url)
    after = api.get("/usage").json()
    assert after != before
    # A streamed one is deleted too.
    with client.responses.stream(model="standin-model", input="Stream and forget", store=False) as stream:
        final = stream.get_final_response()
    gone = final.id.removeprefix("resp_").rsplit("_", 1)[0]
    assert _partition(api, "alice", gone) == []


def test_store_false_with_system_items_and_earlier_messages(
    client: openai.OpenAI, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-9: an unstored response whose input starts a conversation with a system prompt and earlier
    messages (written before the post) leaves nothing either."""
    made = client.responses.create(
        model="standin-model",
        store=False,
        input=[
            {"type": "message", "role": "developer", "content": "Be kind."},
            {"type": "message", "role": "user", "content": "Hi"},
            {"type": "message", "role": "assistant", "content": "Hello!"},
            {"type": "message", "role": "user", "content": "Bye"},
        ],
    )
    sent = model.requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    conversation_id = made.id.removeprefix("resp_").rsplit("_", 1)[0]
    assert _partition(api, "alice", conversation_id) == []
