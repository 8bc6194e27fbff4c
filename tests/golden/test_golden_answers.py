"""API-8, API-9: recorded answers of every HTTP route of template.yaml, replayed and compared.

A scripted scenario calls every route of the local server (the real handlers, the stand-in model) over
real HTTP, with a success and the typical errors (400 bad body, 404 another user's resource, 409, 422,
401, 403, 429, 502), and records each answer: method and path template, status, the headers a client
reads, and the body (JSON; the event sequence of a stream; the lines of a JSON Lines file; length and
SHA-256 of a static file). One server serves the whole scenario; one file per resource family.

Values that change from run to run become placeholders that keep the shape: key names, nesting and
JSON types stay, and one value keeps one placeholder throughout a family's file (`<id:3>` is the same
conversation wherever it appears). Ids (ULID, UUID, 32-hex, `chatcmpl-`) become `<id:N>`, cursors
`<cursor:N>`; timestamps, dates and HTTP dates `<timestamp>`, `<date>`, `<http-date>`; the server's
and the model's URLs `<server>` and `<model>`; presigned URLs `<presigned-url>`; latencies, retry
delays, request ids and Unix times `<ms>:float`, `<seconds>:int`, `<request-id>:str`, `<unix-time>:int`
(the placeholder names the type); the few values that race with a background worker `<racy>:int`.

This guards the rule of the coming reorganisation of the code (request models as commands, response
models in the layer, store records, routes from one table): the wire is unchanged. The files under
tests/golden/answers/ were recorded from the code before that change; a moved field, a renamed key, a
new header or another status is a difference, shown as a diff of the family's file. When a change of
the wire is intended, rewrite the files and review their diff:

    GOLDEN_UPDATE=1 pytest tests/golden/test_golden_answers.py
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

ANSWERS = Path(__file__).with_name("answers")
ADMIN_GROUP = "admins"
ALICE = "alice"
BOB = "bob"
CAROL = "carol"

#: Response headers a client reads; the others (date, server, length) carry nothing of the contract.
HEADERS = (
    "access-control-allow-origin",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-security-policy",
    "content-type",
    "location",
    "referrer-policy",
    "retry-after",
    "transfer-encoding",
    "x-content-type-options",
    "x-conversation-id",
    "x-next-cursor",
)


@dataclass
class Call:
    """One recorded request and its raw answer (normalised when the family is written)."""

    method: str
    route: str
    note: str
    status: int
    headers: dict[str, str]
    body: Any
    racy: frozenset[str] = frozenset()


@dataclass
class Recorder:
    """Sends the scenario's requests and keeps their answers, by resource family."""

    url: str
    families: dict[str, list[Call]] = field(default_factory=dict)
    family: str = ""

    def call(
        self,
        method: str,
        route: str,
        note: str,
        *,
        user: str | None = ALICE,
        groups: str | None = None,
        path: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        content: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        stream: bool = False,
        racy: tuple[str, ...] = (),
    ) -> httpx.Response:
        """Send one request and record its answer; `racy` names body keys whose value races with a
        background worker (recorded as `<racy>:<type>`)."""
        url = route
        for name, value in (path or {}).items():
            url = url.replace("{" + name + "}", value).replace("{" + name + "+}", value)
        sent = dict(headers or {})
        if user is not None:
            sent["X-User-Id"] = user
        if groups is not None:
            sent["X-User-Groups"] = groups
        if content is not None and "Content-Type" not in sent:
            sent["Content-Type"] = "application/json"
        with httpx.Client(base_url=self.url, timeout=60.0) as client:
            request = client.build_request(
                method, url, params=params, json=json_body, content=content, headers=sent
            )
            answer = client.send(request, stream=stream)
            if stream:
                answer.read()
        self.families.setdefault(self.family, []).append(
            Call(
                method,
                route,
                note,
                answer.status_code,
                dict(answer.headers),
                body_of(answer),
                frozenset(racy),
            )
        )
        return answer


def body_of(answer: httpx.Response) -> Any:
    """The answer's body in a form that diffs well: JSON, SSE events, JSON Lines, or a digest."""
    kind = answer.headers.get("content-type", "").split(";")[0].strip()
    data = answer.content
    if not data:
        return None
    if kind == "text/event-stream":
        events: list[Any] = []
        for block in data.decode().split("\n\n"):
            fields: dict[str, Any] = {}
            for line in block.splitlines():
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    try:
                        fields["data"] = json.loads(value)
                    except ValueError:
                        fields["data"] = value
                elif name:
                    fields[name] = value
            if fields:
                events.append(fields)
        return {"sse": events}
    if kind in ("application/json", "application/problem+json"):
        return answer.json()
    if kind == "application/x-ndjson":
        return {"jsonl": [json.loads(line) for line in data.decode().splitlines() if line]}
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


