"""API-5: bad input of any kind on every route gets a 4xx JSON error that says what is wrong, never a 5xx."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import events
from tests.support import functions as api
from tests.support.functions import Answer, invoke

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

CID = "01J0000000000000000000000Z"

BAD_CREATE: dict[str, dict[str, Any]] = {
    "malformed_json": {"raw_body": '{"title": '},
    "not_an_object": {"body": ["title"]},
    "title_wrong_type": {"body": {"title": 42}},
    "title_too_long": {"body": {"title": "t" * 201}},
    "system_prompt_too_long": {"body": {"system_prompt": "s" * 20_001}},
    "model_blank": {"body": {"model": ""}},
    "model_with_spaces": {"body": {"model": "gpt 4o; drop table"}},
    "unknown_field": {"body": {"titel": "typo"}},
    "policy_empty": {"body": {"window_policy": {}}},
    "policy_zero_messages": {"body": {"window_policy": {"max_messages": 0}}},
    "policy_too_many_messages": {"body": {"window_policy": {"max_messages": 100_000}}},
    "policy_string_number": {"body": {"window_policy": {"max_messages": "10"}}},
    "policy_bool": {"body": {"window_policy": {"max_tokens": True}}},
    "policy_bad_method": {"body": {"window_policy": {"max_tokens": 100, "method": "guess"}}},
    "policy_unknown_field": {"body": {"window_policy": {"max_tokens": 100, "budget": 5}}},
    "text_plain": {"raw_body": "title=x", "headers": {"content-type": "text/plain"}},
}

BAD_POST: dict[str, dict[str, Any]] = {
    "malformed_json": {"raw_body": "{'content': 'single quotes'}"},
    "empty_body": {"raw_body": ""},
    "no_body": {},
    "not_an_object": {"body": "hello"},
    "content_missing": {"body": {"model": "gpt-4o"}},
    "content_null": {"body": {"content": None}},
    "content_number": {"body": {"content": 42}},
    # (a list of content parts is valid, API-15; a part without its text is not)
    "content_part_without_text": {"body": {"content": [{"type": "text"}]}},
    "content_empty": {"body": {"content": ""}},
    "content_too_long": {"body": {"content": "x" * 5001}},
    "content_huge": {"body": {"content": "x" * 300_000}},
    "conversation_id_number": {"body": {"content": "hi", "conversation_id": 7}},
    "conversation_id_too_long": {"body": {"content": "hi", "conversation_id": "0" * 65}},
    "model_number": {"body": {"content": "hi", "model": 4}},
    "model_bad_chars": {"body": {"content": "hi", "model": "../../etc"}},
    "unknown_field": {"body": {"content": "hi", "role": "system"}},
    "idempotency_key_too_long": {"body": {"content": "hi"}, "headers": {"Idempotency-Key": "k" * 256}},
    "idempotency_key_blank": {"body": {"content": "hi"}, "headers": {"Idempotency-Key": ""}},
}

BAD_LIST: dict[str, dict[str, str]] = {
    "limit_zero": {"limit": "0"},
    "limit_negative": {"limit": "-5"},
    "limit_too_big": {"limit": "101"},
    "limit_not_a_number": {"limit": "ten"},
    "limit_float": {"limit": "2.5"},
    "cursor_garbage": {"cursor": "garbage"},
    "cursor_bad_base64": {"cursor": "!!!.???"},
    "cursor_empty": {"cursor": ""},
    "cursor_too_long": {"cursor": "a" * 5000},
    "cursor_json_but_unsigned": {"cursor": "eyJwayI6IngifQ.AAAA"},
}

BAD_DETAIL: dict[str, dict[str, str]] = {
    "limit_zero": {"limit": "0"},
    "limit_too_big": {"limit": "201"},
    "limit_not_a_number": {"limit": "all"},
    "cursor_garbage": {"cursor": "x.y.z"},
    "cursor_unsigned": {"cursor": "eyJwayI6IngiLCJzayI6Ik1TRyMxIn0.AAAAAAAAAAAAAAAAAAAAAA"},
}

BAD_WINDOW: dict[str, dict[str, Any]] = {
    "malformed_json": {"raw_body": "[1, 2"},
    "content_missing": {"body": {}},
    "content_number": {"body": {"content": 1}},
    "content_too_long": {"body": {"content": "y" * 5001}},
    "policy_invalid": {"body": {"content": "hi", "window_policy": {"max_messages": -1}}},
    "unknown_field": {"body": {"content": "hi", "dry_run": True}},
}


def _assert_clear_4xx(answer: Answer) -> None:
    assert 400 <= answer.status < 500, (answer.status, answer.body)
    error = answer.body["error"]
    assert isinstance(error["code"], str)
    assert error["code"]
    assert isinstance(error["message"], str)
    assert error["message"]


@pytest.mark.parametrize("case", sorted(BAD_CREATE))
def test_create_conversation_bad_input_is_4xx(chat_service: None, case: str) -> None:
    """API-5 on POST /conversations."""
    # Given a malformed request
    event = events.http_event("POST", "/conversations", **BAD_CREATE[case])
    # When it reaches the function
    answer = invoke("create_conversation", event)
    # Then the answer is a clear 4xx JSON error and nothing was created
    _assert_clear_4xx(answer)
    assert api.listing().body["items"] == []


@pytest.mark.parametrize("case", sorted(BAD_POST))
def test_post_message_bad_input_is_4xx(chat_service: None, case: str) -> None:
    """API-5 on POST /messages (new conversation)."""
    # Given a malformed request
    event = events.http_event("POST", "/messages", **BAD_POST[case])
    # When it reaches the function
    answer = invoke("post_message", event)
    # Then the answer is a clear 4xx JSON error and no conversation was created
    _assert_clear_4xx(answer)
    assert api.listing().body["items"] == []


@pytest.mark.parametrize("case", sorted(BAD_POST))
def test_post_message_bad_input_to_existing_conversation_is_4xx(chat_service: None, case: str) -> None:
    """API-5 on POST /messages (existing conversation): refused, the conversation unchanged."""
    # Given a conversation and a malformed request aimed at it
    conversation_id = api.post("hello").body["conversation_id"]
    spec = dict(BAD_POST[case])
    if isinstance(spec.get("body"), dict) and "conversation_id" not in spec["body"]:
        spec["body"] = {**spec["body"], "conversation_id": conversation_id}
    # When it reaches the function
    answer = invoke("post_message", events.http_event("POST", "/messages", **spec))
    # Then it is a clear 4xx and the conversation still has its two messages
    _assert_clear_4xx(answer)
    assert len(api.detail(conversation_id).body["messages"]) == 2


def test_too_long_content_has_its_own_code(chat_service: None) -> None:
    """API-3: 5001 characters -> 422 message_too_long with the numbers in the message."""
    # Given content of 5001 characters
    # When it is posted
    answer = api.post("é" * 5001)
    # Then the error says what is wrong
    assert answer.status == 422
    assert answer.body["error"] == {
        "code": "message_too_long",
        "message": "content has 5001 characters; the limit is 5000",
    }


def test_validation_error_names_the_field(chat_service: None) -> None:
    """DES-1: validation errors use the one shape and say which field is wrong."""
    # Given a body with a wrong type and an unknown field
    event = events.post_message({"content": 5, "colour": "blue"})
    # When it is posted
    answer = invoke("post_message", event)
    # Then it is 422 validation_error naming both fields
    assert answer.status == 422
    assert answer.error_code == "validation_error"
    fields = {d["field"] for d in answer.body["error"]["details"]}
    assert fields == {"body.content", "body.colour"}


@pytest.mark.parametrize("case", sorted(BAD_LIST))
def test_list_conversations_bad_input_is_4xx(chat_service: None, case: str) -> None:
    """API-5 on GET /conversations (bad limit, bad cursor)."""
    # Given a bad query string
    # When the list is asked for
    answer = invoke("list_conversations", events.list_conversations(BAD_LIST[case]))
    # Then it is a clear 4xx
    _assert_clear_4xx(answer)


@pytest.mark.parametrize("case", sorted(BAD_DETAIL))
def test_get_conversation_bad_input_is_4xx(chat_service: None, case: str) -> None:
    """API-5 on GET /conversations/{id} (bad limit, bad cursor) on an existing conversation."""
    # Given a conversation and a bad query string
    conversation_id = api.post("hello").body["conversation_id"]
    # When its detail is asked for
    answer = invoke("get_conversation", events.get_conversation(conversation_id, BAD_DETAIL[case]))
    # Then it is a clear 4xx
    _assert_clear_4xx(answer)


def test_delete_conversation_bad_id_is_4xx(chat_service: None) -> None:
    """API-5 on DELETE /conversations/{id}: a malformed id is a JSON 404."""
    # Given a malformed id
    # When it is deleted
    answer = api.delete("'; DROP TABLE --")
    # Then it is a clear 4xx
    _assert_clear_4xx(answer)


@pytest.mark.parametrize("case", sorted(BAD_WINDOW))
def test_build_window_bad_input_is_4xx(chat_service: None, case: str) -> None:
    """API-5 on POST /conversations/{id}/window."""
    # Given a conversation and a malformed request
    conversation_id = api.post("hello").body["conversation_id"]
    event = events.http_event(
        "POST",
        f"/conversations/{conversation_id}/window",
        route="/conversations/{conversation_id}/window",
        path_parameters={"conversation_id": conversation_id},
        **BAD_WINDOW[case],
    )
    # When it reaches the function
    answer = invoke("build_window", event)
    # Then it is a clear 4xx
    _assert_clear_4xx(answer)


def test_base64_encoded_body_is_accepted(chat_service: None) -> None:
    """API Gateway may base64-encode the body; the function decodes it like any other."""
    # Given a base64-encoded JSON body
    event = events.post_message({"content": "encoded"}, base64_body=True)
    # When it is posted
    answer = invoke("post_message", event)
    # Then it is stored as the plain text
    assert answer.status == 201
    assert answer.body["user_message"]["content"] == "encoded"


def test_unknown_route_is_json_404(chat_service: None) -> None:
    """DES-1: even a request for a route the function does not serve gets the one error shape."""
    # Given a request for another path
    event = events.http_event("GET", "/nowhere")
    # When it reaches a function
    answer = invoke("list_conversations", event)
    # Then it is a JSON 404
    assert answer.status == 404
    assert answer.error_code == "route_not_found"
