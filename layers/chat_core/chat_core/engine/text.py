"""Text that can be stored: JSON may escape an unpaired surrogate ("\\ud800"), which no UTF-8 store accepts.

DynamoDB (through botocore) refuses such strings at write time, long after validation, so requests
are checked at the edge before any I/O (`invalid_text_field`), and text the service did not receive
from a caller (a model's reply) is repaired instead (`repaired`): a reply is never lost over it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

# A JSON escape of a surrogate half; only bodies that contain one are decoded to be checked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def is_valid(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (no unpaired surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def repaired(text: str) -> str:
    """`text` with every unpaired surrogate replaced by U+FFFD (valid text is returned unchanged)."""
    if is_valid(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def repaired_value(value: Any) -> Any:
    """`repaired` applied to every string (keys too) inside a JSON-like value."""
    if isinstance(value, str):
        return repaired(value)
    if isinstance(value, Mapping):
        return {repaired_value(k): repaired_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [repaired_value(v) for v in value]
    return value


def first_invalid(value: Any, path: str = "") -> str | None:
    """The path (`messages[0].content`) of the first string, key or value, that is not valid text."""
    if isinstance(value, str):
        return None if is_valid(value) else (path or "value")
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and not is_valid(key):
                return path or "body"
            found = first_invalid(item, where)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = first_invalid(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def invalid_text_field(event: Mapping[str, Any]) -> str | None:
    """Where an API Gateway HTTP event carries text that is not valid Unicode: the JSON body's field,
    a path or query parameter, or a header; None when everything can be stored."""
    for name in ("pathParameters", "queryStringParameters", "headers"):
        part = event.get(name)
        if isinstance(part, Mapping):
            found = first_invalid(dict(part))
            if found is not None:
                return f"{name[:-1] if name.endswith('s') else name} {found}"
    for name in ("rawPath", "rawQueryString"):
        raw = event.get(name)
        if isinstance(raw, str) and not is_valid(raw):
            return name
    body = event.get("body")
    if not isinstance(body, str) or event.get("isBase64Encoded"):
        return None
    raw_valid = is_valid(body)
    if raw_valid and not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        decoded = json.loads(body)
    except ValueError:
        return None if raw_valid else "body"  # not JSON: the resolver answers that
    return first_invalid(decoded) or (None if raw_valid else "body")


def utf8_bytes(text: str | None) -> int:
    """Bytes of `text` as DynamoDB stores a string (UTF-8)."""
    return len(text.encode("utf-8", "surrogatepass")) if text else 0
