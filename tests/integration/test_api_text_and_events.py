"""API-5 at the edges: text that is not valid Unicode and events from integrations the API does not serve
get a clear 4xx, before any I/O, never a 500 or a crash."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import events
from tests.support import functions as api
from tests.support.functions import invoke
from tests.support.lambda_context import LambdaContext
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

CID = "01J0000000000000000000000Z"
LONE = '"\\ud800 x"'  # a lone surrogate, escaped: valid JSON, not storable text

# (function, event builder args, the field the answer names)
CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "post content": ("post_message", {"raw_body": f'{{"content": {LONE}}}'}, "content"),
    "post tool message": (
        "post_message",
        {
            "raw_body": '{"content": "hi", "messages": [{"role": "tool", "tool_call_id": "c1", "content": '
            + LONE
            + "}]}"
        },
        "messages[0].content",
    ),
    "post model": ("post_message", {"raw_body": f'{{"content": "hi", "model": {LONE}}}'}, "model"),
    "create title": ("create_conversation", {"raw_body": f'{{"title": {LONE}}}'}, "title"),
    "create system prompt": (
        "create_conversation",
        {"raw_body": f'{{"system_prompt": {LONE}}}'},
        "system_prompt",
    ),
    "window content": ("build_window", {"raw_body": f'{{"content": {LONE}}}'}, "content"),
    "a key": ("post_message", {"raw_body": f'{{{LONE}: "x", "content": "hi"}}'}, "body"),
}


def _event(function: str, **kwargs: Any) -> dict[str, Any]:
    if function == "post_message":
        return events.http_event("POST", "/messages", **kwargs)
    if function == "create_conversation":
        return events.http_event("POST", "/conversations", **kwargs)
    return events.http_event(
        "POST",
        f"/conversations/{CID}/window",
        route="/conversations/{conversation_id}/window",
        path_parameters={"conversation_id": CID},
        **kwargs,
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_text_with_an_unpaired_surrogate_is_refused_naming_the_field(chat_service: None, case: str) -> None:
    """API-5: `{"content": "\\ud800 x"}` is valid JSON but no store takes it: 400 invalid_text naming the
    field, nothing written."""
    function, kwargs, field = CASES[case]
    answer = invoke(function, _event(function, **kwargs))
    assert answer.status == 400, answer.body
    assert answer.error_code == "invalid_text"
    assert answer.body["error"]["message"].startswith(field)
    assert api.listing().body["items"] == []


def test_anonymous_bad_text_is_still_401(chat_service: None) -> None:
    """API-5: identity is checked first, as for every bad request."""
    answer = invoke("post_message", _event("post_message", raw_body=f'{{"content": {LONE}}}', user=None))
    assert answer.status == 401


def test_a_surrogate_pair_is_valid_text(chat_service: None) -> None:
    """An emoji escaped as a surrogate pair is ordinary text and is stored as sent."""
    answer = invoke("post_message", _event("post_message", raw_body='{"content": "smile \\ud83d\\ude00"}'))
    assert answer.status == 201, answer.body
    assert answer.body["user_message"]["content"] == "smile \U0001f600"


def test_bad_text_in_a_query_or_header_is_refused(chat_service: None) -> None:
    """API-5: query parameters and headers are text too (an Idempotency-Key, a cursor)."""
    listing = events.list_conversations()
    listing["queryStringParameters"] = {"cursor": "\ud800"}
    assert invoke("list_conversations", listing).error_code == "invalid_text"
    post = _event("post_message", body={"content": "hi"}, headers={"Idempotency-Key": "k\udfff"})
    answer = invoke("post_message", post)
    assert (answer.status, answer.error_code) == (400, "invalid_text")
    assert api.listing().body["items"] == []


def test_bad_text_in_a_direct_invocation_is_refused(chat_service: None) -> None:
    """API-5: a plain JSON payload (another Lambda, Step Functions) gets the same answer."""
    raw = api.load("post_message").lambda_handler(
        {"user_id": "alice", "body": {"content": "\ud800 x"}}, LambdaContext(function_name="post_message")
    )
    assert raw["statusCode"] == 400
    assert raw["body"]["error"]["code"] == "invalid_text"


def test_a_model_reply_with_an_unpaired_surrogate_is_stored_repaired(
    standin_llm: OpenAIStandin,
) -> None:
    """REL-4: the reply the model gave is stored even when its text holds an unpaired surrogate (replaced
    by U+FFFD), instead of failing at write time."""
    standin_llm.configure(mode="ok", reply="half \ud83d of a pair")
    answer = api.post("say something odd")
    assert answer.status == 201, answer.body
    assert answer.body["assistant_message"]["content"] == "half \ufffd of a pair"
    stored = api.detail(answer.body["conversation_id"]).body["messages"]
    assert stored[-1]["content"] == "half \ufffd of a pair"


def _rest_event() -> dict[str, Any]:
    return {
        "resource": "/messages",
        "path": "/messages",
        "httpMethod": "POST",
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "requestId": "r-1",
            "stage": "prod",
            "httpMethod": "POST",
            "path": "/prod/messages",
        },
        "body": '{"content": "hi"}',
        "isBase64Encoded": False,
    }


def _alb_event() -> dict[str, Any]:
    return {
        "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:1:tg/x/y"}},
        "httpMethod": "POST",
        "path": "/messages",
        "headers": {"content-type": "application/json"},
        "body": '{"content": "hi"}',
        "isBase64Encoded": False,
    }


@pytest.mark.parametrize(
    ("name", "event", "named"),
    [
        ("rest", _rest_event(), "REST API"),
        ("rest v1 marked", {**_rest_event(), "version": "1.0"}, "REST API"),
        ("alb", _alb_event(), "Application Load Balancer"),
    ],
)
def test_an_event_from_another_integration_gets_a_clear_answer(
    chat_service: None, name: str, event: dict[str, Any], named: str
) -> None:
    """API-5: a REST API (payload 1.0) or ALB event reaching an HTTP API function is answered 400
    unsupported_integration naming what is supported, in a shape those integrations accept."""
    for function in ("post_message", "list_conversations", "get_conversation"):
        answer = invoke(function, dict(event))
        assert answer.status == 400, (function, answer.body)
        assert answer.error_code == "unsupported_integration"
        assert named in answer.body["error"]["message"]
        assert "HTTP API" in answer.body["error"]["message"]
    assert api.listing().body["items"] == []
