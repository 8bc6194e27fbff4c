"""API Gateway HTTP API emulation: route matching, payload-format-2.0 events, Lambda proxy responses."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, unquote

from chat_local.template import LOCAL_ACCOUNT_ID, HttpRoute, path_parameter_names

LOCAL_API_ID = "local"
# API Gateway's own limit on request payloads (HTTP API: 10 MB).
MAX_BODY_BYTES = 10 * 1024 * 1024
# The dev-mode identity header: its value becomes the JWT `sub` claim the authorizer would have set.
USER_HEADER = "x-user-id"
#: Dev mode only: the caller's groups, as a JWT's `cognito:groups` claim (COST-3 administrators).
GROUPS_HEADER = "x-user-groups"

_TEXT_TYPES = (
    "text/",
    "application/json",
    "application/x-ndjson",
    "application/xml",
    "application/javascript",
    "application/x-www-form-urlencoded",
    "application/yaml",
    "application/problem+json",
)


@dataclass(frozen=True)
class RouteMatch:
    route: HttpRoute
    path_parameters: dict[str, str]


@dataclass(frozen=True)
class NoRoute:
    """No route for the path (404), or the path exists with other methods (405, with `allowed`)."""

    allowed: tuple[str, ...] = ()


class Router:
    """Matches METHOD + path against the template's HttpApi routes (most specific first)."""

    def __init__(self, routes: Sequence[HttpRoute]) -> None:
        self.routes = list(routes)

    def match(self, method: str, path: str) -> RouteMatch | NoRoute:
        allowed: list[str] = []
        for route in self.routes:
            found = route.pattern.match(path)
            if found is None:
                continue
            if route.method not in (method, "ANY"):
                allowed.append(route.method)
                continue
            names = path_parameter_names(route.path)
            values = found.groups()
            return RouteMatch(route, dict(zip(names, values, strict=True)))
        default = next((r for r in self.routes if r.path == "/$default"), None)
        if default is not None and not allowed:
            return RouteMatch(default, {})
        return NoRoute(tuple(sorted(set(allowed))))


def decoded_path(raw_path: str) -> str:
    """The path as API Gateway HTTP APIs hand it over: percent-decoded (rawPath, http.path, parameters).

    An encoded slash stays `%2F`, so it can never split a path parameter into two segments.
    """
    return "%2F".join(unquote(part) for part in re.split("%2[Ff]", raw_path))


