"""The answers of a user's data routes (PRV-1..3): an erasure's progress and receipt, an export job, an
import job."""

from __future__ import annotations

from typing import Literal

from chat_core.http.answers import AnswerModel


class ErasureCountsOut(AnswerModel):
    """What the erasure removed so far: table items, S3 objects, idempotency records, the user's own job
    items, and the passes over the table (it ends after a pass that finds nothing)."""

    items: int = 0
    objects: int = 0
    idempotency_records: int = 0
    jobs: int = 0
    passes: int = 0


class ErasureOut(AnswerModel):
    """PRV-1: the user's erasure. `status` `none` before any was asked (then only `user_id`); once `done`,
    the receipt: who asked, when, counts, no content."""

    user_id: str
    status: Literal["none", "queued", "running", "waiting", "done"]
    requested_by: str | None = None
    requested_at: str | None = None
    updated_at: str | None = None
    finished_at: str | None = None
    phase: str | None = None
    counts: ErasureCountsOut | None = None


class ExportCountsOut(AnswerModel):
    conversations: int
    messages: int


class ExportOut(AnswerModel):
    """PRV-2: an export job; once `done`, `url` is a presigned GET of the archive for `expires_in` seconds
    (a fresh one on every read)."""

    export_id: str
    user_id: str
    status: Literal["queued", "running", "done", "failed"]
    requested_by: str
    requested_at: str
    updated_at: str
    finished_at: str | None = None
    bytes: int | None = None
    counts: ExportCountsOut | None = None
    url: str | None = None
    expires_in: int | None = None


class UserImportUploadOut(AnswerModel):
    """Where to PUT the file: `url` presigned for `expires_in` seconds; send the file as the body (raw,
    gzip or zip), no other header needed; at most `max_bytes` of JSON once decompressed."""

    url: str
    method: Literal["PUT"]
    expires_in: int
    max_bytes: int


class UserImportProgressOut(AnswerModel):
    """How far the worker is: conversations and messages written (not yet visible) out of the file's,
    and conversations published (visible)."""

    conversations_done: int
    conversations_total: int
    messages_done: int
    messages_total: int
    published: int


class UserImportErrorOut(AnswerModel):
    """Why the file was refused: `path` a JSON pointer into the file ("" for the file itself), `errors`
    the first ten problems, each with its pointer."""

    code: str
    message: str
    path: str | None = None
    errors: list[dict[str, str]] | None = None


class UserImportOut(AnswerModel):
    """PRV-3: an import job: `awaiting_upload` (PUT the file to `upload.url`, then start it), `queued`,
    `running`, `done` (with the ids of the conversations made) or `failed` (with `error`; nothing of the
    file was imported)."""

    import_id: str
    user_id: str
    status: Literal["awaiting_upload", "queued", "running", "done", "failed"]
    requested_by: str
    requested_at: str
    updated_at: str
    finished_at: str | None = None
    format: Literal["chat-history.user-export", "chatgpt"] | None = None
    bytes: int | None = None
    progress: UserImportProgressOut | None = None
    conversation_ids: list[str] | None = None
    error: UserImportErrorOut | None = None
    upload: UserImportUploadOut | None = None
