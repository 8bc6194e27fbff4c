"""PRV-1: erase a user: every item and object they own, as a resumable job that leaves a receipt.

The job runs in passes. A pass deletes the idempotency records holding the user's answers, then sweeps
the table (a filtered Scan, page by page, each page's items deleted before the cursor moves on), then
the user's S3 prefixes, then their export and import jobs. Writes the user made meanwhile (a post in
flight, the stream's usage of its reply) are what the next pass finds: after `erasure_settle_seconds`
the job runs a pass again, and it is done only when a whole pass found nothing. Progress is recorded
after every page, so a run that dies resumes where the last one recorded (every delete is idempotent).

What stays is the receipt: who asked, when, when it finished, and counts; no content.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.errors import Forbidden, InvalidInput
from chat_core.settings import get_settings
from chat_core.store import blobs, owner_sweep, user_jobs
from chat_core.store.keys import is_valid_owner

KIND: Final = "erasure"
#: Seconds kept in hand before the function's limit: a page's deletes and the progress write.
_MARGIN_S: Final = 30
_COUNTS: Final = ("items", "objects", "idempotency_records", "jobs", "passes")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def whose(caller: str, user_id: str, admin: bool) -> str:
    """The user a request about `user_id` may act on: the caller themselves, or anyone for an admin."""
    if not is_valid_owner(user_id):
        raise InvalidInput("user_id is not a valid user id", field="user_id")
    if user_id != caller and not admin:
        raise Forbidden(
            "only the user themselves or an administrator (the deployment's ADMIN_GROUP) may do this"
        )
    return user_id


def request_erasure(caller: str, user_id: str, *, admin: bool) -> dict[str, Any]:
    """POST /users/{user_id}/erasure: start the erasure, or answer the one under way (and queue it again,
    which resumes a job whose run died). A finished erasure is started again: whatever the user wrote
    since is erased too, and the receipt is renewed."""
    owner = whose(caller, user_id, admin)
    job = user_jobs.get_job(owner, user_jobs.ERASURE_SK)
    if job is None or job["status"] == "done":
        now = _now()
        fresh = {
            "user_id": owner,
            "requested_by": caller,
            "requested_at": now,
            "updated_at": now,
            "status": "queued",
            "phase": "idempotency",
            "pass_found": 0,
            "cursor": None,
            "counts": dict.fromkeys(_COUNTS, 0),
            "runs": 0,
        }
        user_jobs.put_job(
            owner, user_jobs.ERASURE_SK, KIND, fresh, expected=None if job is None else job["updated_at"]
        )
        job = fresh
    user_jobs.enqueue({"kind": KIND, "owner": owner})
    return receipt(job)


def get_erasure(caller: str, user_id: str, *, admin: bool) -> dict[str, Any]:
    """GET /users/{user_id}/erasure: the job's progress, or its receipt once done."""
    owner = whose(caller, user_id, admin)
    job = user_jobs.get_job(owner, user_jobs.ERASURE_SK)
    if job is None:
        return {"user_id": owner, "status": "none"}
    return receipt(job)


def receipt(job: dict[str, Any]) -> dict[str, Any]:
    """What the API shows of a job: no cursor (it names the user's keys)."""
    shown = ("user_id", "requested_by", "requested_at", "updated_at", "finished_at", "status", "phase")
    return {**{k: job[k] for k in shown if job.get(k) is not None}, "counts": dict(job["counts"])}


def run_erasure(
    owner: str,
    *,
    time_left: Callable[[], float] = lambda: float("inf"),
    on_page: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The worker: run (or resume) the user's erasure until it is done, or must wait (`status`
    "waiting", `delay` seconds: the caller queues it again with that delay), or `time_left()` runs low
    (`status` "queued")."""
    job = user_jobs.get_job(owner, user_jobs.ERASURE_SK)
    if job is None or job["status"] == "done":
        return {"status": "done" if job else "missing"}
    counts = job["counts"]
    job["runs"] = int(job.get("runs") or 0) + 1
    job["status"] = "running"
    pages = 0
    while True:
        phase = job["phase"]
        if phase == "settle":
            delay = int(job.get("settle_until", 0) - time.time())
            if delay > 0:
                _save(owner, job, status="waiting")
                return {"status": "waiting", "delay": min(delay, 900)}
            job["phase"] = "idempotency"
        elif phase == "idempotency":
            found = owner_sweep.delete_keys(owner_sweep.idempotency_keys_of(owner))
            counts["idempotency_records"] += found
            job["pass_found"] += found
            _save(owner, job, phase="table", cursor=None)
        elif phase == "table":
            keys, job["cursor"] = owner_sweep.scan_page(owner, job["cursor"])
            deleted = owner_sweep.delete_keys(keys)
            counts["items"] += deleted
            job["pass_found"] += deleted
            pages += 1
            _save(owner, job, phase="table" if job["cursor"] else "objects")
            if on_page is not None:
                on_page(pages)
            if time_left() < _MARGIN_S:
                _save(owner, job, status="queued")
                return {"status": "queued", "counts": dict(counts)}
        elif phase == "objects":
            found = blobs.delete_owner(owner)
            counts["objects"] += found
            job["pass_found"] += found
            _save(owner, job, phase="jobs")
        elif phase == "jobs":
            others = [sk for sk in user_jobs.job_keys(owner) if sk != user_jobs.ERASURE_SK]
            for sk in others:
                user_jobs.delete_job(owner, sk)
            counts["jobs"] += len(others)
            job["pass_found"] += len(others)
            counts["passes"] += 1
            if job["pass_found"] == 0:
                finished = _now()
                _save(owner, job, status="done", phase="done", finished_at=finished, cursor=None)
                return {"status": "done", "counts": dict(counts)}
            settle = get_settings().erasure_settle_seconds
            _save(owner, job, phase="settle", pass_found=0, settle_until=int(time.time()) + settle)


def _save(owner: str, job: dict[str, Any], **changes: Any) -> None:
    job.update(changes, updated_at=_now())
    user_jobs.save_job(owner, user_jobs.ERASURE_SK, KIND, job)
