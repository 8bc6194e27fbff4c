"""RSP-2, RSP-5, RSP-6: every object the Responses and Conversations routes answer, checked against the
Open Responses specification (tests/openresponses/spec.py, its models as published) rather than against
copies of our own output: a created, streamed, retrieved response, each response snapshot and item of the
stream's events, `input_items`, a conversation's items. And the ids and errors as OpenAI gives them:
conversations `conv_<id>` on `/v1`, bare on our own routes, either accepted by both; a missing
`previous_response_id` is `previous_response_not_found`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, TypeAdapter

from tests.openresponses import spec
from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
#: Every streaming event of the specification, by its `type`.
EVENTS: dict[str, type[BaseModel]] = {
    next(iter(model.model_fields["type"].annotation)).value: model  # type: ignore[union-attr, arg-type]
    for name, model in vars(spec).items()
    if name.endswith("StreamingEvent")
}
ITEM = TypeAdapter(spec.Message | spec.FunctionCall | spec.FunctionCallOutput | spec.CompactionBody)


def conforms(model: type[BaseModel] | TypeAdapter[Any], answer: Any) -> None:
    """The answer as JSON, validated strictly (types as the specification says, none coerced)."""
    raw = json.dumps(answer)
    if isinstance(model, TypeAdapter):
        model.validate_json(raw, strict=True)
    else:
        model.model_validate_json(raw, strict=True)


def events_of(api: httpx.Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    with api.stream("POST", "/v1/responses", json={**body, "stream": True}) as answer:
        assert answer.status_code == 200
        return [
            json.loads(line[5:])
            for line in answer.iter_lines()
            if line.startswith("data:") and line != "data: [DONE]"
        ]


def test_a_response_and_its_reads_conform_to_the_specification(api: httpx.Client) -> None:
    """RSP-2: create (with a tool called), retrieve and input_items answer the specification's
    ResponseResource and items: `completed_at` an integer once completed, the penalties, each tool's
    `strict` present."""
    # Given a response whose model calls the tool it was offered
    created = api.post("/v1/responses", json={"model": "standin-model", "input": "Paris", "tools": [WEATHER]})
    assert created.status_code == 200, created.text
    response = created.json()
    # Then it, and the same response read back, are the specification's
    conforms(spec.ResponseResource, response)
    assert response["status"] == "completed"
    assert isinstance(response["completed_at"], int)
    assert response["completed_at"] >= response["created_at"]
    assert response["tools"][0]["strict"] is None
    assert response["presence_penalty"] == 0
    assert response["frequency_penalty"] == 0
    assert [item["type"] for item in response["output"]] == ["function_call"]
    again = api.get(f"/v1/responses/{response['id']}").json()
    conforms(spec.ResponseResource, again)
    assert again["completed_at"] == response["completed_at"]
    # And its input items are the specification's items
    items = api.get(f"/v1/responses/{response['id']}/input_items").json()
    assert items["object"] == "list"
    for item in items["data"]:
        conforms(ITEM, item)


def test_every_event_of_a_stream_conforms_to_the_specification(api: httpx.Client) -> None:
    """RSP-5: each event of a streamed text answer and of a streamed tool call is one of the
    specification's, with its response snapshots complete (`completed_at` null until completed)."""
    # Given a streamed answer and a streamed tool call
    text = events_of(api, {"model": "standin-model", "input": "Count from 1 to 5."})
    call = events_of(api, {"model": "standin-model", "input": "Paris", "tools": [WEATHER]})
    # Then every event validates as the specification's event of its type
    for event in [*text, *call]:
        assert event["type"] in EVENTS, event["type"]
        conforms(EVENTS[event["type"]], event)
    snapshots = [e["response"] for e in text if "response" in e]
    assert snapshots[0]["completed_at"] is None
    assert text[-1]["type"] == "response.completed"
    assert isinstance(text[-1]["response"]["completed_at"], int)
    assert "response.function_call_arguments.done" in [e["type"] for e in call]


def test_conversation_ids_take_openais_form_on_v1_and_both_forms_are_accepted(api: httpx.Client) -> None:
    """RSP-6: `/v1` shows a conversation as `conv_<id>` (the Conversations API and a response's
    `conversation`); our own routes show the bare id; each side accepts both forms."""
    # Given a conversation made through the Conversations API, and a response in it
    made = api.post("/v1/conversations", json={"metadata": {"topic": "ids"}}).json()
    assert made["id"].startswith("conv_")
    bare = made["id"].removeprefix("conv_")
    response = api.post(
        "/v1/responses", json={"model": "standin-model", "input": "Hi", "conversation": made["id"]}
    ).json()
    # Then the response names it in OpenAI's form, and /v1 reads it under either form
    assert response["conversation"] == {"id": made["id"]}
    assert api.get(f"/v1/conversations/{bare}").json()["id"] == made["id"]
    items = api.get(f"/v1/conversations/{made['id']}/items", params={"order": "asc"}).json()
    assert [item["role"] for item in items["data"]] == ["user", "assistant"]
    for item in items["data"]:
        conforms(ITEM, item)
    followed = api.post(
        "/v1/responses", json={"model": "standin-model", "input": "Again", "conversation": {"id": bare}}
    ).json()
    assert followed["conversation"] == {"id": made["id"]}
    # And our own routes show the bare id and take either form too
    assert api.get(f"/conversations/{made['id']}").json()["conversation_id"] == bare
    posted = api.post("/messages", json={"conversation_id": made["id"], "content": "And ours"})
    assert posted.status_code in (200, 201), posted.text
    assert posted.json()["conversation_id"] == bare


