"""Calls of the turn-log and pin routes through their handlers, and direct (non-API Gateway) invocation."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.support import events
from tests.support.functions import Answer, invoke, load
from tests.support.lambda_context import LambdaContext


@dataclass
class EventsAnswer:
    """GET /events as the client sees it: status, headers, and the JSONL body as lines (or an error)."""

    status: int
    headers: dict[str, str]
    text: str
    lines: list[dict[str, Any]]
    error: dict[str, Any] | None

    @property
    def content_type(self) -> str:
        return next((v for k, v in self.headers.items() if k.lower() == "content-type"), "")

    @property
    def next_cursor(self) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == "x-next-cursor"), None)

    @property
    def types(self) -> list[str]:
        return [line["type"] for line in self.lines]


def events_event(conversation_id: str, *, user: str | None = "alice", **query: str) -> dict[str, Any]:
    return events.http_event(
        "GET",
        f"/conversations/{conversation_id}/events",
        route="/conversations/{conversation_id}/events",
        path_parameters={"conversation_id": conversation_id},
        query=query or None,
        user=user,
    )


def turn_log(conversation_id: str, *, user: str | None = "alice", **query: str) -> EventsAnswer:
    """GET /conversations/{id}/events; the body is split into JSON lines when it is JSONL."""
    raw = load("get_events").lambda_handler(
        events_event(conversation_id, user=user, **query), LambdaContext(function_name="get_events")
    )
    headers = dict(raw.get("headers") or {})
    text = raw.get("body") or ""
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    if "ndjson" in content_type:
        return EventsAnswer(
            raw["statusCode"], headers, text, [json.loads(x) for x in text.splitlines()], None
        )
    body = json.loads(text) if text else {}
    return EventsAnswer(raw["statusCode"], headers, text, [], body.get("error"))


def full_log(conversation_id: str, *, user: str = "alice") -> list[dict[str, Any]]:
    answer = turn_log(conversation_id, user=user, limit="1000")
    assert answer.status == 200, answer.error
    return answer.lines


def pin_event(
    conversation_id: str, message_id: str, body: Any, *, user: str | None = "alice"
) -> dict[str, Any]:
    return events.http_event(
        "PATCH",
        f"/conversations/{conversation_id}/messages/{message_id}",
        route="/conversations/{conversation_id}/messages/{message_id}",
        path_parameters={"conversation_id": conversation_id, "message_id": message_id},
        body=body,
        user=user,
    )


def pin(conversation_id: str, message_id: str, pinned: bool = True, *, user: str | None = "alice") -> Answer:
    """PATCH /conversations/{id}/messages/{message_id} with {"pinned": pinned}."""
    return invoke("update_message", pin_event(conversation_id, message_id, {"pinned": pinned}, user=user))


def direct(name: str, payload: Any) -> dict[str, Any]:
    """Invoke function `name` with a plain JSON payload, as Step Functions or another Lambda would."""
    result: dict[str, Any] = load(name).lambda_handler(payload, LambdaContext(function_name=name))
    return result
