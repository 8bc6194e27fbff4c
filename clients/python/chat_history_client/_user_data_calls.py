"""A user's data as a whole as `Call`s: the export (PRV-2) and the erasure (PRV-1), both jobs the client
may wait on (`Waiting`: when to ask again, until a deadline), and the archive read back. No I/O here."""

from __future__ import annotations

import base64
import gzip
import json
import time
from typing import Any
from urllib.parse import quote

from chat_history_client._calls import Call
from chat_history_client.errors import JobNotDone
from chat_history_client.types import ErasureReceipt, UserExport

#: First pause between two reads of a job's state, seconds; each pause is longer, up to MAX_POLL.
FIRST_POLL = 0.2
MAX_POLL = 2.0


def _user(user_id: str) -> str:
    return f"/users/{quote(user_id, safe='')}"


def request_export(user_id: str) -> Call[UserExport]:
    return Call("POST", f"{_user(user_id)}/exports", UserExport.from_api)


def get_export(user_id: str, export_id: str) -> Call[UserExport]:
    return Call("GET", f"{_user(user_id)}/exports/{quote(export_id, safe='')}", UserExport.from_api)


def request_erasure(user_id: str) -> Call[ErasureReceipt]:
    return Call("POST", f"{_user(user_id)}/erasure", ErasureReceipt.from_api)


def get_erasure(user_id: str) -> Call[ErasureReceipt]:
    return Call("GET", f"{_user(user_id)}/erasure", ErasureReceipt.from_api)


def subject(headers: dict[str, str]) -> str | None:
    """The caller's user id: X-User-Id (dev mode), else the JWT's `sub` (read, not verified: the service
    verifies it and answers 403 for anyone else's data)."""
    if "X-User-Id" in headers:
        return headers["X-User-Id"]
    token = headers.get("Authorization", "").removeprefix("Bearer ")
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) else None


def whose(user_id: str | None, headers: dict[str, str]) -> str:
    found = user_id or subject(headers)
    if not found:
        raise ValueError("pass user_id=: the client's identity names no user")
    return found


def check_confirmation(user_id: str, confirm: str | None) -> None:
    """An erasure cannot be undone: the caller types the user id again, as the console asks."""
    if confirm != user_id:
        raise ValueError(f"erasing {user_id!r} needs confirm={user_id!r} (the user id typed again)")


class Waiting:
    """Reads of a job's state until it is done: the pause before the next one, or JobNotDone at the
    deadline."""

    def __init__(self, timeout: float, what: str) -> None:
        self.deadline = time.monotonic() + timeout
        self.what = what
        self.pause = FIRST_POLL

    def next_pause(self, job: Any) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise JobNotDone(
                f"{self.what} was not done in time (status {job.status!r}); ask again later", job
            )
        pause, self.pause = min(self.pause, left), min(self.pause * 1.5, MAX_POLL)
        return pause


def read_archive(data: bytes) -> dict[str, Any]:
    """The export archive (gzip JSON, format `chat-history.user-export`) as a dict."""
    archive = json.loads(gzip.decompress(data))
    if not isinstance(archive, dict) or archive.get("format") != "chat-history.user-export":
        raise ValueError("not a chat-history.user-export archive")
    if archive.get("version") != 1:
        raise ValueError(f"archive version {archive.get('version')!r} is not one this client reads (1)")
    return archive