def test_a_missing_previous_response_is_previous_response_not_found(api: httpx.Client) -> None:
    """RSP-2: an unknown `previous_response_id` answers as OpenAI does: 404, the request's field named."""
    # Given a previous_response_id that names nothing
    missing = "resp_01ARZ3NDEKTSV4RRFFQ69G5FAV_3"
    # When a response continues it
    answer = api.post(
        "/v1/responses", json={"model": "standin-model", "input": "x", "previous_response_id": missing}
    )
    # Then the error names the field and OpenAI's code
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == ("previous_response_id", "previous_response_not_found")
    assert error["message"] == f"Previous response with id '{missing}' not found."


def test_compact_answers_a_compaction_item_that_a_later_response_expands(
    api: httpx.Client, server: ServerProcess, model: OpenAIStandin
) -> None:
    """RSP-10: POST /v1/responses/compact folds the input into one `compaction` item (the
    specification's CompactResource) with the summarizer's model call, kept as the conversation's
    summary; passed back as input, the item reaches the model as the summary it carries."""
    # Given a history to compact
    history = [
        {"type": "message", "role": "user", "content": "My name is Ada and I like green tea."},
        {"type": "message", "role": "assistant", "content": "Noted, Ada."},
    ]
    # When it is compacted
    compacted = api.post("/v1/responses/compact", json={"model": "standin-model", "input": history})
    # Then the answer is the specification's compaction, made by a summarizing model call
    assert compacted.status_code == 200, compacted.text
    body = compacted.json()
    conforms(spec.CompactResource, body)
    assert [item["type"] for item in body["output"]] == ["compaction"]
    assert body["usage"]["input_tokens"] > 0
    asked = model.requests[-1].json["messages"]
    assert asked[0]["content"].startswith("You maintain the running summary")
    assert "Ada" in asked[1]["content"]
    # And passed back as input, it reaches the model as the summary it carries
    item = body["output"][0]
    follow = api.post(
        "/v1/responses",
        json={"model": "standin-model", "input": [item, {"role": "user", "content": "What do I like?"}]},
    )
    assert follow.status_code == 200, follow.text
    sent = model.requests[-1].json["messages"]
    assert sent[0]["role"] == "system"
    assert sent[0]["content"].startswith("Summary of earlier conversation (messages 1\u20132):")
    # And another user cannot compact from alice's responses; a missing model is a 400
    first = api.post("/v1/responses", json={"model": "standin-model", "input": "Hello"}).json()
    with server.client("mallory") as other:
        refused = other.post(
            "/v1/responses/compact", json={"model": "standin-model", "previous_response_id": first["id"]}
        )
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "previous_response_not_found"
    unnamed = api.post("/v1/responses/compact", json={"previous_response_id": first["id"]})
    assert unnamed.status_code == 400
    assert unnamed.json()["error"]["param"] == "model"


def test_compacting_a_response_keeps_the_summary_the_inspector_shows(api: httpx.Client) -> None:
    """RSP-10: compacting from a response stores the conversation's summary up to that response, per
    user: the window inspector of that conversation shows it."""
    # Given a response
    first = api.post("/v1/responses", json={"model": "standin-model", "input": "Remember: cobalt."}).json()
    conversation_id = first["conversation"]["id"]
    # When it is compacted
    compacted = api.post(
        "/v1/responses/compact", json={"model": "standin-model", "previous_response_id": first["id"]}
    )
    assert compacted.status_code == 200, compacted.text
    # Then the conversation's window carries the summary of both messages
    window = api.post(f"/conversations/{conversation_id}/window", json={"content": "next?"}).json()
    summary = window["inspect"]["summary"]
    assert (summary["from_seq"], summary["to_seq"]) == (1, 2)


def test_context_management_compacts_past_the_threshold_and_the_response_says_so(
    api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-10: `context_management` on create: under the threshold nothing is compacted; past it the
    conversation is compacted before the turn, the model gets the summary instead of what it folded,
    and the response (whole or streamed) shows the compaction item before its answer."""
    managed = [{"type": "compaction", "compact_threshold": 40}]
    # Given a response, continued once under the threshold
    first = api.post(
        "/v1/responses", json={"model": "standin-model", "input": "My code word is cobalt."}
    ).json()
    small = api.post(
        "/v1/responses",
        json={
            "model": "standin-model",
            "input": "Hi",
            "previous_response_id": first["id"],
            "context_management": [{"type": "compaction", "compact_threshold": 100_000}],
        },
    ).json()
    assert [item["type"] for item in small["output"]] == ["message"]
    # When it is continued past the threshold
    big = api.post(
        "/v1/responses",
        json={
            "model": "standin-model",
            "input": "What was my code word? " * 10,
            "previous_response_id": small["id"],
            "context_management": managed,
        },
    )
    # Then the response shows the compaction first, and the model was sent the summary
    assert big.status_code == 200, big.text
    body = big.json()
    conforms(spec.ResponseResource, body)
    assert [item["type"] for item in body["output"]] == ["compaction", "message"]
    assert body["context_management"] == managed
    sent = model.requests[-1].json["messages"]
    assert sent[0]["content"].startswith("Summary of earlier conversation (messages 1\u20134):")
    assert [m["role"] for m in sent] == ["system", "user"]
    # And streamed, the compaction is an output item of the stream before the answer
    events = events_of(
        api,
        {
            "model": "standin-model",
            "input": "And again? " * 10,
            "previous_response_id": body["id"],
            "context_management": managed,
        },
    )
    for event in events:
        conforms(EVENTS[event["type"]], event)
    added = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert added == ["compaction", "message"]
    assert [i["type"] for i in events[-1]["response"]["output"]] == ["compaction", "message"]