# --- normalisation -----------------------------------------------------------------------------

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ULID = r"[0-9A-HJKMNP-TV-Z]{26}"
_HEX = r"[0-9a-f]{32}"
_TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_DATE = r"\d{4}-\d{2}-\d{2}"
_MONTH = r"\d{4}-\d{2}"
_HTTP_DATE = r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT"
#: Keys whose value is volatile whatever it looks like (times taken, retry delays, request ids): the
#: value becomes a placeholder naming what it is and its JSON type, so the shape still shows.
_VOLATILE_KEYS = (
    (re.compile(r"(?i)latency|duration|elapsed"), "<ms>"),
    (re.compile(r"(?i)^retry_in|^retry_after$|^retry-after$|^expires_in$"), "<seconds>"),
    (re.compile(r"(?i)request_?id$|^x-request-id$|^x-amzn-requestid$"), "<request-id>"),
    (re.compile(r"(?i)^etag$"), "<etag>"),
)
_CURSOR_KEY = re.compile(r"(?i)cursor$")


def _type_name(value: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(value), type(value).__name__)


class Normaliser:
    """Replaces volatile values by placeholders; one raw value gets one placeholder in a family."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self.ids: dict[str, str] = {}
        self.cursors: dict[str, str] = {}

    def _id(self, raw: str) -> str:
        return self.ids.setdefault(raw, f"<id:{len(self.ids) + 1}>")

    def text(self, value: str, key: str = "") -> str:
        if re.fullmatch(r"https?://\S+", value) and ("X-Amz-" in value or "Signature" in value):
            return "<presigned-url>"
        if _CURSOR_KEY.search(key):
            return self.cursors.setdefault(value, f"<cursor:{len(self.cursors) + 1}>")
        for url, placeholder in self.urls.items():
            value = value.replace(url, placeholder)
        value = re.sub(r"chatcmpl-[A-Za-z0-9_-]+", lambda m: "chatcmpl-" + self._id(m.group(0)), value)
        value = re.sub(rf"\b(?:{_UUID}|{_ULID}|{_HEX})\b", lambda m: self._id(m.group(0)), value)
        value = re.sub(_TIMESTAMP, "<timestamp>", value)
        value = re.sub(_HTTP_DATE, "<http-date>", value)
        value = re.sub(rf"\b{_DATE}\b", "<date>", value)
        return re.sub(rf"\b{_MONTH}\b", "<month>", value)

    def value(self, value: Any, key: str = "", racy: frozenset[str] = frozenset()) -> Any:
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            if key in racy:
                return f"<racy>:{_type_name(value)}"
            if key == "created" and isinstance(value, int) and value > 1_000_000_000:
                return "<unix-time>:int"  # a chat.completion's; elsewhere `created` is a count
            for pattern, placeholder in _VOLATILE_KEYS:
                if pattern.search(key):
                    return f"{placeholder}:{_type_name(value)}"
        if isinstance(value, dict):
            return {k: self.value(value[k], k, racy) for k in sorted(value)}
        if isinstance(value, list):
            return [self.value(item, key, racy) for item in value]
        if isinstance(value, str):
            return self.text(value, key)
        return value


def normalise(calls: list[Call], urls: dict[str, str]) -> list[dict[str, Any]]:
    """The calls of one family with their volatile values replaced (ids numbered in order of appearance)."""
    normaliser = Normaliser(urls)
    recorded = []
    for call in calls:
        headers = {name: call.headers[name] for name in HEADERS if name in call.headers}
        recorded.append(
            {
                "request": f"{call.method} {call.route}",
                "note": call.note,
                "status": call.status,
                "headers": normaliser.value(headers),
                "body": normaliser.value(call.body, racy=call.racy),
            }
        )
    return recorded


def dump(recorded: list[dict[str, Any]]) -> str:
    return json.dumps(recorded, indent=2, ensure_ascii=False) + "\n"


def differences(family: str, golden: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> str:
    """A readable account of how a family's answers differ: each call that changed, named by its
    request and note, with a unified diff of its record; calls added or missing at the end."""
    out = []
    for index in range(max(len(golden), len(recorded))):
        before = golden[index] if index < len(golden) else None
        after = recorded[index] if index < len(recorded) else None
        if before == after:
            continue
        named = after or before
        assert named is not None
        out.append(f"{family} #{index + 1}: {named['request']} ({named['note']})\n")
        out.extend(
            difflib.unified_diff(
                dump([before] if before else []).splitlines(keepends=True),
                dump([after] if after else []).splitlines(keepends=True),
                fromfile=f"tests/golden/answers/{family}.json",
                tofile="this run",
                n=4,
            )
        )
    return "".join(out)


# --- the scenario ------------------------------------------------------------------------------


def conversations(rec: Recorder) -> dict[str, str]:
    rec.family = "conversations"
    created = rec.call(
        "POST",
        "/conversations",
        "create with a title, a system prompt and defaults",
        json_body={"title": "Golden", "system_prompt": "Be brief.", "defaults": {"temperature": 0.5}},
    ).json()
    conversation_id = created["conversation_id"]
    rec.call("POST", "/conversations", "create with an empty body", json_body={})
    rec.call("POST", "/conversations", "400: a body that is not JSON", content=b"{not json")
    rec.call("POST", "/conversations", "422: an unknown field", json_body={"colour": "red"})
    rec.call("POST", "/conversations", "401: no identity", user=None, json_body={})
    rec.call("POST", "/conversations", "create with a key", json_body={"key": "golden-key", "title": "Keyed"})
    rec.call("POST", "/conversations", "409: the key is taken", json_body={"key": "golden-key"})
    rec.call("GET", "/conversations", "list (limit 2: a page and a cursor)", params={"limit": 2})
    rec.call("GET", "/conversations", "search by title", params={"q": "Gold"})
    rec.call("GET", "/conversations", "422: limit out of range", params={"limit": 0})
    rec.call("GET", "/conversations", "400: a cursor that is not one", params={"cursor": "nonsense"})
    rec.call("GET", "/conversations", "another user sees none", user=BOB)
    path = {"conversation_id": conversation_id}
    rec.call("GET", "/conversations/{conversation_id}", "detail", path=path)
    rec.call("GET", "/conversations/{conversation_id}", "404: another user's", path=path, user=BOB)
    rec.call(
        "GET",
        "/conversations/{conversation_id}",
        "404: no such conversation",
        path={"conversation_id": "nope"},
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}",
        "rename, change the defaults and the window policy",
        path=path,
        json_body={
            "title": "Golden 2",
            "defaults": {"temperature": 0.2},
            "window_policy": {"max_messages": 20},
        },
    )
    rec.call("PATCH", "/conversations/{conversation_id}", "400: not JSON", path=path, content=b"[")
    rec.call(
        "PATCH", "/conversations/{conversation_id}", "422: a bad field", path=path, json_body={"title": 3}
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"title": "Mine"},
    )
    key = {"key": "golden-by-key"}
    rec.call("GET", "/conversation-keys/{key}", "404: no conversation has the key yet", path=key)
    rec.call("PUT", "/conversation-keys/{key}", "create by key", path=key, json_body={"title": "By key"})
    rec.call(
        "PUT", "/conversation-keys/{key}", "the same key again: the same conversation", path=key, json_body={}
    )
    rec.call("PUT", "/conversation-keys/{key}", "400: not JSON", path=key, content=b"{")
    rec.call("GET", "/conversation-keys/{key}", "read by key", path=key)
    rec.call("GET", "/conversation-keys/{key}", "404: another user's key", path=key, user=BOB)
    doomed = rec.call("POST", "/conversations", "create one to delete", json_body={"title": "Doomed"}).json()
    gone = {"conversation_id": doomed["conversation_id"]}
    rec.call("DELETE", "/conversations/{conversation_id}", "404: another user's", path=gone, user=BOB)
    rec.call("DELETE", "/conversations/{conversation_id}", "delete", path=gone)
    rec.call("DELETE", "/conversations/{conversation_id}", "404: already deleted", path=gone)
    rec.call("GET", "/conversations/{conversation_id}", "404: deleted", path=gone)
    return {"conversation_id": conversation_id}


def messages(rec: Recorder, standin: OpenAIStandin) -> None:
    rec.family = "messages"
    first = rec.call(
        "POST", "/messages", "a post that starts a conversation", json_body={"content": "Hello there"}
    ).json()
    conversation_id = first["conversation_id"]
    path = {"conversation_id": conversation_id}
    second = rec.call(
        "POST",
        "/messages",
        "a post to it with an Idempotency-Key",
        json_body={"conversation_id": conversation_id, "content": "Second line", "temperature": 0.1},
        headers={"Idempotency-Key": "golden-post-1"},
    ).json()
    rec.call(
        "POST",
        "/messages",
        "the same key again: the first answer replayed",
        json_body={"conversation_id": conversation_id, "content": "Second line", "temperature": 0.1},
        headers={"Idempotency-Key": "golden-post-1"},
    )
    rec.call("POST", "/messages", "400: not JSON", content=b"{")
    rec.call("POST", "/messages", "422: content too long", json_body={"content": "x" * 5001})
    rec.call("POST", "/messages", "422: an unknown field", json_body={"content": "hi", "colour": 1})
    rec.call(
        "POST",
        "/messages",
        "422: tool_choice without tools",
        json_body={"content": "hi", "tool_choice": "auto"},
    )
    rec.call(
        "POST",
        "/messages",
        "404: another user's conversation",
        user=BOB,
        json_body={"conversation_id": conversation_id, "content": "hi"},
    )
    standin.set_mode("error500")
    try:
        rec.call(
            "POST",
            "/messages",
            "502: the model failed (both messages stored)",
            json_body={"conversation_id": conversation_id, "content": "Will fail"},
        )
    finally:
        standin.set_mode("ok")
    # The second post's user message and the answer to it: the branch points below
    user_id = second["user_message"]["message_id"]
    assistant_id = second["assistant_message"]["message_id"]
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages",
        "append a user, an assistant and a system message, no model call",
        path=path,
        json_body={
            "messages": [
                {"role": "user", "content": "Appended question"},
                {"role": "assistant", "content": "Appended answer", "model": "standin-model"},
                {"role": "system", "content": "Appended note"},
            ]
        },
        headers={"Idempotency-Key": "golden-append-1"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages",
        "422: a tool result that answers no call",
        path=path,
        json_body={"messages": [{"role": "tool", "tool_call_id": "call_x", "content": "42"}]},
    )
    rec.call("POST", "/conversations/{conversation_id}/messages", "400: not JSON", path=path, content=b"{")
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"messages": [{"role": "user", "content": "x"}]},
    )
    message = {"conversation_id": conversation_id, "message_id": assistant_id}
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}/messages/{message_id}",
        "pin",
        path=message,
        json_body={"pinned": True},
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}/messages/{message_id}",
        "422: pinned is not a boolean",
        path=message,
        json_body={"pinned": "yes"},
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}/messages/{message_id}",
        "404: another user's",
        path=message,
        user=BOB,
        json_body={"pinned": False},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/window",
        "the window the next post would use",
        path=path,
        json_body={"content": "What next?"},
    )
    rec.call("POST", "/conversations/{conversation_id}/window", "422: no content", path=path, json_body={})
    rec.call(
        "POST",
        "/conversations/{conversation_id}/window",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"content": "x"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/edit",
        "edit a user message: a new branch",
        path={"conversation_id": conversation_id, "message_id": user_id},
        json_body={"content": "Second line, edited"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/edit",
        "400: only a user message can be edited",
        path=message,
        json_body={"content": "no"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/edit",
        "404: another user's",
        path=message,
        user=BOB,
        json_body={"content": "no"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "regenerate an answer",
        path=message,
        json_body={},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "400: only an answer can be regenerated",
        path={"conversation_id": conversation_id, "message_id": user_id},
        json_body={},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "404: another user's",
        path=message,
        user=BOB,
        json_body={},
    )
    rec.call(
        "PUT",
        "/conversations/{conversation_id}/active",
        "switch back to the first branch",
        path=path,
        json_body={"message_id": assistant_id},
    )
    rec.call(
        "PUT",
        "/conversations/{conversation_id}/active",
        "404: no such message",
        path=path,
        json_body={"message_id": "nope"},
    )
    rec.call("PUT", "/conversations/{conversation_id}/active", "422: no message_id", path=path, json_body={})
    rec.call(
        "PUT",
        "/conversations/{conversation_id}/active",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"message_id": assistant_id},
    )
    rec.call("GET", "/conversations/{conversation_id}/tree", "every message of every branch", path=path)
    rec.call("GET", "/conversations/{conversation_id}/tree", "a page of 2", path=path, params={"limit": 2})
    rec.call("GET", "/conversations/{conversation_id}/tree", "404: another user's", path=path, user=BOB)
    rec.call("GET", "/conversations/{conversation_id}", "detail after the branches", path=path)
    rec.call("GET", "/conversations/{conversation_id}/events", "the turn log", path=path)
    rec.call("GET", "/conversations/{conversation_id}/events", "a page of 2", path=path, params={"limit": 2})
    rec.call("GET", "/conversations/{conversation_id}/events", "404: another user's", path=path, user=BOB)
    rec.call(
        "GET",
        "/conversations/{conversation_id}/events",
        "422: limit out of range",
        path=path,
        params={"limit": -1},
    )
    rec.call(
        "DELETE",
        "/conversations/{conversation_id}/messages/{message_id}",
        "404: another user's",
        path=message,
        user=BOB,
    )
    rec.call(
        "DELETE", "/conversations/{conversation_id}/messages/{message_id}", "delete a message", path=message
    )
    rec.call(
        "DELETE",
        "/conversations/{conversation_id}/messages/{message_id}",
        "404: no such message",
        path={"conversation_id": conversation_id, "message_id": "nope"},
    )


def openai(rec: Recorder, standin: OpenAIStandin) -> None:
    rec.family = "openai"
    rec.call("GET", "/v1/models", "the configured models")
    rec.call("GET", "/v1/models", "401: no identity", user=None)
    plain = rec.call(
        "POST",
        "/v1/chat/completions",
        "a completion that starts a conversation",
        json_body={"model": "standin-model", "messages": [{"role": "user", "content": "Say hi"}]},
    )
    conversation_id = plain.headers.get("x-conversation-id", "")
    rec.call(
        "POST",
        "/v1/chat/completions",
        "the whole history resent, named by the header",
        headers={"X-Conversation-Id": conversation_id},
        json_body={
            "model": "standin-model",
            "messages": [
                {"role": "user", "content": "Say hi"},
                {"role": "assistant", "content": plain.json()["choices"][0]["message"]["content"]},
                {"role": "user", "content": "Again"},
            ],
        },
    )
    rec.call(
        "POST",
        "/v1/chat/completions",
        "streamed, with usage last",
        json_body={
            "model": "standin-model",
            "conversation": conversation_id,
            "messages": [{"role": "user", "content": "Stream this please"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        stream=True,
    )
    standin.set_mode("stream_cut")
    try:
        rec.call(
            "POST",
            "/v1/chat/completions",
            "streamed, the model's stream breaks: the mid-stream error event",
            json_body={
                "model": "standin-model",
                "messages": [{"role": "user", "content": "Break in the middle of this"}],
                "stream": True,
            },
            stream=True,
        )
    finally:
        standin.set_mode("ok")
    rec.call("POST", "/v1/chat/completions", "400: not JSON", content=b"{")
    rec.call("POST", "/v1/chat/completions", "400: no messages", json_body={"model": "standin-model"})
    rec.call(
        "POST",
        "/v1/chat/completions",
        "404: another user's conversation",
        user=BOB,
        json_body={
            "model": "standin-model",
            "conversation": conversation_id,
            "messages": [{"role": "user", "content": "x"}],
        },
    )
    standin.set_mode("error500")
    try:
        rec.call(
            "POST",
            "/v1/chat/completions",
            "502: the model failed",
            json_body={"model": "standin-model", "messages": [{"role": "user", "content": "fail"}]},
        )
    finally:
        standin.set_mode("ok")


def usage(rec: Recorder) -> None:
    rec.family = "usage"
    rec.call("GET", "/usage", "the caller's usage this day and month")
    rec.call("GET", "/usage", "422: a date that is not one", params={"from": "yesterday"})
    rec.call("GET", "/usage", "403: another user's, not an administrator", params={"user": BOB})
    rec.call(
        "GET",
        "/usage",
        "an administrator reads another user's",
        groups=ADMIN_GROUP,
        user=BOB,
        params={"user": ALICE},
    )
    budget = {"user_id": CAROL}
    rec.call(
        "PUT",
        "/budgets/{user_id}",
        "403: not an administrator",
        path=budget,
        json_body={"daily_tokens": 1},
    )
    rec.call(
        "PUT",
        "/budgets/{user_id}",
        "an administrator sets a tiny daily limit",
        path=budget,
        groups=ADMIN_GROUP,
        json_body={"daily_tokens": 1, "monthly_usd": None},
    )
    rec.call("PUT", "/budgets/{user_id}", "400: not JSON", path=budget, groups=ADMIN_GROUP, content=b"{")
    rec.call(
        "PUT",
        "/budgets/{user_id}",
        "422: a negative limit",
        path=budget,
        groups=ADMIN_GROUP,
        json_body={"daily_tokens": -1},
    )
    rec.call("POST", "/messages", "the limited user's first post", user=CAROL, json_body={"content": "One"})
    rec.call("POST", "/messages", "429: over the daily limit", user=CAROL, json_body={"content": "Two"})
    rec.call(
        "POST",
        "/v1/chat/completions",
        "429: over the daily limit, OpenAI's shape",
        user=CAROL,
        json_body={"model": "standin-model", "messages": [{"role": "user", "content": "Three"}]},
    )
    rec.call("GET", "/usage", "the limited user's usage and budget", user=CAROL)


WORLD = "golden-world"


def worlds(rec: Recorder) -> None:
    rec.family = "worlds"
    world = {"world_id": WORLD}
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "a new dialogue by participants with two entries",
        path=world,
        json_body={
            "participants": ["A", "B"],
            "entries": [
                {
                    "participant_id": "A",
                    "content": "Hello B",
                    "game_tick": 10,
                    "entry_id": "e1",
                    "role": "character",
                },
                {
                    "participant_id": "B",
                    "content": "Hello A",
                    "game_tick": 20,
                    "entry_id": "e2",
                    "role": "character",
                },
            ],
        },
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "a whisper in a three-way dialogue, one entry",
        path=world,
        json_body={
            "participants": ["A", "B", "C"],
            "entry": {
                "participant_id": "A",
                "content": "Only B hears this",
                "game_tick": 30,
                "entry_id": "e3",
                "role": "character",
                "audience": ["A", "B"],
                "visibility": "whisper",
            },
        },
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "the same entry id again",
        path=world,
        json_body={
            "participants": ["A", "B"],
            "entry": {
                "participant_id": "A",
                "content": "Hello B",
                "game_tick": 10,
                "entry_id": "e1",
                "role": "character",
            },
        },
    )
    rec.call("POST", "/worlds/{world_id}/dialogues/entries", "400: not JSON", path=world, content=b"{")
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "422: an entry without a game tick",
        path=world,
        json_body={"participants": ["A", "B"], "entry": {"participant_id": "A", "content": "x"}},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "404: no such dialogue id",
        path=world,
        json_body={
            "dialogue_id": "nope",
            "entry": {"participant_id": "A", "content": "x", "game_tick": 1, "role": "character"},
        },
    )
    rec.call("GET", "/worlds", "the caller's worlds")
    rec.call("GET", "/worlds", "another user has none", user=BOB)
    rec.call("GET", "/worlds", "422: limit out of range", params={"limit": 0})
    rec.call("GET", "/worlds/{world_id}/dialogues", "the world's dialogues", path=world)
    rec.call(
        "GET",
        "/worlds/{world_id}/dialogues",
        "another user, the same world id: theirs, empty",
        path=world,
        user=BOB,
    )
    rec.call(
        "GET", "/worlds/{world_id}/history", "history of A and B", path=world, params={"participants": "A,B"}
    )
    rec.call("GET", "/worlds/{world_id}/history", "what C witnessed", path=world, params={"for": "C"})
    rec.call("GET", "/worlds/{world_id}/history", "422: limit out of range", path=world, params={"limit": -1})
    rec.call(
        "GET",
        "/worlds/{world_id}/history",
        "another user, the same world id: theirs, empty",
        path=world,
        user=BOB,
        params={"participants": "A,B"},
    )
    rec.call("GET", "/worlds/{world_id}/history", "400: neither participants nor for", path=world)
    rec.call(
        "POST",
        "/worlds/{world_id}/prompt",
        "the prompt for B answering A",
        path=world,
        json_body={
            "participants": ["A", "B"],
            "system_prompt": "You are B.",
            "ai_participant": "B",
            "names": {"A": "Alice", "B": "Bob"},
            "current": {"participant_id": "A", "content": "How are you?", "game_tick": 40},
        },
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/prompt",
        "422: no system prompt",
        path=world,
        json_body={"participants": ["A"]},
    )
    rec.call("POST", "/worlds/{world_id}/prompt", "400: not JSON", path=world, content=b"{")
    rec.call(
        "POST",
        "/worlds/{world_id}/prompt",
        "another user, the same world id: a prompt of their empty world",
        path=world,
        user=BOB,
        json_body={"participants": ["A", "B"], "system_prompt": "x"},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/saves",
        "save at tick 20",
        path=world,
        json_body={"save_id": "s1", "game_tick": 20},
    )
    rec.call("POST", "/worlds/{world_id}/saves", "422: no game tick", path=world, json_body={"save_id": "s1"})
    rec.call(
        "POST",
        "/worlds/{world_id}/saves",
        "another user, the same world id: a save of their own",
        path=world,
        user=BOB,
        json_body={"save_id": "s1", "game_tick": 1},
    )
    rec.call("GET", "/worlds/{world_id}/saves", "the world's saves", path=world)
    rec.call("GET", "/worlds/{world_id}/saves", "another user: only their own save", path=world, user=BOB)
    save = {"world_id": WORLD, "save_id": "s1"}
    rec.call("DELETE", "/worlds/{world_id}/saves/{save_id}/load", "404: nothing loaded to revert", path=save)
    rec.call("POST", "/worlds/{world_id}/saves/{save_id}/load", "load the save", path=save)
    rec.call(
        "GET",
        "/worlds/{world_id}/history",
        "history after the load",
        path=world,
        params={"participants": "A,B"},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/saves/{save_id}/load",
        "404: no such save",
        path={"world_id": WORLD, "save_id": "nope"},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/saves/{save_id}/load",
        "another user loads their own save",
        path=save,
        user=BOB,
    )
    rec.call("DELETE", "/worlds/{world_id}/saves/{save_id}/load", "revert the load", path=save)
    rec.call(
        "DELETE",
        "/worlds/{world_id}/saves/{save_id}/load",
        "another user reverts their own load",
        path=save,
        user=BOB,
    )
    rec.call("GET", "/worlds/{world_id}/export", "the world as JSON Lines", path=world)
    rec.call(
        "GET",
        "/worlds/{world_id}/export",
        "another user, the same world id: theirs, empty",
        path=world,
        user=BOB,
    )
    dialogue_ab = "A+B"
    entry = {"world_id": WORLD, "dialogue_id": dialogue_ab, "entry_id": "e2"}
    rec.call(
        "DELETE",
        "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}",
        "404: another user's",
        path=entry,
        user=BOB,
    )
    rec.call(
        "DELETE",
        "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}",
        "delete an entry",
        path=entry,
    )
    rec.call(
        "DELETE",
        "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}",
        "404: already deleted",
        path=entry,
    )
    dialogue = {"world_id": WORLD, "dialogue_id": "A+B+C"}
    rec.call(
        "DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}", "404: another user's", path=dialogue, user=BOB
    )
    rec.call("DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}", "delete a dialogue", path=dialogue)
    rec.call("DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}", "404: already deleted", path=dialogue)


def world_files(rec: Recorder) -> None:
    rec.family = "world_files"
    imported = {"world_id": "golden-import"}
    stamp = "2026-01-01T00:00:00.000000Z"
    lines = [
        {"type": "world", "format": "chat-history.dialogues", "version": 1, "world_id": "src",
         "exported_at": stamp, "dialogues": 1, "entries": 2},
        {"type": "dialogue", "dialogue_id": "A+B", "participants": ["A", "B"], "created_at": stamp,
         "updated_at": stamp, "next_seq": 2, "entry_count": 2},
        {"type": "entry", "dialogue_id": "A+B", "entry_id": "i1", "participant_id": "A", "role": "character",
         "content": "Imported one", "game_tick": 1, "seq": 0, "created_at": stamp},
        {"type": "entry", "dialogue_id": "A+B", "entry_id": "i2", "participant_id": "B", "role": "character",
         "content": "Imported two", "game_tick": 2, "seq": 1, "created_at": stamp},
    ]  # fmt: skip
    ndjson = "".join(json.dumps(line) + "\n" for line in lines).encode()
    ndjson_headers = {"Content-Type": "application/x-ndjson"}
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "import JSON Lines",
        path=imported,
        content=ndjson,
        headers=ndjson_headers,
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "409: the world is not empty (mode=restore)",
        path=imported,
        params={"mode": "restore"},
        content=ndjson,
        headers=ndjson_headers,
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "400: a line that is not JSON, named by its number",
        path={"world_id": "golden-bad-import"},
        content=ndjson.splitlines(keepends=True)[0] + b"not json\n",
        headers=ndjson_headers,
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "422: an unknown mode",
        path=imported,
        params={"mode": "sideways"},
        content=ndjson,
        headers=ndjson_headers,
    )
    rec.call("GET", "/worlds/{world_id}/export", "the imported world", path=imported)
    # The file's size races with the clock: it holds the export time, and gzip packs digits unevenly.
    export = rec.call("POST", "/worlds/{world_id}/exports", "an export to S3", path=imported, racy=("bytes",))
    packed = httpx.get(export.json()["url"], timeout=60)
    rec.families[rec.family].append(
        Call(
            "GET",
            "<presigned export url>",
            "the exported file, unpacked",
            packed.status_code,
            dict(packed.headers),
            {"jsonl": [json.loads(line) for line in gzip.decompress(packed.content).decode().splitlines()]},
        )
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/exports",
        "another user, the same world id: an export of theirs, empty",
        path=imported,
        user=BOB,
        racy=("bytes",),
    )
    target = {"world_id": "golden-job"}
    job = rec.call(
        "POST", "/worlds/{world_id}/imports", "an import job and its upload URL", path=target
    ).json()
    job_path = {"world_id": "golden-job", "job_id": job["job_id"]}
    rec.call("GET", "/worlds/{world_id}/imports/{job_id}", "the job awaits its upload", path=job_path)
    rec.call("POST", "/worlds/{world_id}/imports/{job_id}/start", "409: nothing uploaded yet", path=job_path)
    rec.call("GET", "/worlds/{world_id}/imports/{job_id}", "404: another user's job", path=job_path, user=BOB)
    rec.call(
        "POST",
        "/worlds/{world_id}/imports/{job_id}/start",
        "404: another user's job",
        path=job_path,
        user=BOB,
    )
    rec.call(
        "GET",
        "/worlds/{world_id}/imports/{job_id}",
        "400: not a job id",
        path={"world_id": "golden-job", "job_id": "nope"},
    )
    uploaded = httpx.put(job["upload_url"], content=gzip.compress(ndjson, mtime=0), timeout=60)
    assert uploaded.status_code == 200, uploaded.text
    # The worker may pick the job up before the answer is written: its progress races with it.
    rec.call(
        "POST",
        "/worlds/{world_id}/imports/{job_id}/start",
        "start the job",
        path=job_path,
        racy=("status", "runs", "lines_done", "dialogues", "entries", "error_count", "bytes_done"),
    )
    deadline = time.monotonic() + 60
    with httpx.Client(base_url=rec.url, headers={"X-User-Id": ALICE}) as client:
        path = f"/worlds/golden-job/imports/{job['job_id']}"
        while client.get(path).json().get("status") not in ("done", "failed"):
            assert time.monotonic() < deadline, "the import job did not finish in 60 s"
            time.sleep(0.1)
    rec.call("GET", "/worlds/{world_id}/imports/{job_id}", "the job is done", path=job_path)
    rec.call("POST", "/worlds/{world_id}/imports/{job_id}/start", "409: already done", path=job_path)
    rec.call(
        "GET", "/worlds/{world_id}/history", "the job's world", path=target, params={"participants": "A,B"}
    )
    rec.call("DELETE", "/worlds/{world_id}", "404: another user's world", path=target, user=BOB)
    rec.call("DELETE", "/worlds/{world_id}", "delete the world", path=target)
    rec.call("DELETE", "/worlds/{world_id}", "404: already deleted", path=target)
    rec.call("GET", "/worlds/{world_id}/dialogues", "404: deleted", path=target)


def console(rec: Recorder) -> None:
    rec.family = "console"
    rec.call("GET", "/console", "the console page", user=None)
    rec.call("GET", "/console/{file+}", "its script", path={"file": "console.js"}, user=None)
    rec.call("GET", "/console/{file+}", "its style sheet", path={"file": "console.css"}, user=None)
    rec.call("GET", "/console/{file+}", "the page by name", path={"file": "index.html"}, user=None)
    rec.call("GET", "/console/{file+}", "404: no such file", path={"file": "nope.js"}, user=None)
    rec.call(
        "GET", "/console/{file+}", "404: no escaping the folder", path={"file": "..%2Fapp.py"}, user=None
    )


FAMILIES = ("conversations", "messages", "openai", "usage", "worlds", "world_files", "console")


@pytest.fixture(scope="module")
def golden_server(
    standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One local server for the whole scenario: the stand-in model, an administrators' group, no snapshots."""
    process = ServerProcess(
        tmp_path_factory.mktemp("golden-data"),
        env={
            "LLM_BASE_URL": standin.base_url,
            "LLM_MODEL": "standin-model",
            "LLM_MAX_RETRIES": "1",
            "ADMIN_GROUP": ADMIN_GROUP,
            "BUDGETS_ENABLED": "true",
            "PRICES": json.dumps({"standin-model": {"input": 1, "output": 4}}),
        },
        args=["--no-persist"],
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def recording(golden_server: ServerProcess, standin: OpenAIStandin) -> dict[str, list[dict[str, Any]]]:
    """The scenario, run once against the server; its answers normalised, by family."""
    standin.set_mode("ok")
    rec = Recorder(golden_server.url)
    conversations(rec)
    messages(rec, standin)
    openai(rec, standin)
    usage(rec)
    worlds(rec)
    world_files(rec)
    console(rec)
    urls = {golden_server.url: "<server>", standin.base_url: "<model>"}
    return {family: normalise(calls, urls) for family, calls in rec.families.items()}


def test_the_golden_answers_cover_every_route_of_the_openapi_document() -> None:
    """API-8: every route of template.yaml (the golden OpenAPI document lists them all) has recorded
    answers; with the replay below equal to the files, the scenario calls every route."""
    document = json.loads((ANSWERS.parent / "openapi.json").read_text(encoding="utf-8"))
    routes = {f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item}
    recorded = {
        call["request"]
        for file in ANSWERS.glob("*.json")
        for call in json.loads(file.read_text(encoding="utf-8"))
    }
    assert sorted(routes - recorded) == []


def test_recorded_answers_equal_the_golden_copy(recording: dict[str, list[dict[str, Any]]]) -> None:
    """API-8, API-9: the scenario's answers equal tests/golden/answers/<family>.json, family by family
    (one test, so that the scenario runs once per session, also under xdist)."""
    # Given the scenario's answers, by family
    assert tuple(recording) == FAMILIES
    if os.environ.get("GOLDEN_UPDATE") == "1":
        ANSWERS.mkdir(exist_ok=True)
        for family, calls in recording.items():
            (ANSWERS / f"{family}.json").write_text(dump(calls), encoding="utf-8")
    # Then each family's are the recorded ones, call by call, and no family's file is left over
    report = ""
    for family, calls in recording.items():
        golden_file = ANSWERS / f"{family}.json"
        golden = json.loads(golden_file.read_text(encoding="utf-8")) if golden_file.exists() else []
        report += differences(family, golden, calls)
    if report:
        pytest.fail("the answers differ from the golden copy:\n" + report, pytrace=False)
    assert sorted(file.stem for file in ANSWERS.glob("*.json")) == sorted(FAMILIES)
