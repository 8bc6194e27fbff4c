"""`make run`'s server over real HTTP, its model the stand-in OpenAI server (LOC-1, API-1, API-2, TOK-6)."""

from __future__ import annotations

import re

import httpx
import pytest

from functions.pre_traffic_hook import smoke
from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e


def test_post_message_with_provider_usage_answers_201_with_the_reported_usage(
    api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-1 / TOK-6: usage present is recorded as reported."""
    # Given the stand-in model reports usage
    model.set_mode("ok")
    # When a first message is posted without a conversation id
    response = api.post("/messages", json={"content": "hello from e2e"})
    # Then the conversation is created and the model's reply and usage come back
    assert response.status_code == 201, response.text
    body = response.json()
    reply = body["assistant_message"]
    assert reply["status"] == "ok"
    assert reply["content"].startswith('Stand-in reply: you said "hello from e2e"')
    assert reply["usage"]["total_tokens"] > 0
    assert (
        reply["usage"]["total_tokens"]
        == reply["usage"]["prompt_tokens"] + reply["usage"]["completion_tokens"]
    )
    assert body["user_message"]["content"] == "hello from e2e"
    sent = model.completion_requests[-1].json
    assert sent["messages"][-1] == {"role": "user", "content": "hello from e2e"}


def test_post_message_without_provider_usage_records_zero_usage_and_the_local_count(
    api: httpx.Client, model: OpenAIStandin
) -> None:
    """TOK-6: no usage from the provider -> usage 0, the local count kept beside it."""
    # Given the stand-in model sends no usage object
    model.set_mode("no_usage")
    # When a message is posted
    response = api.post("/messages", json={"content": "count me locally"})
    # Then usage is 0 and the conversation carries the local count
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["assistant_message"]["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
    }
    detail = api.get(f"/conversations/{body['conversation_id']}").json()
    assert detail["usage"]["total_tokens"] == 0
    assert detail["local_usage"]["prompt_tokens"] > 0
    assert detail["local_usage"]["completion_tokens"] > 0


@pytest.mark.parametrize("mode", ["error500", "malformed"])
def test_provider_failure_answers_502_and_stores_both_messages(
    api: httpx.Client, model: OpenAIStandin, mode: str
) -> None:
    """API-2: a provider 500 or a malformed body -> 502, user message and error reply both stored."""
    # Given a conversation and a failing model
    created = api.post("/conversations", json={"title": f"failing {mode}"}).json()
    model.set_mode(mode)
    # When a message is posted
    response = api.post(
        "/messages", json={"conversation_id": created["conversation_id"], "content": "are you there?"}
    )
    # Then the API answers 502 with the success shape, and both messages are in the history
    assert response.status_code == 502, response.text
    body = response.json()
    assert body["assistant_message"]["status"] == "error"
    assert body["assistant_message"]["error"]["message"]
    assert body["assistant_message"]["usage"]["total_tokens"] == 0
    detail = api.get(f"/conversations/{created['conversation_id']}").json()
    assert [(m["role"], m["status"]) for m in detail["messages"]] == [("user", "ok"), ("assistant", "error")]
    assert detail["messages"][0]["content"] == "are you there?"


def test_no_identity_header_is_401(server: ServerProcess) -> None:
    """API-8: the local server takes identity from X-User-Id only; without it the handler answers 401."""
    # Given a client that sends no X-User-Id
    with server.client(user=None) as anonymous:
        # When it lists conversations
        response = anonymous.get("/conversations")
    # Then it is refused with the JSON error shape
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_users_see_only_their_own_conversations(server: ServerProcess, api: httpx.Client) -> None:
    """API-8: another user's conversation is 404, and absent from their list."""
    # Given a conversation of alice
    mine = api.post("/conversations", json={"title": "alice only"}).json()["conversation_id"]
    # When bob reads it and lists his own
    with server.client(user="bob") as bob:
        read = bob.get(f"/conversations/{mine}")
        listed = bob.get("/conversations").json()["items"]
    # Then bob gets 404 and does not see it
    assert read.status_code == 404
    assert mine not in [c["conversation_id"] for c in listed]


def test_unknown_route_and_wrong_method_are_api_gateways_404(api: httpx.Client) -> None:
    """Routes come from template.yaml: anything else is what an HTTP API answers for a request no route
    takes, 404 {"message": "Not Found"}, a known path with another method included (never 405)."""
    # When an unknown path and a wrong method are requested
    unknown = api.get("/no/such/route")
    wrong = api.put("/messages", json={})
    # Then both answer API Gateway's 404
    for answer in (unknown, wrong):
        assert answer.status_code == 404
        assert answer.json() == {"message": "Not Found"}
        assert answer.headers["content-type"].startswith("application/json")
        assert "allow" not in answer.headers


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "PURGE"])
def test_a_method_no_route_has_is_answered_like_any_wrong_method(api: httpx.Client, method: str) -> None:
    """LOC-1: methods the HTTP server has no handler for (TRACE, QUERY, ...) meet the same router, and
    get API Gateway's 404 {"message": "Not Found"} on a known path and elsewhere (they were http.server's
    HTML 501)."""
    # When such a method is sent to a known path and to an unknown one
    known = api.request(method, "/conversations")
    unknown = api.request(method, "/no/such/route")
    # Then they answer as a wrong method and an unknown route do
    for answer in (known, unknown):
        assert (answer.status_code, answer.json()) == (404, {"message": "Not Found"})


