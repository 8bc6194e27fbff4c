"""PRV-2: export a user's data whole: one gzip JSON archive in S3, written by a job, fetched by URL.

The archive (format `chat-history.user-export`, version 1, described by `docs/schemas/user-export.v1.json`)
holds every live conversation with all its items: the conversation, every message on every branch (with
its seq, parent, tokens, usage and cost), branch links and the summary; then the user's facts, memory
items, usage days and budget, and each world as the lines of its world export (DLG-6). Derived items
(the recall index and vectors, turn-log events, rate windows) are left out: they are rebuilt from the
messages and hold nothing the user wrote that the messages do not.
"""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.dialogue import transfer
from chat_core.errors import NotFound
from chat_core.privacy.erasure import whose
from chat_core.settings import get_settings
from chat_core.store import blobs, directory, owner_reads, user_jobs
from chat_core.store.keys import conversation_pk

KIND: Final = "export"
FORMAT: Final = "chat-history.user-export"
VERSION: Final = 1
_CONVERSATION_PARTS: Final = (("~META", "conversation"), ("~SUMMARY", "summary"))
_WORLD_PAGE: Final = 100


class ExportNotFound(NotFound):
    code = "export_not_found"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def request_export(caller: str, user_id: str, *, admin: bool) -> dict[str, Any]:
    """POST /users/{user_id}/exports: a new export job, queued."""
    owner = whose(caller, user_id, admin)
    export_id = uuid.uuid4().hex
    now = _now()
    job = {"export_id": export_id, "user_id": owner, "requested_by": caller, "requested_at": now}
    job |= {"updated_at": now, "status": "queued"}
    user_jobs.put_job(owner, f"EXPORT#{export_id}", KIND, job)
    user_jobs.enqueue({"kind": KIND, "owner": owner, "job_id": export_id})
    return job


def get_export(caller: str, user_id: str, export_id: str, *, admin: bool) -> dict[str, Any]:
    """GET /users/{user_id}/exports/{export_id}: the job; once done, a fresh presigned URL."""
    owner = whose(caller, user_id, admin)
    job = user_jobs.get_job(owner, f"EXPORT#{export_id}")
    if job is None:
        raise ExportNotFound(f"no export {export_id!r}", export_id=export_id)
    key = job.pop("object_key", None)
    if job["status"] == "done" and key:
        job["url"] = blobs.presign(key)
        job["expires_in"] = get_settings().blob_url_seconds
    return job


def build_archive(owner: str) -> dict[str, Any]:
    """The user's data as the archive's one JSON document (Queries only)."""
    conversations = []
    for conversation_id in owner_reads.conversation_ids(owner):
        entry: dict[str, Any] = {"conversation_id": conversation_id, "messages": [], "links": []}
        for sk, item in owner_reads.partition(conversation_pk(owner, conversation_id)):
            if sk.startswith("MSG#"):
                entry["messages"].append({"seq": int(sk[4:]), **item})
            elif sk.startswith("LINK#"):
                entry["links"].append(item | {"sk": sk})
            for known, name in _CONVERSATION_PARTS:
                if sk == known:
                    entry[name] = item
        conversations.append(entry)
    usage, budget = [], None
    for sk, item in owner_reads.partition(owner_reads.usage_pk(owner)):
        if sk == "~LIMITS":
            budget = item
        else:
            usage.append({"key": sk, **item})
    return {
        "format": FORMAT,
        "version": VERSION,
        "user_id": owner,
        "exported_at": _now(),
        "conversations": conversations,
        "facts": [
            item for sk, item in owner_reads.partition(owner_reads.facts_pk(owner)) if sk.startswith("FACT#")
        ],
        "memory_items": [item for _, item in owner_reads.partition(owner_reads.memory_pk(owner))],
        "usage": usage,
        "budget": budget,
        "worlds": [list(transfer.export_world(owner, world_id)) for world_id in _world_ids(owner)],
    }


def _world_ids(owner: str) -> list[str]:
    ids: list[str] = []
    after: str | None = None
    while True:
        page, after = directory.page_worlds(owner, _WORLD_PAGE, after)
        ids += [row["world_id"] for row in page]
        if after is None:
            return ids


def run_export(
    owner: str, export_id: str, *, time_left: Callable[[], float] = lambda: float("inf")
) -> dict[str, Any]:
    """The worker: build the archive and put it in S3 (a run again after a crash writes it again)."""
    sk = f"EXPORT#{export_id}"
    job = user_jobs.get_job(owner, sk)
    if job is None or job["status"] == "done":
        return {"status": "done" if job else "missing"}
    archive = build_archive(owner)
    data = gzip.compress(json.dumps(archive, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0)
    key = f"{blobs.user_prefix(owner)}exports/{export_id}.json.gz"
    blobs.put(key, data, "application/json")
    messages = sum(len(c["messages"]) for c in archive["conversations"])
    job |= {
        "status": "done",
        "object_key": key,
        "bytes": len(data),
        "finished_at": _now(),
        "updated_at": _now(),
    }
    job["counts"] = {"conversations": len(archive["conversations"]), "messages": messages}
    user_jobs.save_job(owner, sk, KIND, job)
    return {"status": "done", "counts": job["counts"]}
