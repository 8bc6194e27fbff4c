"""Size limits of the HTTP API: request bodies (checked before parsing) and stored model replies."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from chat_core.errors import PayloadTooLarge
from chat_core.settings import Settings, get_settings

#: API-6: the longest Idempotency-Key a request may send.
MAX_IDEMPOTENCY_KEY_CHARS: Final = 255

#: Lambda's own limit on a synchronous invocation's payload: the most a bulk route can ever receive.
LAMBDA_PAYLOAD_BYTES: Final = 6 * 1024 * 1024

#: Routes whose bodies are batches by design (up to 100 dialogue entries of 5000 characters, a world
#: export): they keep Lambda's limit and check their own entry counts. Every other route, including
#: routes added later, gets `Settings.max_request_body_bytes` (256 KiB by default), which is above the
#: largest valid body of the conversation routes (a 20,000-character system prompt JSON-escaped at
#: 12 bytes per character is 240,000 bytes).
BULK_ROUTES: Final = frozenset(
    {
        "POST /worlds/{world_id}/dialogues/entries",
        "POST /worlds/{world_id}/import",
        "POST /worlds/{world_id}/prompt",
        # A stateless Chat Completions client resends the whole history every turn (API-13).
        "POST /v1/chat/completions",
    }
)
#: POST /messages may carry an agent's recorded tool messages (192 KiB of UTF-8 by their own cap), which
#: a client's JSON encoder may escape to twice that: 1 MiB keeps every valid post under the limit.
MESSAGE_ROUTE: Final = "POST /messages"
MESSAGE_BODY_BYTES: Final = 1024 * 1024


def body_limit(route_key: str | None, settings: Settings | None = None) -> int:
    """The most bytes a request body may have on this route (`routeKey` of the API Gateway event)."""
    if route_key in BULK_ROUTES:
        return LAMBDA_PAYLOAD_BYTES
    settings = settings or get_settings()
    limit = settings.max_request_body_bytes
    if route_key == MESSAGE_ROUTE:
        # API-17: with a blob bucket a post may carry images and files up to Lambda's own limit.
        return LAMBDA_PAYLOAD_BYTES if settings.blob_bucket else max(limit, MESSAGE_BODY_BYTES)
    return limit


def body_bytes(event: Mapping[str, Any]) -> int:
    """The size of the event's body as the client sent it (base64 bodies are measured decoded)."""
    body = event.get("body")
    if not isinstance(body, str) or not body:
        return 0
    if event.get("isBase64Encoded"):
        try:
            return len(base64.b64decode(body, validate=False))
        except (binascii.Error, ValueError):
            return len(body)
    return len(body.encode("utf-8", "surrogatepass"))


def check_body_size(event: Mapping[str, Any], settings: Settings | None = None) -> None:
    """PayloadTooLarge (413) when the body is over the route's limit; nothing is parsed before this."""
    route_key = event.get("routeKey") if isinstance(event.get("routeKey"), str) else None
    limit = body_limit(route_key, settings)
    size = body_bytes(event)
    if size > limit:
        raise PayloadTooLarge(
            f"request body has {size} bytes; the limit on this route is {limit}", size=size, limit=limit
        )


def unreadable_content_type(event: Mapping[str, Any]) -> str | None:
    """The Content-Type of a body that cannot even be split into fields: multipart/form-data without the
    boundary its parts are separated by. None when the type is readable (or wrong in a way validation
    names, as JSON expected)."""
    headers = event.get("headers")
    if not isinstance(headers, Mapping):
        return None
    value = next((str(v) for k, v in headers.items() if str(k).lower() == "content-type"), "")
    kind, _, params = value.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return None
    named = {p.partition("=")[0].strip().lower(): p.partition("=")[2].strip() for p in params.split(";")}
    return None if named.get("boundary", "").strip('"') else value