def test_window_route_builds_the_window_without_calling_the_model(
    api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-8 build window: what a post would send, no model call."""
    # Given a conversation with one turn
    first = api.post("/messages", json={"content": "remember the number 7"}).json()
    calls = len(model.completion_requests)
    # When the window for a next message is built
    response = api.post(
        f"/conversations/{first['conversation_id']}/window", json={"content": "which number?"}
    )
    # Then it holds the history and the new message, and the model was not called
    assert response.status_code == 200, response.text
    contents = [m["content"] for m in response.json()["messages"]]
    assert contents[0] == "remember the number 7"
    assert contents[-1] == "which number?"
    assert len(model.completion_requests) == calls


def test_every_request_gets_one_log_line_with_method_path_status_and_ms(
    server: ServerProcess, api: httpx.Client
) -> None:
    """LOC-1: one log line per request (method, path, status, milliseconds)."""
    # When a request is made
    since = server.mark()
    api.get("/conversations?limit=3")
    # Then the server printed one line for it
    line = server.wait_for(r"GET\s+/conversations\?limit=3 200 \d+ ms", since=since)
    assert "ListConversationsFunction" in line.string


def test_openapi_document_lists_every_template_route(api: httpx.Client) -> None:
    """LOC-1: the OpenAPI document is served, merged from the handlers' resolvers."""
    # When the document is fetched
    document = api.get("/openapi.json").json()
    # Then every route of template.yaml is in it, with request schemas from the handlers
    paths = document["paths"]
    assert set(paths["/conversations"]) == {"get", "post"}
    assert set(paths["/conversations/{conversation_id}"]) == {"get", "delete", "patch"}
    assert "post" in paths["/messages"]
    assert "post" in paths["/conversations/{conversation_id}/window"]
    assert "requestBody" in paths["/messages"]["post"]
    assert "LocalUser" in document["components"]["securitySchemes"]


def test_swagger_ui_page_needs_no_internet(api: httpx.Client) -> None:
    """LOC-1: the Swagger UI page is served with its assets inlined (no CDN at run time)."""
    # When the docs page is fetched
    page = api.get("/docs")
    # Then it is HTML with Swagger UI inlined and no external script or stylesheet
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "SwaggerUIBundle" in page.text
    assert not re.search(r"<(script|link)[^>]+(src|href)=['\"]https?://", page.text)


@pytest.mark.parametrize(
    "content_type",
    ["multipart/form-data", "multipart/form-data; charset=utf-8", 'multipart/form-data; boundary=""'],
)
def test_every_route_refuses_a_body_it_cannot_split_with_a_4xx(
    server: ServerProcess, api: httpx.Client, content_type: str
) -> None:
    """API-5: a multipart body without its boundary is a 415 that says what to send on every route that
    takes a body (it was a 500 on some), and still a 401 first for an anonymous caller."""
    # Given every route the served document lists that takes a body
    document = api.get("/openapi.json").json()
    routes = [
        (method.upper(), re.sub(r"\{[^}]+\}", "01J0000000000000000000000Z", path))
        for path, item in document["paths"].items()
        for method in item
        if method in ("post", "put", "patch")
    ]
    assert len(routes) > 15
    # When each is sent a form without a boundary, by a known caller and by an anonymous one
    answers = {
        (method, path): api.request(method, path, content=b"a=1", headers={"Content-Type": content_type})
        for method, path in routes
    }
    with server.client(None) as anonymous:
        method, path = routes[0]
        unknown = anonymous.request(method, path, content=b"a=1", headers={"Content-Type": content_type})
    # Then every answer is a JSON 415 naming application/json, and the anonymous caller gets 401
    wrong = {route: r.status_code for route, r in answers.items() if r.status_code != 415}
    assert wrong == {}
    assert all("application/json" in str(r.json()["error"]["message"]) for r in answers.values())
    assert unknown.status_code == 401


def test_the_pre_traffic_smoke_test_passes_against_the_local_server(
    server: ServerProcess, model: OpenAIStandin
) -> None:
    """OPS-7: the deployment hook's smoke test (create, post, read, delete), run here over HTTP against
    `make run`'s server: every step passes and the conversation is gone afterwards."""
    # Given the local server and a working model, and a user of the smoke test's own
    send = smoke.http_transport(server.url, {"X-User-Id": "smoke-test-local"})
    # When the smoke test runs
    passed = smoke.run_smoke_test(send)
    # Then every step passed, the read after the delete included
    assert passed == ["create", "post", "read", "delete", "read after delete"]
    with server.client("smoke-test-local") as client:
        assert client.get("/conversations").json()["items"] == []


def test_the_pre_traffic_smoke_test_fails_a_release_whose_post_fails(
    server: ServerProcess, model: OpenAIStandin
) -> None:
    """OPS-7: a release whose post cannot answer fails the smoke test at the post, and the conversation
    it created is still deleted."""
    # Given a model that fails every call
    model.set_mode("error500")
    send = smoke.http_transport(server.url, {"X-User-Id": "smoke-test-failing"})
    # When the smoke test runs
    with pytest.raises(smoke.SmokeTestFailed, match=r"^post: expected 201, got 502"):
        smoke.run_smoke_test(send)
    # Then nothing it created is left
    with server.client("smoke-test-failing") as client:
        assert client.get("/conversations").json()["items"] == []
