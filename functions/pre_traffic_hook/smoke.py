"""The smoke test a release passes before any user reaches it: create a conversation, post to it, read
it back, delete it. The same steps run over HTTP (a local server, a deployed API) or against new Lambda
versions invoked directly (the pre-traffic hook); the caller passes the transport in.

Standard library only: it ships in the hook function, which needs nothing else.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

CREATE = "POST /conversations"
POST = "POST /messages"
READ = "GET /conversations/{conversation_id}"
DELETE = "DELETE /conversations/{conversation_id}"
#: Every route the smoke test calls, in order; the hook invokes the new version of each one's function.
ROUTES = (CREATE, POST, READ, DELETE)
PROMPT = "Smoke test of a new release: answer with one word."


@dataclass(frozen=True)
class Answer:
    """A route's answer: the HTTP status and the parsed JSON body (None when empty)."""

    status: int
    body: Any


#: Sends one request: the route ("METHOD /path/{param}"), its path parameters and its JSON body.
Transport = Callable[[str, Mapping[str, str], Mapping[str, Any] | None], Answer]


class SmokeTestFailed(Exception):
    """A step answered what a working release does not."""


def _expect(answer: Answer, status: int, step: str) -> Any:
    if answer.status != status:
        raise SmokeTestFailed(f"{step}: expected {status}, got {answer.status}: {str(answer.body)[:500]}")
    return answer.body


def run_smoke_test(send: Transport, model: str | None = None) -> list[str]:
    """Create, post (to `model`, or the deployment's default), read, delete, read again; the steps passed,
    in order. Raises SmokeTestFailed at the first step that answers wrong; the conversation is deleted
    whatever happened once it exists."""
    passed: list[str] = []
    created = _expect(send(CREATE, {}, {"title": "smoke test"}), 201, "create")
    conversation = {"conversation_id": str(created["conversation_id"])}
    passed.append("create")
    try:
        body: dict[str, Any] = {**conversation, "content": PROMPT}
        if model:
            body["model"] = model
        posted = _expect(send(POST, {}, body), 201, "post")
        reply = posted["assistant_message"]
        if reply.get("status") == "error" or not reply.get("content"):
            raise SmokeTestFailed(f"post: the model gave no answer: {str(reply)[:500]}")
        passed.append("post")
        read = _expect(send(READ, conversation, None), 200, "read")
        contents = [message.get("content") for message in read.get("messages", [])]
        if PROMPT not in contents or reply["content"] not in contents:
            raise SmokeTestFailed(f"read: the turn just posted is not in the conversation: {contents!r}")
        passed.append("read")
    finally:
        _expect(send(DELETE, conversation, None), 204, "delete")
    passed.append("delete")
    _expect(send(READ, conversation, None), 404, "read after delete")
    passed.append("read after delete")
    return passed


def http_transport(base_url: str, headers: Mapping[str, str], timeout_s: float = 30.0) -> Transport:
    """Requests to a running API (`make run`'s server with X-User-Id, or a deployed one with a JWT)."""

    def send(route: str, path_parameters: Mapping[str, str], body: Mapping[str, Any] | None) -> Answer:
        method, path = route.split(" ", 1)
        url = base_url.rstrip("/") + path.format(**path_parameters)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers))  # noqa: S310
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        return Answer(status, json.loads(raw) if raw.strip() else None)

    return send


def lambda_transport(
    invoke: Callable[[str, bytes], tuple[bytes, bool]], functions: Mapping[str, str], user_id: str
) -> Transport:
    """Direct invocations (docs/long-conversations.md) of the function serving each route: `functions` maps
    a route to the function (a version ARN) to invoke, `invoke` sends a payload and returns the answer's
    bytes and whether the function raised."""

    def send(route: str, path_parameters: Mapping[str, str], body: Mapping[str, Any] | None) -> Answer:
        payload = {"user_id": user_id, "route": route, "path_parameters": dict(path_parameters)}
        if body is not None:
            payload["body"] = dict(body)
        raw, raised = invoke(functions[route], json.dumps(payload).encode())
        answer = json.loads(raw) if raw.strip() else None
        if raised or not isinstance(answer, dict) or "statusCode" not in answer:
            return Answer(500, answer)
        return Answer(int(answer["statusCode"]), answer.get("body"))

    return send
