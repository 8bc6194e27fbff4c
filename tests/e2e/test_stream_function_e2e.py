"""API-14, API-16: the deployed streaming function (functions/stream_chat, what the Lambda Web Adapter
runs behind a function URL) run as the real HTTP server it is, on loopback: it streams both routes, and
serves nothing without a valid JWT of the configured issuer. Its store is the local server's embedded
DynamoDB, its model the stand-in, its issuer a real JWKS endpoint on loopback."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.jwt_issuer import Issuer, jwt_issuer
from tests.support.local_server import ServerProcess, child_env
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e

APP = Path(__file__).resolve().parents[2] / "functions" / "stream_chat" / "app.py"


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with jwt_issuer() as running:
        yield running


@pytest.fixture(scope="module")
def stream_url(server: ServerProcess, standin: OpenAIStandin, issuer: Issuer) -> Iterator[str]:
    found = re.search(r"DynamoDB\s+embedded moto at (\S+), table (\S+)", server.output)
    assert found, server.output
    env = child_env(
        {
            "PORT": "0",  # the function binds a free port and says which: no other test can take it first
            "JWT_ISSUER": issuer.url,
            "JWT_AUDIENCE": "client-1",
            "DYNAMODB_ENDPOINT": found.group(1),
            "TABLE_NAME": found.group(2),
            "LLM_BASE_URL": standin.base_url,
            "LLM_MODEL": "standin-model",
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
        }
    )
    process = subprocess.Popen(
        [sys.executable, str(APP)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:  # read every line, so the function never blocks on a full pipe
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    deadline = time.monotonic() + 60
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        assert line is not None, f"the streaming function did not start:\n{''.join(seen)}"
        seen.append(line)
        listening = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        if listening:
            break
    url = f"http://{listening.group(1)}"
    yield url
    process.terminate()
    process.wait(timeout=30)


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]


def test_nothing_is_served_without_a_valid_token(
    stream_url: str, issuer: Issuer, model: OpenAIStandin
) -> None:
    """API-16: no token, an expired one, another audience, not a JWT: 401; the model is not asked."""
    body = {"model": "standin-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    bad = [None, issuer.token(exp=int(time.time()) - 3600), issuer.token(aud="someone-else"), "not-a-jwt"]
    for token in bad:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        answer = httpx.post(f"{stream_url}/v1/chat/completions", json=body, headers=headers, timeout=30)
        assert answer.status_code == 401, answer.text
        assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
    plain = httpx.post(f"{stream_url}/messages", json={"content": "hi"}, timeout=30)
    assert plain.status_code == 401
    assert plain.json()["error"]["code"] == "unauthorized"
    assert model.requests == []


def test_a_valid_token_streams_a_reply_that_the_api_then_shows(
    stream_url: str, issuer: Issuer, api: httpx.Client, model: OpenAIStandin
) -> None:
    """API-14 through the streaming function: chunks as the model produces them, the reply stored for the
    token's subject (the HTTP API shows it to the same user)."""
    model.configure(chunk_delay=0.05)
    headers = {"Authorization": f"Bearer {issuer.token(sub='alice')}"}
    body = {
        "model": "standin-model",
        "messages": [{"role": "user", "content": "stream it through the URL"}],
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{stream_url}/v1/chat/completions", json=body, headers=headers, timeout=30
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        conversation_id = response.headers["x-conversation-id"]
        chunks = _events(response)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert text.startswith("Stand-in reply")
    assert all(c["conversation"] == conversation_id for c in chunks)
    stored = api.get(f"/conversations/{conversation_id}").json()["messages"]
    assert stored[-1]["content"] == text
    # And POST /messages streams too, ending with the stored turn
    with httpx.stream(
        "POST",
        f"{stream_url}/messages",
        json={"conversation_id": conversation_id, "content": "and again"},
        headers={**headers, "Accept": "text/event-stream"},
        timeout=30,
    ) as response:
        events = _events(response)
    assert events[-1]["object"] == "chat.turn"
    assert events[-1]["assistant_message"]["content"] == "".join(
        c["choices"][0]["delta"].get("content") or "" for c in events[:-1] if c.get("choices")
    )


def test_another_subject_cannot_reach_the_conversation(
    stream_url: str, issuer: Issuer, model: OpenAIStandin
) -> None:
    """API-7 on the function URL: the token's subject is the caller; another user's conversation is 404."""
    alice = {"Authorization": f"Bearer {issuer.token(sub='alice')}"}
    mallory = {"Authorization": f"Bearer {issuer.token(sub='mallory')}"}
    body: dict[str, Any] = {"model": "standin-model", "messages": [{"role": "user", "content": "mine"}]}
    first = httpx.post(f"{stream_url}/v1/chat/completions", json=body, headers=alice, timeout=30)
    assert first.status_code == 200, first.text
    body["conversation"] = first.json()["conversation"]
    other = httpx.post(
        f"{stream_url}/v1/chat/completions", json={**body, "stream": True}, headers=mallory, timeout=30
    )
    assert other.status_code == 404
    assert other.json()["error"]["code"] == "conversation_not_found"


def test_one_base_url_serves_every_v1_route_for_the_sdk(
    stream_url: str, issuer: Issuer, api: httpx.Client, model: OpenAIStandin
) -> None:
    """RSP-5: the streaming function serves every /v1 route, so the `openai` SDK works with one base
    URL: models, a streamed and a whole response, retrieve, input items, conversations, chat completions."""
    client = openai.OpenAI(base_url=f"{stream_url}/v1", api_key=issuer.token(sub="alice"), max_retries=0)
    assert [m.id for m in client.models.list().data]
    with client.responses.stream(model="standin-model", input="streamed through the URL") as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response()
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    whole = client.responses.create(
        model="standin-model", input="and whole", previous_response_id=streamed.id
    )
    assert client.responses.retrieve(whole.id).output_text == whole.output_text
    assert client.responses.input_items.list(whole.id).data[0].type == "message"
    conversation = client.conversations.create(metadata={"via": "stream-url"})
    assert client.conversations.retrieve(conversation.id).metadata == {"via": "stream-url"}
    client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "hello"}])
    assert len(client.conversations.items.list(conversation.id).data) == 1
    assert (
        client.chat.completions.create(model="standin-model", messages=[{"role": "user", "content": "plain"}])
        .choices[0]
        .message.content
    )
    assert client.conversations.delete(conversation.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_nothing")
    assert whole.conversation is not None
    assert api.get(f"/conversations/{whole.conversation.id}").json()["message_count"] == 4
