"""API Gateway HTTP API (payload v2) events as API Gateway sends them, with a JWT `sub` or no identity, built
by the same function the local server uses (`chat_local.apigw.payload_v2_event`)."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlencode

from chat_local.apigw import payload_v2_event

_NO_BODY = object()


def http_event(
    method: str,
    path: str,
    *,
    route: str | None = None,
    path_parameters: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = _NO_BODY,
    raw_body: str | None = None,
    headers: dict[str, str] | None = None,
    user: str | None = "alice",
    base64_body: bool = False,
) -> dict[str, Any]:
    """One v2 event. `body` is JSON-encoded; `raw_body` is sent verbatim (for malformed JSON);
    `user=None` leaves out the authorizer (no identity)."""
    text: str | None
    if raw_body is not None:
        text = raw_body
    elif body is _NO_BODY:
        text = None
    else:
        text = json.dumps(body)
    all_headers = {"content-type": "application/json", "user-agent": "pytest"}
    all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    if text is None:
        all_headers.pop("content-type", None)
    if base64_body and text is not None:
        text = base64.b64encode(text.encode()).decode()
    claims = None if user is None else {"sub": user, "iss": "https://issuer.example", "aud": "client"}
    return payload_v2_event(
        method=method,
        path=path,
        route_key=f"{method} {route or path}",
        headers=all_headers,
        raw_query=urlencode(query or {}),
        query=query,
        path_parameters=path_parameters,
        body=text,
        is_base64=base64_body,
        claims=claims,
    )


def create_conversation(body: Any = _NO_BODY, **kwargs: Any) -> dict[str, Any]:
    return http_event("POST", "/conversations", body={} if body is _NO_BODY else body, **kwargs)


def post_message(
    body: Any = _NO_BODY, *, idempotency_key: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    headers = dict(kwargs.pop("headers", None) or {})
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    return http_event("POST", "/messages", body=body, headers=headers, **kwargs)


def list_conversations(query: dict[str, str] | None = None, **kwargs: Any) -> dict[str, Any]:
    return http_event("GET", "/conversations", query=query, **kwargs)


def get_conversation(
    conversation_id: str, query: dict[str, str] | None = None, **kwargs: Any
) -> dict[str, Any]:
    return http_event(
        "GET",
        f"/conversations/{conversation_id}",
        route="/conversations/{conversation_id}",
        path_parameters={"conversation_id": conversation_id},
        query=query,
        **kwargs,
    )


def delete_conversation(conversation_id: str, **kwargs: Any) -> dict[str, Any]:
    return http_event(
        "DELETE",
        f"/conversations/{conversation_id}",
        route="/conversations/{conversation_id}",
        path_parameters={"conversation_id": conversation_id},
        **kwargs,
    )


def build_window(conversation_id: str, body: Any = _NO_BODY, **kwargs: Any) -> dict[str, Any]:
    return http_event(
        "POST",
        f"/conversations/{conversation_id}/window",
        route="/conversations/{conversation_id}/window",
        path_parameters={"conversation_id": conversation_id},
        body=body,
        **kwargs,
    )
