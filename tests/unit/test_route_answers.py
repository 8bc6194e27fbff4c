"""API-9: the edge writes each answer through its route's response model (chat_core.http.route_answers),
and the text a client receives is the one the domain's outcome always gave: same keys, same order, same
nulls, same numbers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chat_core.http.api import build_app, json_response
from chat_core.http.route_answers import ROUTES, answer_model, dump_json, wire_body
from pydantic import ValidationError

from tests.support.events import http_event
from tests.support.lambda_context import LambdaContext


def _assistant_message() -> dict[str, Any]:
    """An assistant message as chat.views writes it: optional fields in its own order, not the model's."""
    return {
        "message_id": "m2",
        "conversation_id": "c1",
        "role": "assistant",
        "content": "Bonjour, ça va ? 🙂",
        "status": "ok",
        "created_at": "2026-11-26T10:00:00.000Z",
        "pinned": True,
        "metadata": {"z": 1, "a": [1.5, None]},
        "model": "standin-model",
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        "finish_reason": "stop",
        "cost": {"micros": 27, "usd": "0.000027", "status": "estimated"},
        "parent_id": None,
        "something_new": {"b": 2, "a": 1},
    }


def test_a_post_answer_reads_as_the_outcome_wrote_it() -> None:
    """API-9: POST /messages 201 through PostMessageOut: order, nulls, unknown fields and text kept."""
    # Given the outcome of a post: keys in chat.views' order, a null, an unknown field, non-ASCII text
    outcome = {"conversation_id": "c1", "user_message": None, "assistant_message": _assistant_message()}
    # When the edge writes it for the route and status
    text = wire_body("POST /messages", 201, outcome)
    # Then it went through the route's model, and the text is what the outcome always gave
    assert answer_model("POST /messages", 201).__name__ == "PostMessageOut"  # type: ignore[union-attr]
    assert text == json.dumps(outcome, ensure_ascii=False, separators=(",", ":"))


def test_fields_an_outcome_leaves_out_stay_out() -> None:
    """API-1: optional fields (tool_calls, error, refusal ...) appear only when the outcome set them."""
    # Given a user message with only its own fields
    message = {
        "message_id": "m1",
        "conversation_id": "c1",
        "role": "user",
        "content": "hi",
        "status": "ok",
        "created_at": "2026-11-26T10:00:00.000Z",
    }
    # When the edge writes it as PATCH …/messages/{message_id} answers it
    text = wire_body("PATCH /conversations/{conversation_id}/messages/{message_id}", 200, message)
    # Then no default of the model was added
    assert json.loads(text) == message
    assert list(json.loads(text)) == list(message)


def test_statuses_without_a_model_and_unknown_routes_are_written_as_given() -> None:
    """API-9: an error body or a route the table does not describe passes through unchanged."""
    # Given a body of a status the route answers with the one error shape, and a route nobody describes
    body = {"anything": [3, 2.0, "é"]}
    # When the edge writes them
    # Then they are the body as it is
    assert wire_body("POST /messages", 409, body) == dump_json(body)
    assert wire_body("GET /nowhere", 200, body) == dump_json(body)
    assert wire_body(None, 200, body) == dump_json(body)


def test_an_outcome_the_model_refuses_is_not_sent() -> None:
    """API-9: a body that breaks its route's model fails at the edge instead of reaching a client."""
    # Given a conversation page without its items
    # When the edge writes it
    # Then the model refuses it
    with pytest.raises(ValidationError):
        wire_body("GET /conversations", 200, {"next_cursor": None})


def test_every_documented_success_has_a_model_or_no_json_body() -> None:
    """API-9: each route of the table names the model its success is written through (or has no JSON)."""
    # Given the table of what each route answers
    # When the routes whose success has no model are listed
    bodiless = sorted(key for key, doc in ROUTES.items() if doc.model is None)
    # Then they answer nothing, or something other than JSON (files, JSON Lines, the console)
    assert all(ROUTES[key].success == 204 or ROUTES[key].media_type != "application/json" for key in bodiless)


def test_the_resolver_writes_a_route_answer_through_its_model() -> None:
    """API-9: inside a route of a `build_app` resolver, `json_response` uses the route's model."""
    # Given a resolver serving GET /worlds whose route answers a page in its own key order
    app = build_app()
    page = {"next_cursor": None, "items": [{"created_at": "t", "dialogues": 2, "world_id": "w1"}]}

    @app.get("/worlds")
    def worlds() -> Any:
        return json_response(200, page)

    @app.get("/not-in-the-table")
    def other() -> Any:
        return json_response(200, {"b": 1, "a": None})

    # When both are called
    answer = app.resolve(http_event("GET", "/worlds", route="GET /worlds"), LambdaContext())
    plain = app.resolve(http_event("GET", "/not-in-the-table"), LambdaContext())
    # Then the page validated against WorldsOut and reads as the outcome gave it; the other is as given
    assert answer["statusCode"] == 200
    assert answer["body"] == dump_json(page)
    assert plain["body"] == '{"b":1,"a":null}'


def test_a_route_answer_that_breaks_its_model_is_a_500() -> None:
    """DES-1: an answer that breaks the contract is an internal error (logged), never sent as it is."""
    # Given a resolver whose GET /worlds route answers something that is not a page of worlds
    app = build_app()

    @app.get("/worlds")
    def worlds() -> Any:
        return json_response(200, {"items": "not a list", "next_cursor": None})

    # When it is called
    answer = app.resolve(http_event("GET", "/worlds", route="GET /worlds"), LambdaContext())
    # Then the client gets the one error shape
    assert answer["statusCode"] == 500
    assert json.loads(answer["body"])["error"]["code"] == "internal_error"
