"""Opaque pagination cursors: a DynamoDB key, signed for one owner and one listing, useless to anyone else."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping

from chat_core.errors import InvalidCursor
from chat_core.settings import Settings, get_settings

MAX_CURSOR_CHARS = 2048
_SIGNATURE_BYTES = 16


def _secret(settings: Settings) -> bytes:
    # Without CURSOR_SECRET the key is derived from the table name: cursors still carry a checksum and
    # are checked against the caller's own keys (the real isolation); set CURSOR_SECRET in production.
    if settings.cursor_secret:
        return settings.cursor_secret.encode()
    return hashlib.sha256(f"chat-history-cursor:{settings.table_name}".encode()).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(settings: Settings, owner: str, scope: str, payload: str) -> bytes:
    message = json.dumps([owner, scope, payload], separators=(",", ":")).encode()
    return hmac.new(_secret(settings), message, hashlib.sha256).digest()[:_SIGNATURE_BYTES]


def encode_cursor(owner: str, scope: str, key: Mapping[str, str], settings: Settings | None = None) -> str:
    """An opaque cursor for `key` (a page's last key), valid only for `owner` on `scope`."""
    settings = settings or get_settings()
    payload = _b64(json.dumps(dict(key), separators=(",", ":"), sort_keys=True).encode())
    return f"{payload}.{_b64(_signature(settings, owner, scope, payload))}"


def decode_cursor(
    owner: str,
    scope: str,
    cursor: str,
    check: Callable[[Mapping[str, str]], bool],
    settings: Settings | None = None,
) -> dict[str, str]:
    """The key inside `cursor`, or InvalidCursor (400) when it is garbage, tampered, or someone else's.

    `check` must confirm the key lies inside the caller's own partition, so even a forged signature
    could never reach another owner's items.
    """
    settings = settings or get_settings()
    invalid = InvalidCursor("cursor is not valid for this listing; start again without a cursor")
    if not cursor or len(cursor) > MAX_CURSOR_CHARS or cursor.count(".") != 1:
        raise invalid
    payload, signature = cursor.split(".")
    try:
        given = _unb64(signature)
        key = json.loads(_unb64(payload))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise invalid from exc
    if not hmac.compare_digest(given, _signature(settings, owner, scope, payload)):
        raise invalid
    if not isinstance(key, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in key.items()
    ):
        raise invalid
    if not check(key):
        raise invalid
    return key
