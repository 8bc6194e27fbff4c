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
