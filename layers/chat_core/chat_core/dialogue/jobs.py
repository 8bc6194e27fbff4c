"""Worlds of any size (DLG-6): export to S3 and import from S3 as a restartable job, no 6 MB ceiling.

Export: the world's JSON Lines (the same lines as `GET …/export`), gzip-compressed into the blob bucket,
answered with a presigned GET URL. Import: `create_import` makes a job and a presigned PUT URL; the
client uploads JSON Lines (plain or gzip: the first bytes decide); `start_import` checks the upload and
queues the job; the worker (`run_import`) streams the file line by line and writes as it goes:

- a `dialogue` line writes the dialogue item with its directory item and counts, on condition it is new
  (so a second run counts nothing twice); its `entry` lines are written in batches of `BATCH` by key,
  exactly as exported (a second run writes the same items again: never a second copy);
- after each batch the job records how many lines are done; a run that stops (crash, timeout, a
  redelivered message) starts again from there, or from the top, with the same result;
- a line that is not valid is recorded with its number and message, and the import goes on;
- at the end the header's counts are checked against the file (a truncated upload fails the job).

Only `restore` (into an empty world) runs as a job; merging stays with the direct route.
"""

from __future__ import annotations

import gzip
import io
import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import IO, Any, Final

from chat_core.dialogue import transfer
from chat_core.dialogue.worlds import live
from chat_core.errors import Conflict, InvalidInput, NotFound, WorldNotEmpty
from chat_core.settings import get_settings
from chat_core.store import blobs, import_jobs, world_io
from chat_core.store.dialogues import DialogueRecord, EntryRecord, validate_world_id

BATCH: Final = 500  # entry lines written (and progress recorded) at a time
MAX_ERRORS_KEPT: Final = 100
UPLOAD_SECONDS: Final = 3600
_GZIP_MAGIC: Final = b"\x1f\x8b"


class ImportNotFound(NotFound):
    code = "import_not_found"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _job_id(job_id: object) -> str:
    if not isinstance(job_id, str) or len(job_id) != 32 or not all(c in "0123456789abcdef" for c in job_id):
        raise InvalidInput("job_id is not a valid import job id", field="job_id")
    return job_id


# -------------------------------------------------------------------------------------------- export


