"""GET /console and GET /console/{file+}: the web console's static files (CON-1).

The console is three files shipped with this function; it is served by the API's own origin, so every
request it makes goes to the API it came from, and its Content-Security-Policy forbids any other
(`connect-src 'self'`, nothing loaded from elsewhere). No identity is needed to load it: the console
asks for one and sends it with each API call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.observability import entry

STATIC: Final = Path(__file__).resolve().parent / "static"
TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Revalidate each load so a new deployment's console is seen at once.
    "Cache-Control": "no-cache",
}


def _not_found(name: str) -> dict[str, Any]:
    """The API's one error shape (a console file that does not exist)."""
    error = {"error": {"code": "not_found", "message": f"no console file {name!r}"}}
    return _answer(404, json.dumps(error), "application/json")


def _answer(status: int, body: str, content_type: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_type, **SECURITY_HEADERS},
        "body": body,
    }


def serve(path: str) -> dict[str, Any]:
    """The file a console path names: `/console` and `/console/` are the page; other names 404."""
    name = path.removeprefix("/console").lstrip("/") or "index.html"
    file = STATIC / name
    if "/" in name or file.suffix not in TYPES or not file.is_file():
        return _not_found(name)
    return _answer(200, file.read_text(encoding="utf-8"), TYPES[file.suffix])


@entry(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return serve(str(event.get("rawPath") or "/console"))