def is_text(content_type: str | None, body: bytes) -> bool:
    """Whether API Gateway would pass the body as text (else base64 with isBase64Encoded)."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype and not (ctype.startswith(_TEXT_TYPES) or ctype.endswith(("+json", "+xml"))):
        return False
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass
class HttpRequest:
    """An incoming request as the local server read it."""

    method: str
    raw_path: str
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str = "127.0.0.1"
    protocol: str = "HTTP/1.1"
    received_at: float = field(default_factory=time.time)

    def header(self, name: str) -> str | None:
        name = name.lower()
        values = [v for k, v in self.headers if k.lower() == name]
        return ",".join(values) if values else None


def payload_v2_event(
    *,
    method: str,
    path: str,
    route_key: str,
    headers: Mapping[str, str],
    raw_query: str = "",
    query: Mapping[str, str] | None = None,
    path_parameters: Mapping[str, str] | None = None,
    body: str | None = None,
    is_base64: bool = False,
    claims: Mapping[str, Any] | None = None,
    cookies: Sequence[str] = (),
    source_ip: str = "127.0.0.1",
    protocol: str = "HTTP/1.1",
    received_at: float | None = None,
    stage: str = "$default",
    request_id: str | None = None,
) -> dict[str, Any]:
    """The payload-format-2.0 event API Gateway HTTP API sends to a Lambda integration: the one builder the
    local server and the tests share. `claims` are the JWT authorizer's (None: no identity)."""
    received_at = time.time() if received_at is None else received_at
    host = headers.get("host", "127.0.0.1")
    request_context: dict[str, Any] = {
        "accountId": LOCAL_ACCOUNT_ID,
        "apiId": LOCAL_API_ID,
        "domainName": host,
        "domainPrefix": host.split(".")[0],
        "http": {
            "method": method,
            "path": path,
            "protocol": protocol,
            "sourceIp": source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request_id or str(uuid.uuid4()),
        "routeKey": route_key,
        "stage": stage,
        "time": datetime.fromtimestamp(received_at, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
        "timeEpoch": int(received_at * 1000),
    }
    if claims is not None:
        request_context["authorizer"] = {"jwt": {"claims": dict(claims), "scopes": None}}
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": dict(headers),
        "requestContext": request_context,
        "isBase64Encoded": is_base64,
    }
    if cookies:
        event["cookies"] = list(cookies)
    if query:
        event["queryStringParameters"] = dict(query)
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    if body is not None:
        event["body"] = body
    return event


def build_event(
    request: HttpRequest,
    match: RouteMatch,
    *,
    region: str,
    stage: str = "$default",
    verify: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The event for one HTTP request the local server received.

    `verify` (JWT mode: `chat-local-server --jwt-issuer`) turns a bearer token into its claims, as the
    HTTP API's JWT authorizer does, or raises Unauthorized; `X-User-Id` then counts for nothing.
    """
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for key, value in request.headers:
        lower = key.lower()
        if lower == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        # Repeated headers are joined with commas, as API Gateway does.
        headers[lower] = f"{headers[lower]},{value}" if lower in headers else value
    query: dict[str, str] = {}
    for key, value in parse_qsl(request.raw_query, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    user = (headers.get(USER_HEADER) or "").strip()
    # Dev mode only: a deployed API takes `sub` from a verified JWT, never from a header.
    claims: dict[str, Any] | None = {"sub": user, "iss": "chat-local", "token_use": "local"} if user else None
    groups = (headers.get(GROUPS_HEADER) or "").strip()
    if verify is not None:
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        claims = verify(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        groups = ""
    if claims is not None and groups:
        # As API Gateway hands a list claim to the function: "[a b]".
        claims["cognito:groups"] = "[" + " ".join(groups.replace(",", " ").split()) + "]"
    body: str | None = None
    is_base64 = False
    if request.body:
        if is_text(headers.get("content-type"), request.body):
            body = request.body.decode("utf-8")
        else:
            body, is_base64 = base64.b64encode(request.body).decode("ascii"), True
    return payload_v2_event(
        method=request.method,
        path=decoded_path(request.raw_path),
        route_key=match.route.route_key,
        headers=headers,
        raw_query=request.raw_query,
        query=query,
        path_parameters=match.path_parameters,
        body=body,
        is_base64=is_base64,
        claims=claims,
        cookies=cookies,
        source_ip=request.source_ip,
        protocol=request.protocol,
        received_at=request.received_at,
        stage=stage,
        request_id=headers.get("x-request-id"),
    )


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def json_response(status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()) -> HttpResponse:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return HttpResponse(status, [("Content-Type", "application/json"), *headers], body)


def error_response(
    status: int, code: str, message: str, headers: Iterable[tuple[str, str]] = ()
) -> HttpResponse:
    """The project's one error shape: {"error": {"code", "message"}}."""
    return json_response(status, {"error": {"code": code, "message": message}}, headers)


def proxy_response(result: Any) -> HttpResponse:
    """Turn a handler's return value into an HTTP response the way API Gateway (format 2.0) does.

    A dict with `statusCode` is a proxy response; anything else is taken as a 200 JSON body. A
    malformed proxy response is a 500, as API Gateway answers when the integration response is invalid.
    """
    if not (isinstance(result, Mapping) and "statusCode" in result):
        if isinstance(result, str):
            return HttpResponse(200, [("Content-Type", "application/json")], result.encode("utf-8"))
        return json_response(200, result)
    try:
        status = int(result["statusCode"])
        if not 100 <= status <= 599:
            raise ValueError(status)
    except (TypeError, ValueError):
        return error_response(500, "internal_error", "Internal Server Error")
    headers: list[tuple[str, str]] = []
    for key, value in (result.get("headers") or {}).items():
        headers.append((str(key), str(value)))
    for key, values in (result.get("multiValueHeaders") or {}).items():
        headers.extend((str(key), str(v)) for v in values or [])
    headers.extend(("Set-Cookie", str(c)) for c in result.get("cookies") or [])
    raw_body = result.get("body")
    if raw_body is None:
        body = b""
    elif result.get("isBase64Encoded"):
        try:
            body = base64.b64decode(str(raw_body))
        except ValueError:
            return error_response(500, "internal_error", "Internal Server Error")
    else:
        body = raw_body.encode("utf-8") if isinstance(raw_body, str) else json.dumps(raw_body).encode("utf-8")
    if body and not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", "application/json"))
    return HttpResponse(status, headers, body)
