"""The golden answers' recorder: it sends a request, keeps the answer, and normalises a family of
answers into placeholders that keep the shape (see test_golden_answers.py)."""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.local_server import settle_streams

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
        settled: bool = False,
    ) -> httpx.Response:
        """Send one request and record its answer; `racy` names body keys whose value races with a
        background worker (recorded as `<racy>:<type>`); `settled` first waits until the table's stream
        has delivered what was written (a read of the usage the stream adds, COST-3)."""
        if settled:
            settle_streams(self.url)
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
    # RSP-10: a compaction item's content holds the conversation's id, encoded.
    (re.compile(r"^encrypted_content$"), "<opaque>"),
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
        # RSP-1: the Responses ids hold a conversation id after an underscore (`resp_<id>_<seq>`,
        # `conv_<id>`).
        value = re.sub(rf"(?<=_){_ULID}(?![0-9A-Z])", lambda m: self._id(m.group(0)), value)
        value = re.sub(_TIMESTAMP, "<timestamp>", value)
        value = re.sub(_HTTP_DATE, "<http-date>", value)
        value = re.sub(rf"\b{_DATE}\b", "<date>", value)
        return re.sub(rf"\b{_MONTH}\b", "<month>", value)

    def value(self, value: Any, key: str = "", racy: frozenset[str] = frozenset()) -> Any:
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            if key in racy:
                return f"<racy>:{_type_name(value)}"
            if (
                key in ("created", "created_at", "completed_at")
                and isinstance(value, int)
                and value > 1_000_000_000
            ):
                # a chat.completion's, a Response's; elsewhere `created` is a count, `created_at` ISO text
                return "<unix-time>:int"
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
