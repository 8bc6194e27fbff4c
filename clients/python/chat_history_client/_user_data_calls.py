"""A user's data as a whole as `Call`s: the export (PRV-2), the erasure (PRV-1) and the import (PRV-3),
jobs the client may wait on (`Waiting`: when to ask again, until a deadline), and the archive read back.
No network I/O here (an import's file is read from its path)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from chat_history_client._calls import Call
from chat_history_client.errors import ImportFailed, JobNotDone
from chat_history_client.types import ErasureReceipt, UserExport, UserImport

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


def request_import(user_id: str) -> Call[UserImport]:
    return Call("POST", f"{_user(user_id)}/imports", UserImport.from_api)


def start_import(user_id: str, import_id: str) -> Call[UserImport]:
    return Call("POST", f"{_user(user_id)}/imports/{quote(import_id, safe='')}/start", UserImport.from_api)


def get_import(user_id: str, import_id: str) -> Call[UserImport]:
    return Call("GET", f"{_user(user_id)}/imports/{quote(import_id, safe='')}", UserImport.from_api)


def file_bytes(source: bytes | str | os.PathLike[str]) -> bytes:
    """What an import uploads: the bytes given, or the file at a path (zip, gzip or JSON, as is)."""
    return source if isinstance(source, bytes) else Path(source).read_bytes()


def upload_request(job: UserImport, data: bytes) -> dict[str, Any]:
    """The PUT of the file to the job's presigned URL (its own authority: no API headers)."""
    if not job.upload or not job.upload.get("url"):
        raise ValueError(f"import {job.import_id} is {job.status!r}: no upload URL")
    limit = job.upload.get("max_bytes")
    if isinstance(limit, int) and len(data) > limit:
        raise ValueError(f"the file is {len(data):,} bytes; an import takes at most {limit:,}")
    return {"method": job.upload.get("method", "PUT"), "url": job.upload["url"], "content": data}


def finished_import(job: UserImport) -> UserImport:
    """A finished import, or ImportFailed with the service's words on the file."""
    if job.status == "failed":
        error = job.error or {}
        where = f" at {error['path']}" if error.get("path") else ""
        reason = error.get("message", "no reason given")
        raise ImportFailed(f"import {job.import_id} failed{where}: {reason}", job)
    return job


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
