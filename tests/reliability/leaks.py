"""What an answer must never show a client: stack traces, library and exception names, table names."""

from __future__ import annotations

import re

INTERNAL = re.compile(
    r"Traceback|File \"|botocore|boto3|pynamodb|PynamoDB|moto\b|werkzeug|"
    r"\b[A-Z][A-Za-z]+(?:Error|Exception)\b|chat-history-|\.py\b|site-packages"
)


def internal_text(body: str) -> str | None:
    """The first internal detail found in `body`, or None."""
    found = INTERNAL.search(body)
    return found.group(0) if found else None


def assert_clean(status: int, body: str, context: str = "") -> None:
    """Error answers (4xx/5xx) carry the error shape's message only, nothing internal."""
    if status < 400:
        return
    leaked = internal_text(body)
    assert leaked is None, f"{context}: answer {status} shows internal text {leaked!r}: {body[:500]}"
