"""The answers of a user's data routes (PRV-1, PRV-2): an erasure's progress and receipt, an export job."""

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