def export_to_s3(owner: str, world_id: str) -> dict[str, Any]:
    """POST /worlds/{world_id}/exports: the world's export, gzip JSON Lines in S3, and a GET URL."""
    world_id = validate_world_id(world_id)
    export_id = uuid.uuid4().hex
    key = f"{blobs.world_prefix(owner, world_id)}exports/{export_id}.jsonl.gz"
    buffer = io.BytesIO()
    header: Mapping[str, Any] = {}
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as packed:
        for line in transfer.export_world(owner, world_id):
            if line.get("type") == "world":
                header = line
            packed.write((json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
    data = buffer.getvalue()
    blobs.put(key, data, "application/x-ndjson")
    url = blobs.presign(key)
    return {
        "world_id": world_id,
        "export_id": export_id,
        "url": url,
        "expires_in": get_settings().blob_url_seconds,
        "content_encoding": "gzip",
        "bytes": len(data),
        "dialogues": header.get("dialogues", 0),
        "entries": header.get("entries", 0),
    }


# -------------------------------------------------------------------------------------------- import


def create_import(owner: str, world_id: str, mode: str = "restore") -> dict[str, Any]:
    """POST /worlds/{world_id}/imports: a job waiting for its file, and the URL to PUT the file to."""
    world_id = validate_world_id(world_id)
    if mode != "restore":
        raise InvalidInput("an import job restores into an empty world: mode must be 'restore'", field="mode")
    live(owner, world_id, writing=True)
    _require_empty(owner, world_id)
    job_id = uuid.uuid4().hex
    key = f"{blobs.world_prefix(owner, world_id)}imports/{job_id}.jsonl"
    now = _now()
    import_jobs.new_job(
        owner,
        world_id,
        {"job_id": job_id, "mode": mode, "status": "awaiting_upload", "object_key": key, "created_at": now},
    )
    url = blobs.presign_put(key, UPLOAD_SECONDS)
    return {**get_import(owner, world_id, job_id), "upload_url": url, "upload_expires_in": UPLOAD_SECONDS}


def _require_empty(owner: str, world_id: str) -> None:
    if not world_io.world_is_empty(owner, world_id):
        raise WorldNotEmpty(
            f"world {world_id!r} already holds dialogues; an import job restores into an empty world",
            world_id=world_id,
        )


def get_import(owner: str, world_id: str, job_id: str) -> dict[str, Any]:
    """GET /worlds/{world_id}/imports/{job_id}: status, progress, and errors by line."""
    world_id = validate_world_id(world_id)
    job_id = _job_id(job_id)
    live(owner, world_id)
    job = import_jobs.get_job(owner, world_id, job_id)
    if job is None:
        raise ImportNotFound(f"no import {job_id!r} in world {world_id!r}", job_id=job_id)
    job.pop("object_key", None)
    return {"world_id": world_id, **job}


def start_import(owner: str, world_id: str, job_id: str) -> dict[str, Any]:
    """POST /worlds/{world_id}/imports/{job_id}/start: queue the job (after the upload), or queue it
    again to finish an import that stopped; a finished job is not run twice."""
    world_id = validate_world_id(world_id)
    job_id = _job_id(job_id)
    live(owner, world_id, writing=True)
    job = import_jobs.get_job(owner, world_id, job_id)
    if job is None:
        raise ImportNotFound(f"no import {job_id!r} in world {world_id!r}", job_id=job_id)
    if job["status"] == "done":
        raise Conflict(f"import {job_id} is done; start a new one to import again", job_id=job_id)
    size = blobs.size(job["object_key"])
    if size is None:
        raise Conflict(f"import {job_id} has no file yet: PUT it to the upload URL first", job_id=job_id)
    if job["status"] == "awaiting_upload":
        _require_empty(owner, world_id)
    # A failed job reads its file again from the top (a new upload may have fixed it); what the first
    # run wrote is written again as the same items. A job that stopped part way resumes where it was.
    restart = {"lines_done": 0, "errors": None, "error_count": 0} if job["status"] == "failed" else {}
    import_jobs.update_job(
        owner, world_id, job_id, status="queued", bytes_total=size, updated_at=_now(), **restart
    )
    import_jobs.enqueue({"owner": owner, "world_id": world_id, "job_id": job_id})
    return get_import(owner, world_id, job_id)


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Numbered raw lines of a (possibly gzip) upload, read in pieces."""
    head = stream.read(2)
    plain = io.BufferedReader(_Prefixed(head, stream), buffer_size=1 << 20)
    source: Any = gzip.GzipFile(fileobj=plain, mode="rb") if head == _GZIP_MAGIC else plain
    yield from enumerate(source, start=1)


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (to tell gzip from plain text)."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _Run:
    """One run of a job: what it has read, and what is waiting to be written."""

    def __init__(self, owner: str, world_id: str, job: dict[str, Any]) -> None:
        self.owner, self.world_id, self.job = owner, world_id, job
        self.header: Mapping[str, Any] | None = None
        self.dialogues: dict[str, DialogueRecord] = {}
        self.pending: dict[str, list[EntryRecord]] = {}
        self.counts = {"dialogues": 0, "entries": 0}
        self.errors: list[dict[str, Any]] = list(job.get("errors") or [])
        self.error_count = int(job.get("error_count") or 0)

    def fail_line(self, number: int, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append({"line": number, "message": message})

    def read(self, number: int, raw: bytes, replaying: bool) -> None:
        """One line. `replaying`: a line a stopped run already wrote (only dialogues are remembered)."""
        if not raw.strip():
            return
        try:
            line = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if not replaying:
                self.fail_line(number, f"not valid JSON: {exc}")
            return
        try:
            if self.header is None:
                self.header = transfer.parse_header(number, line)
            elif isinstance(line, Mapping) and line.get("type") == "dialogue":
                record = transfer.parse_dialogue_line(number, line)
                self.dialogues[record.dialogue_id] = record
                self.counts["dialogues"] += 1
                if not replaying:
                    self.flush()  # its entries first, then the next dialogue
                    world_io.put_dialogue(self.owner, self.world_id, record)
            elif isinstance(line, Mapping) and line.get("type") == "entry":
                entry = transfer.parse_entry_line(number, line, self.dialogues)
                self.counts["entries"] += 1
                if not replaying:
                    self.pending.setdefault(entry.dialogue_id, []).append(entry)
            else:
                raise InvalidInput(f"line {number}: expected a 'dialogue' or 'entry' line", line=number)
        except InvalidInput as exc:
            if not replaying:
                self.fail_line(number, exc.message)

    def waiting(self) -> int:
        return sum(len(v) for v in self.pending.values())

    def flush(self) -> None:
        for dialogue_id, entries in self.pending.items():
            world_io.put_entries(self.owner, self.world_id, self.dialogues[dialogue_id], entries)
        self.pending = {}


def run_import(
    owner: str,
    world_id: str,
    job_id: str,
    *,
    time_left: Callable[[], float] = lambda: float("inf"),
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The worker: run (or resume) a job until it is done, fails, or `time_left()` (seconds) runs low;
    then the answer's `status` is "queued" and the caller queues it again."""
    job = import_jobs.get_job(owner, world_id, job_id)
    if job is None or job["status"] == "done":
        return {"job_id": job_id, "status": "done" if job else "missing"}
    run = _Run(owner, world_id, job)
    done_before = int(job.get("lines_done") or 0)
    runs = int(job.get("runs") or 0) + 1
    import_jobs.update_job(owner, world_id, job_id, status="running", runs=runs, updated_at=_now())
    last = 0
    try:
        for number, raw in _lines(blobs.open_object(job["object_key"])):
            last = number
            run.read(number, raw, replaying=number <= done_before)
            if run.waiting() >= BATCH:
                run.flush()
                _progress(run, job_id, number)
                if on_batch is not None:
                    on_batch(number)
                if time_left() < 30:
                    import_jobs.update_job(owner, world_id, job_id, status="queued", updated_at=_now())
                    return {"job_id": job_id, "status": "queued", "lines_done": number}
        run.flush()
    except (OSError, EOFError) as exc:  # a damaged gzip stream
        run.fail_line(last + 1, f"the file could not be read: {exc}")
    status, finished = _verdict(run), _now()
    _progress(run, job_id, last)
    import_jobs.update_job(owner, world_id, job_id, status=status, finished_at=finished, updated_at=finished)
    return {"job_id": job_id, "status": status, "lines_done": last}


def _progress(run: _Run, job_id: str, lines_done: int) -> None:
    import_jobs.update_job(
        run.owner,
        run.world_id,
        job_id,
        lines_done=lines_done,
        dialogues=run.counts["dialogues"],
        entries=run.counts["entries"],
        errors=run.errors or None,
        error_count=run.error_count,
        updated_at=_now(),
    )


def _verdict(run: _Run) -> str:
    """done, or failed: no header, a count the header announced that the file does not hold, errors."""
    if run.header is None:
        run.fail_line(1, "the file is empty; expected a world header line")
    elif (run.header.get("dialogues"), run.header.get("entries")) != (
        run.counts["dialogues"],
        run.counts["entries"],
    ):
        run.fail_line(
            0,
            f"the header announces {run.header.get('dialogues')} dialogues and {run.header.get('entries')} "
            f"entries but the file holds {run.counts['dialogues']} and {run.counts['entries']}; is it "
            "truncated?",
        )
    return "failed" if run.error_count else "done"


def queue_again(owner: str, world_id: str, job_id: str) -> None:
    """A run that stopped for time goes back on the queue."""
    import_jobs.enqueue({"owner": owner, "world_id": world_id, "job_id": job_id})
