"""PRV-3: import a user's conversations from a file: our export archive, or ChatGPT's conversations.json.

`request_import` makes a job and a presigned PUT URL; the client uploads the file and calls
`start_import`, which queues the job on the user-data queue; the worker (`run_import`) reads the file
whole, validates it whole (nothing is written for a file with any error: the job fails naming where and
what), then writes in two phases, recording its progress after each step:

1. `write`: each conversation's messages, branch links and summary (BatchWriteItem puts). No route reads
   these yet: every read and the listing start from the conversation item, which does not exist.
2. `publish`: the conversation items (25 a call), which make the conversations readable and listed.

Every key is decided by the job (conversation and message ids derived from the job id), so a run that
dies and is delivered again rewrites the same items and goes on from its recorded step: one copy of
each conversation, never half of one. Why forward and not back: the file was valid, so only the
infrastructure can stop a run, and SQS delivering the message again is exactly what finishes it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.errors import Conflict, NotFound
from chat_core.privacy.erasure import whose
from chat_core.store import blobs, user_jobs

KIND: Final = "import"
#: The largest file an import reads, after decompression (the worker holds it whole: 1 GB of memory).
MAX_BYTES: Final = 64 * 1024 * 1024
#: How long the upload URL is valid (seconds).
UPLOAD_SECONDS: Final = 3600
_SHOWN: Final = (
    "import_id",
    "user_id",
    "status",
    "format",
    "requested_by",
    "requested_at",
    "updated_at",
    "finished_at",
    "bytes",
    "progress",
    "conversation_ids",
    "error",
)


class ImportNotFound(NotFound):
    code = "import_not_found"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def job_sk(import_id: str) -> str:
    return f"IMPORT#{import_id}"


def _shown(job: dict[str, Any]) -> dict[str, Any]:
    return {k: job[k] for k in _SHOWN if job.get(k) is not None}


def request_import(caller: str, user_id: str, *, admin: bool) -> dict[str, Any]:
    """POST /users/{user_id}/imports: a job waiting for its file, and where to PUT it."""
    owner = whose(caller, user_id, admin)
    import_id = uuid.uuid4().hex
    at = now()
    key = f"{blobs.user_prefix(owner)}imports/{import_id}"
    job = {
        "import_id": import_id,
        "user_id": owner,
        "requested_by": caller,
        "requested_at": at,
        "updated_at": at,
        "status": "awaiting_upload",
        "object_key": key,
    }
    user_jobs.put_job(owner, job_sk(import_id), KIND, job)
    url = blobs.presign_put(key, UPLOAD_SECONDS)
    upload = {"url": url, "method": "PUT", "expires_in": UPLOAD_SECONDS, "max_bytes": MAX_BYTES}
    return {**_shown(job), "upload": upload}


def _job(owner: str, import_id: str) -> dict[str, Any]:
    job = user_jobs.get_job(owner, job_sk(import_id))
    if job is None:
        raise ImportNotFound(f"no import {import_id!r}", import_id=import_id)
    return job


def get_import(caller: str, user_id: str, import_id: str, *, admin: bool) -> dict[str, Any]:
    """GET /users/{user_id}/imports/{import_id}: status, progress, the conversations made, or the error."""
    return _shown(_job(whose(caller, user_id, admin), import_id))


def start_import(caller: str, user_id: str, import_id: str, *, admin: bool) -> dict[str, Any]:
    """POST /users/{user_id}/imports/{import_id}/start: queue the job once its file is there; again, to
    resume one that stopped. A finished (done or failed) job is not run again: start a new one."""
    owner = whose(caller, user_id, admin)
    job = _job(owner, import_id)
    if job["status"] in ("done", "failed"):
        raise Conflict(
            f"import {import_id} is {job['status']}; start a new one to import again", import_id=import_id
        )
    size = blobs.size(job["object_key"])
    if size is None:
        raise Conflict(
            f"import {import_id} has no file yet: PUT it to the upload URL first", import_id=import_id
        )
    if job["status"] == "awaiting_upload":
        job |= {"status": "queued", "bytes": size, "updated_at": now()}
        user_jobs.save_job(owner, job_sk(import_id), KIND, job)
    user_jobs.enqueue({"kind": KIND, "owner": owner, "job_id": import_id})
    return _shown(job)
