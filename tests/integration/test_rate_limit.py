"""OPS-4: the per-user rate limit of the routes that call the model, through the handlers (moto, the
stand-in model on loopback), and through the streaming function's own server (OPS-5: its access line).

The limiter's clock is pinned to the middle of one minute, so no test depends on when it runs (REL-1):
every request of a test falls in the same window."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType, SimpleNamespace
from typing import Any

import boto3
import httpx
import pytest
from chat_core.chat import rate_limit
from chat_core.errors import RateLimited
from chat_core.http import stream_routes
from chat_core.store import rate_windows

from tests.integration.conftest import TABLE
from tests.support import events
from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

#: A moment 10 s into a minute: the window ends 50 s later.
NOW = 1_800_000_010.0
WINDOW_LEFT = 50


@pytest.fixture
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rate_limit, "time", SimpleNamespace(time=lambda: NOW))


def _limit(monkeypatch: pytest.MonkeyPatch, per_minute: int) -> None:
    monkeypatch.setenv("RATE_LIMIT_PER_MINUTE", str(per_minute))
    renew()


@pytest.fixture
def limited(standin_llm: OpenAIStandin, pinned_clock: None, monkeypatch: pytest.MonkeyPatch) -> OpenAIStandin:
    """The stand-in model, and a limit of 3 model-calling requests a minute."""
    _limit(monkeypatch, 3)
    return standin_llm


def _items() -> list[dict[str, Any]]:
    """Every item of the table, in a stable order (what "nothing stored" compares)."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    items = client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def _completion(body: dict[str, Any], user: str = "alice") -> api.Answer:
    event = events.http_event(
        "POST", "/v1/chat/completions", route="/v1/chat/completions", body=body, user=user
    )
    return api.invoke("chat_completions", event)


def _assert_refused(answer: api.Answer, *, openai_shape: bool = False) -> None:
    assert answer.status == 429, answer.body
    assert answer.error_code == "rate_limited", answer.body
    assert int(answer.headers["Retry-After"]) == WINDOW_LEFT
    error = answer.body["error"]
    if openai_shape:
        assert set(error) == {"message", "type", "param", "code"}
    else:
        assert set(error) >= {"code", "message"}
    assert "rate limit reached: 3 model-calling requests a minute" in error["message"]


def test_the_request_over_the_limit_is_429_stores_nothing_and_asks_no_model(limited: OpenAIStandin) -> None:
    """OPS-4: the 4th model-calling request of a minute (limit 3) answers 429 rate_limited in the error
    envelope with Retry-After until the minute ends; nothing is stored and the model is not asked."""
    # Given three posts of alice this minute
    first = api.post("one")
    conversation_id = first.body["conversation_id"]
    assert api.post("two", conversation_id).status == 201
    assert api.post("three", conversation_id).status == 201
    asked = len(limited.completion_requests)
    before = _items()
    # When she posts again, to the conversation or to a new one
    for refused in (api.post("four", conversation_id), api.post("a new conversation")):
        # Then each is refused, before anything is written or the model is asked
        _assert_refused(refused)
    assert _items() == before
    assert len(limited.completion_requests) == asked


