"""What the dialogue routes answer (seed 004, DLG-1..6), as pydantic models named as in the document."""

from typing import Any, Literal

from pydantic import Field

from chat_core.http.answers import AnswerModel


class EntryOut(AnswerModel):
    """A dialogue line (seed 004 DialogueEntry) as stored."""

    dialogue_id: str
    entry_id: str
    participant_id: str
    role: str
    content: str
    game_tick: int
    seq: int
    created_at: str
    name: str | None = None
    #: DLG-3: who perceived it, present only when that was not every participant of its dialogue.
    audience: list[str] | None = None
    visibility: Literal["public", "private", "whisper"] | None = None
    kind: Literal["join", "leave"] | None = None


class AddEntriesOut(AnswerModel):
    """201 when anything was stored, 200 when every entry_id was stored before (a replay)."""

    world_id: str
    dialogue_id: str
    entries: list[EntryOut]
    created: int
    duplicates: int


class HistoryEntryOut(EntryOut):
    #: DLG-2: the entry's tick on the default calendar as a prompt line shows it, e.g.
    #: "[Time: 5500 Aprimay 2, 1h]".
    game_time: str


class HistoryOut(AnswerModel):
    """Seed 004 HistoricalContext: `primary` (exactly these participants) and `ancillary`; with `for`
    only what that participant perceived (DLG-3). Asked with `for` alone: `witnessed`, everything it
    perceived in any dialogue, instead of the five dialogue fields."""

    world_id: str
    limit: int
    for_: str | None = Field(alias="for")
    participants: list[str] | None = None
    dialogue_id: str | None = None
    primary: list[HistoryEntryOut] | None = None
    ancillary: list[HistoryEntryOut] | None = None
    ancillary_dialogues: list[str] | None = None
    witnessed: list[HistoryEntryOut] | None = None


class WorldOut(AnswerModel):
    world_id: str
    dialogues: int
    created_at: str


class WorldsOut(AnswerModel):
    """DLG-2: GET /worlds: the caller's worlds by id; `next_cursor` is the last id when more remain."""

    items: list[WorldOut]
    next_cursor: str | None


class DialogueOut(AnswerModel):
    dialogue_id: str
    participants: list[str]
    created_at: str


class DialoguesOut(AnswerModel):
    """DLG-2: GET /worlds/{world_id}/dialogues: the world's dialogues by id."""

    world_id: str
    items: list[DialogueOut]
    next_cursor: str | None


class PromptMessageOut(AnswerModel):
    role: Literal["system", "user", "assistant"]
    content: str
    name: str | None = None
    message_id: str | None = None


class PromptOut(AnswerModel):
    """Seed 004 PromptPayload: OpenAI chat messages in send order, and what was kept and dropped."""

    messages: list[PromptMessageOut]
    stats: dict[str, Any]


class WorldDeletedOut(AnswerModel):
    """DLG-4: the world is gone from every route; its items are purged after `purge_after`."""

    world_id: str
    deleted_at: str
    purge_after: str


class DialogueDeletedOut(AnswerModel):
    world_id: str
    dialogue_id: str
    entries_deleted: int


class EntryDeletedOut(AnswerModel):
    world_id: str
    dialogue_id: str
    deleted: EntryOut


class SaveOut(AnswerModel):
    """DLG-5: a save game; `loaded_at` is when it was loaded (null: not loaded)."""

    save_id: str
    game_tick: int
    created_at: str
    loaded_at: str | None


class SaveAnswerOut(SaveOut):
    world_id: str
    #: POST /saves only: whether an earlier save of this id was overwritten.
    replaced: bool | None = None


class SavesOut(AnswerModel):
    world_id: str
    saves: list[SaveOut]


class WorldExportOut(AnswerModel):
    """DLG-6: the export in S3 (gzip JSON Lines) and a presigned GET URL valid `expires_in` seconds."""

    world_id: str
    export_id: str
    url: str | None
    expires_in: int
    content_encoding: Literal["gzip"]
    bytes: int
    dialogues: int
    entries: int


class ImportLineError(AnswerModel):
    line: int
    message: str


class ImportJobOut(AnswerModel):
    """DLG-6: an import job. `status`: awaiting_upload, queued, running, done, failed; `lines_done`:
    lines written so far; `errors`: the first 100 lines refused, `error_count` all of them."""

    world_id: str
    job_id: str
    mode: Literal["restore"]
    status: Literal["awaiting_upload", "queued", "running", "done", "failed"]
    lines_done: int
    bytes_total: int | None = None
    dialogues: int
    entries: int
    errors: list[ImportLineError]
    error_count: int
    runs: int
    created_at: str
    updated_at: str
    finished_at: str | None = None
    #: POST /imports only: where to PUT the file (JSON Lines, plain or gzip), valid for the seconds given.
    upload_url: str | None = None
    upload_expires_in: int | None = None


class ImportOut(AnswerModel):
    world_id: str
    mode: Literal["restore", "merge"]
    dialogues_created: int
    dialogues_merged: int
    entries_created: int
    entries_skipped: int
