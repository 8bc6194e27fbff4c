"""PRV-3: the worker of an import job: the file read and validated whole, then written and published.

See `privacy.imports` for the job's life and why a run that dies goes forward, not back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from chat_core.privacy import chatgpt, import_files
from chat_core.privacy.import_files import ImportFileInvalid, Planned
from chat_core.privacy.imports import KIND, MAX_BYTES, job_sk, now
from chat_core.settings import get_settings
from chat_core.store import blobs, imported, user_jobs
from chat_core.store.keys import conversation_pk, derived_id

#: Seconds kept in hand before the function's limit: one step's writes and the progress write.
_MARGIN_S: Final = 30
#: Items written between two progress records.
_STEP_ITEMS: Final = 500


def plan(owner: str, import_id: str, data: bytes) -> tuple[str, list[Planned]]:
    """(format, conversations) of a file; ImportFileInvalid names what is wrong."""
    kind, parsed = import_files.read_file(data, MAX_BYTES)
    if kind == import_files.CHATGPT:
        return kind, chatgpt.plan(parsed, import_id, get_settings().llm_model)
    return kind, import_files.plan_archive(parsed)


def conversation_ids(import_id: str, planned: Sequence[Planned]) -> list[str]:
    """The ids the job's conversations get: derived from the job, the same on every run."""
    ids = []
    for n, conversation in enumerate(planned):
        created = datetime.fromisoformat(str(conversation.conversation["created_at"]).replace("Z", "+00:00"))
        ids.append(derived_id(max(0, int(created.timestamp() * 1000)), f"{import_id}|{n}"))
    return ids


def run_import(
    owner: str,
    import_id: str,
    *,
    time_left: Callable[[], float] = lambda: float("inf"),
    on_step: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """The worker: validate the whole file, then write and publish, resuming from the recorded step;
    `status` "queued" when `time_left()` ran low (the caller queues it again)."""
    sk = job_sk(import_id)
    job = user_jobs.get_job(owner, sk)
    if job is None or job["status"] in ("done", "failed", "awaiting_upload"):
        return {"status": job["status"] if job else "missing"}
    job["runs"] = int(job.get("runs") or 0) + 1
    try:
        if int(job.get("bytes") or 0) > MAX_BYTES:
            raise import_files.too_large(int(job["bytes"]), MAX_BYTES)
        kind, planned = plan(owner, import_id, blobs.get(job["object_key"]))
    except ImportFileInvalid as exc:
        job |= {"status": "failed", "finished_at": now(), "updated_at": now()}
        job["error"] = {"code": exc.code, "message": exc.message, **exc.details}
        user_jobs.save_job(owner, sk, KIND, job)
        return {"status": "failed", "error": job["error"]}
    ids = conversation_ids(import_id, planned)
    progress = job.get("progress") or {}
    progress |= {"conversations_total": len(planned), "messages_total": import_files.message_count(planned)}
    progress.setdefault("conversations_done", 0)
    progress.setdefault("messages_done", 0)
    progress.setdefault("published", 0)
    job |= {"status": "running", "format": kind, "progress": progress, "updated_at": now()}
    user_jobs.save_job(owner, sk, KIND, job)

    def save(**changes: Any) -> None:
        job.update(changes, updated_at=now())
        user_jobs.save_job(owner, sk, KIND, job)

    batch: list[dict[str, Any]] = []
    for n in range(progress["conversations_done"], len(planned)):
        conversation = planned[n]
        pk = conversation_pk(owner, ids[n])
        batch += [imported.wire_item(pk, s, t, a) for s, t, a in conversation.items]
        progress["messages_done"] += conversation.messages
        progress["conversations_done"] = n + 1
        if len(batch) >= _STEP_ITEMS or n == len(planned) - 1:
            imported.put_items(batch)
            batch = []
            save(progress=progress)
            if on_step is not None:
                on_step("write", n + 1)
            if time_left() < _MARGIN_S and n < len(planned) - 1:
                save(status="queued")
                return {"status": "queued", "progress": dict(progress)}
    for start in range(progress["published"], len(planned), imported.BATCH):
        chunk = range(start, min(start + imported.BATCH, len(planned)))
        imported.put_items(
            [imported.conversation_item(owner, ids[n], planned[n].conversation) for n in chunk]
        )
        progress["published"] = chunk[-1] + 1
        save(progress=progress)
        if on_step is not None:
            on_step("publish", chunk[-1] + 1)
    save(status="done", finished_at=now(), conversation_ids=ids)
    return {"status": "done", "progress": dict(progress)}