def test_every_model_calling_route_counts_and_is_refused(limited: OpenAIStandin) -> None:
    """OPS-4: posts, edits, regenerations and Chat Completions share one count; each is refused over it
    (the /v1 route in OpenAI's error shape)."""
    posted = api.post("hello")
    conversation_id = posted.body["conversation_id"]
    user_id = posted.body["user_message"]["message_id"]
    reply_id = posted.body["assistant_message"]["message_id"]
    assert api.regenerate(conversation_id, reply_id).status == 201
    assert _completion({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).status == 200
    asked = len(limited.completion_requests)
    before = _items()
    _assert_refused(api.edit(conversation_id, user_id, "edited"))
    _assert_refused(api.regenerate(conversation_id, reply_id))
    _assert_refused(
        _completion({"model": "m", "messages": [{"role": "user", "content": "again"}]}), openai_shape=True
    )
    assert _items() == before
    assert len(limited.completion_requests) == asked


def test_a_retry_answered_from_its_idempotency_key_is_not_counted(limited: OpenAIStandin) -> None:
    """OPS-4: a client retrying with the same Idempotency-Key gets the first answer, and the retry does not
    use up the limit (only the post that ran counts); a new request after the limit is still refused."""
    first = api.post("one", idempotency_key="k-1")
    conversation_id = first.body["conversation_id"]
    # When the same request is retried five times (a client whose connection kept dropping)
    for _ in range(5):
        again = api.post("one", idempotency_key="k-1")
        # Then each retry answers the first turn, not 429
        assert again.status == 201, again.body
        assert again.body["assistant_message"]["message_id"] == first.body["assistant_message"]["message_id"]
    counted = [i for i in _items() if i["pk"]["S"].endswith("#RATE")]
    assert [int(i["n"]["N"]) for i in counted] == [1]
    # And two more posts fill the limit; the next is refused
    assert api.post("two", conversation_id).status == 201
    assert api.post("three", conversation_id).status == 201
    _assert_refused(api.post("four", conversation_id))


def test_another_user_and_other_routes_are_not_limited(limited: OpenAIStandin) -> None:
    """OPS-4: one user's count limits no one else, and routes that do not call the model are not counted."""
    conversation_id = api.post("one").body["conversation_id"]
    api.post("two", conversation_id)
    api.post("three", conversation_id)
    _assert_refused(api.post("four", conversation_id))
    # Another user posts as usual
    assert api.post("hello", user="bob").status == 201
    # And alice's routes that do not call the model answer as usual, any number of times
    for _ in range(5):
        assert api.detail(conversation_id).status == 200
        assert api.window(conversation_id, "what would be sent").status == 200
        assert api.create(title="no model").status == 201
    assert api.listing().status == 200


def test_concurrent_posts_of_one_user_in_two_conversations_both_succeed(
    standin_llm: OpenAIStandin, pinned_clock: None, serialized_moto: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPS-4: the count is its own item, outside the conversations' transactions: one user's posts to two
    conversations at once, under the limit, both succeed (no conflict between them)."""
    _limit(monkeypatch, 10)
    first = api.post("first").body["conversation_id"]
    second = api.post("second").body["conversation_id"]
    start = threading.Barrier(2)

    def post(conversation_id: str) -> api.Answer:
        start.wait(timeout=30)
        return api.post("at the same time", conversation_id)

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(post, [first, second]))
    assert [a.status for a in answers] == [201, 201], [a.body for a in answers]
    # And the count holds all four posts
    counted = [i for i in _items() if i["pk"]["S"].endswith("#RATE")]
    assert [int(i["n"]["N"]) for i in counted] == [4]


def test_the_limit_is_off_by_default(standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPS-4: without RATE_LIMIT_PER_MINUTE nothing is limited and the limiter makes no DynamoDB call."""
    counted: list[str] = []
    original = rate_windows.count_request

    def count_request(owner: str, *args: Any, **kwargs: Any) -> bool:
        counted.append(owner)
        return original(owner, *args, **kwargs)

    monkeypatch.setattr(rate_windows, "count_request", count_request)
    conversation_id = api.post("one").body["conversation_id"]
    for n in range(5):
        assert api.post(f"post {n}", conversation_id).status == 201
    assert _completion({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).status == 200
    assert counted == []
    assert not [i for i in _items() if i["pk"]["S"].endswith("#RATE")]


def test_the_window_ends_at_the_minute(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPS-4: Retry-After is the seconds left in the minute (at least 1); the next minute counts afresh."""
    _limit(monkeypatch, 1)
    rate_limit.check("alice", now=1_800_000_059.5)
    with pytest.raises(RateLimited) as refused:
        rate_limit.check("alice", now=1_800_000_059.9)
    assert refused.value.details["retry_after"] == 1
    rate_limit.check("alice", now=1_800_000_060.0)
    window = [i for i in _items() if i["pk"]["S"].endswith("#RATE")]
    # One item per minute, each expiring (TTL) a minute after its window
    assert [(i["sk"]["S"], int(i["expires_at"]["N"])) for i in window] == [
        ("W#1800000000", 1_800_000_120),
        ("W#1800000060", 1_800_000_180),
    ]


# -- the streaming function (function URL): the same limit, and one access line per request ---------------


class _Verifier:
    """Stands in for the JWT verifier: the token is the subject."""

    def verify(self, token: str) -> dict[str, Any]:
        return {"sub": token}


class _Recorder:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def info(self, message: str, **fields: Any) -> None:
        if message == "access":
            self.lines.append(fields)

    def warning(self, message: str, **fields: Any) -> None:
        pass


@pytest.fixture
def stream_app() -> ModuleType:
    return api.load("stream_chat")


@pytest.fixture
def stream_url(limited: OpenAIStandin, stream_app: ModuleType) -> Iterator[str]:
    server = stream_app.StreamServer(0, _Verifier())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_streaming_function_applies_the_limit_and_logs_each_request(
    limited: OpenAIStandin, stream_url: str, stream_app: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPS-4, OPS-5: the function URL's two routes count with the API's and are refused over the limit
    (429, Retry-After, nothing stored, no model call); each request writes one access line."""
    recorder = _Recorder()
    monkeypatch.setattr(stream_app, "logger", recorder)
    context = {"requestId": "req-1", "http": {"sourceIp": "203.0.113.9", "userAgent": "agent/1"}}
    headers = {"Authorization": "Bearer alice", "x-amzn-request-context": json.dumps(context)}
    completion = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    # Given two requests through the API and one streamed through the function URL
    conversation_id = api.post("one").body["conversation_id"]
    api.post("two", conversation_id)
    with httpx.Client(timeout=60) as client:
        streamed = client.post(f"{stream_url}/v1/chat/completions", json=completion, headers=headers)
        assert streamed.status_code == 200, streamed.text
        asked = len(limited.completion_requests)
        before = _items()
        # When alice goes on, on either route of the function URL
        url = f"{stream_url}/v1/chat/completions"
        refused_completion = client.post(url, json=completion, headers=headers)
        refused_post = client.post(
            f"{stream_url}/messages",
            json={"content": "more", "conversation_id": conversation_id},
            headers={**headers, "Accept": "text/event-stream"},
        )
        # Then both are refused in their route's error shape, before anything is written or asked
        for refused in (refused_completion, refused_post):
            assert refused.status_code == 429, refused.text
            assert refused.headers["Retry-After"] == str(WINDOW_LEFT)
            assert refused.json()["error"]["code"] == "rate_limited"
        assert set(refused_completion.json()["error"]) == {"message", "type", "param", "code"}
        assert _items() == before
        assert len(limited.completion_requests) == asked
        # And another user is served
        bob = client.post(
            f"{stream_url}/messages", json={"content": "hi"}, headers={"Authorization": "Bearer bob"}
        )
        assert bob.status_code == 201, bob.text
        unauthenticated = client.post(f"{stream_url}/messages", json={"content": "hi"})
        assert unauthenticated.status_code == 401
    # One access line per request, with the access log's fields
    assert [(line["caller"], line["status"]) for line in recorder.lines] == [
        ("alice", 200),
        ("alice", 429),
        ("alice", 429),
        ("bob", 201),
        ("", 401),
    ]
    assert all(set(line) == set(stream_app.ACCESS_FIELDS) for line in recorder.lines)
    first = recorder.lines[0]
    assert first["requestId"] == "req-1"
    assert (first["routeKey"], first["method"], first["path"]) == (
        "POST /v1/chat/completions",
        "POST",
        "/v1/chat/completions",
    )
    assert (first["ip"], first["userAgent"]) == ("203.0.113.9", "agent/1")
    assert first["integrationError"] == ""
    assert first["responseLatency"] >= first["integrationLatency"] >= 0
    # Without the adapter's request context (a local run): the socket's address and the request's agent
    last = recorder.lines[-1]
    assert last["ip"] == "127.0.0.1"
    assert last["userAgent"].startswith("python-httpx")
    assert last["integrationLatency"] is None


def test_stream_routes_refuse_with_retry_after(limited: OpenAIStandin) -> None:
    """OPS-4: `stream_routes.serve` (what the function URL runs) refuses over the limit with Retry-After."""
    body = json.dumps({"content": "hi"}).encode()
    for _ in range(3):
        assert stream_routes.serve("/messages", "carol", {}, body, lambda chunk: None).status == 201
    refused = stream_routes.serve("/messages", "carol", {}, body, lambda chunk: None)
    assert (refused.status, refused.body["error"]["code"]) == (429, "rate_limited")
    assert refused.headers["Retry-After"] == str(WINDOW_LEFT)
