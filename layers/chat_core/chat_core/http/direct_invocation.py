"""Direct invocation of an HTTP function: the API Gateway HTTP API (v2) event a plain JSON payload stands
for, and the resolver's answer as a direct caller wants it (see `chat_core.http.api.ChatResolver`)."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from aws_lambda_powertools.event_handler import content_types

from chat_core.errors import InvalidInput, Unauthorized
from chat_core.store.keys import is_valid_owner

#: A route rule's path parameter, `<name>`.
PLACEHOLDER = re.compile(r"<(\w+)>")
_DIRECT_KEYS = frozenset({"user_id", "route", "path_parameters", "query", "headers", "body"})


def _route_key(method: str, rule: str) -> str:
    return f"{method} {PLACEHOLDER.sub(r'{\1}', rule)}"


def _strings(payload: Mapping[str, Any], name: str) -> dict[str, str]:
    value = payload.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str | int | float | bool) for k, v in value.items()
    ):
        raise InvalidInput(
            f"{name} must be an object of strings (numbers and booleans are accepted)", field=name
        )
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def _choose_route(payload: Mapping[str, Any], routes: list[tuple[str, str]]) -> tuple[str, str]:
    wanted = payload.get("route")
    if wanted is None:
        if len(routes) == 1:
            return routes[0]
        # Several routes: the one whose path parameters the payload gives (e.g. `key` or `conversation_id`).
        given = payload.get("path_parameters")
        names = set(given) if isinstance(given, Mapping) else set()
        fitting = [(m, r) for m, r in routes if set(PLACEHOLDER.findall(r)) == names]
        if len(fitting) == 1:
            return fitting[0]
        served = ", ".join(_route_key(m, r) for m, r in routes)
        raise InvalidInput(
            f"this function serves several routes ({served}); name one in `route`", field="route"
        )
    if isinstance(wanted, str):
        for method, rule in routes:
            if " ".join(wanted.split()) in (_route_key(method, rule), f"{method} {rule}"):
                return method, rule
    served = ", ".join(_route_key(m, r) for m, r in routes)
    raise InvalidInput(f"route {wanted!r} is not served by this function (it serves {served})", field="route")


def direct_event(
    payload: Mapping[str, Any], routes: list[tuple[str, str]], context: Any = None
) -> dict[str, Any]:
    """The API Gateway HTTP API (v2) event a direct payload stands for, with `user_id` as the JWT `sub`.

    Raises Unauthorized without a usable `user_id` and InvalidInput for anything else malformed, so a
    bad payload gets the same one error shape as a bad HTTP request.
    """
    unknown = sorted(set(payload) - _DIRECT_KEYS)
    if unknown:
        raise InvalidInput(
            f"unknown keys in the direct payload: {', '.join(unknown)} "
            f"(expected {', '.join(sorted(_DIRECT_KEYS))})"
        )
    user_id = payload.get("user_id")
    if not isinstance(user_id, str) or not is_valid_owner(user_id):
        raise Unauthorized("direct invocation needs `user_id`: the caller's id, a non-blank string")
    if not routes:
        raise InvalidInput("this function has no route to invoke")
    method, rule = _choose_route(payload, routes)
    params = _strings(payload, "path_parameters")
    missing = [name for name in PLACEHOLDER.findall(rule) if not params.get(name)]
    if missing:
        raise InvalidInput(f"path_parameters needs {', '.join(missing)}", field="path_parameters")
    path = PLACEHOLDER.sub(lambda m: quote(params[m.group(1)], safe=""), rule)
    query = _strings(payload, "query")
    headers = {k.lower(): v for k, v in _strings(payload, "headers").items()}
    body = payload.get("body")
    text: str | None = None
    if body is not None:
        if isinstance(body, str):
            text = body
            try:
                json.loads(body)
                headers.setdefault("content-type", content_types.APPLICATION_JSON)
            except ValueError:
                headers.setdefault("content-type", "text/plain; charset=utf-8")
        else:
            text = json.dumps(body, ensure_ascii=False)
            headers.setdefault("content-type", content_types.APPLICATION_JSON)
    route_key = _route_key(method, rule)
    request_id = getattr(context, "aws_request_id", None)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": urlencode(query),
        "headers": headers,
        "requestContext": {
            "accountId": "direct",
            "apiId": "direct",
            "domainName": "direct",
            "domainPrefix": "direct",
            "http": {
                "method": method,
                "path": path,
                "protocol": "DIRECT",
                "sourceIp": "0.0.0.0",  # noqa: S104 - a placeholder, nothing listens on it
                "userAgent": "direct-invocation",
            },
            "requestId": request_id if isinstance(request_id, str) else str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
            "timeEpoch": int(time.time() * 1000),
            "authorizer": {"jwt": {"claims": {"sub": user_id}, "scopes": None}},
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = query
    if params:
        event["pathParameters"] = params
    if text is not None:
        event["body"] = text
    return event


def direct_result(response: Mapping[str, Any]) -> dict[str, Any]:
    """A resolver response as a direct caller wants it: the body parsed (JSON, or JSONL as a list)."""
    headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
    raw = response.get("body") or ""
    if response.get("isBase64Encoded") and isinstance(raw, str):
        raw = base64.b64decode(raw).decode("utf-8", "replace")
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    body: Any = raw or None
    try:
        if raw and "json" in content_type and "ndjson" not in content_type:
            body = json.loads(raw)
        elif raw and "ndjson" in content_type:
            body = [json.loads(line) for line in str(raw).splitlines() if line.strip()]
    except ValueError:
        body = raw
    return {"statusCode": int(response.get("statusCode", 500)), "headers": headers, "body": body}
