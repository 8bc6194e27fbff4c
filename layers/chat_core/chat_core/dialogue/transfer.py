"""Save and load of a whole world (seed 004, DLG-1): export as JSON Lines, import (restore or merge).

A file is a `world` header (with counts, so a truncated file is detected), then per dialogue a
`dialogue` line followed by its `entry` lines in (game_tick, seq) order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from chat_core.dialogue.entries import ENTRY_FIELDS, parse_entry
from chat_core.dialogue.worlds import live
from chat_core.errors import InvalidInput, WorldNotEmpty
from chat_core.store import dialogues as store
from chat_core.store import world_io
from chat_core.store.dialogues import (
    DialogueRecord,
    EntryRecord,
    NewEntry,
    Perceive,
    Perception,
    dialogue_key,
    normalize_participants,
    validate_world_id,
)

EXPORT_FORMAT: Final = "chat-history.dialogues"
EXPORT_VERSION: Final = 1


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def export_world(owner: str, world_id: str) -> Iterator[dict[str, Any]]:
    """Every dialogue of the world and all its entries, as JSON-ready lines: a `world` header (with
    counts, so a truncated file is detected on import), then per dialogue a `dialogue` line followed by
    its `entry` lines in (game_tick, seq) order. Queries only: the world directory, then one per dialogue.
    """
    world_id = validate_world_id(world_id)
    live(owner, world_id)
    dialogues: list[tuple[DialogueRecord, list[EntryRecord]]] = []
    for dialogue_id in world_io.world_dialogue_ids(owner, world_id):
        found = world_io.read_dialogue(owner, world_id, dialogue_id)
        if found is not None:
            dialogues.append(found)
    yield {
        "type": "world",
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "world_id": world_id,
        "exported_at": _now(),
        "dialogues": len(dialogues),
        "entries": sum(len(entries) for _, entries in dialogues),
    }
    for meta, entries in dialogues:
        yield {
            "type": "dialogue",
            "dialogue_id": meta.dialogue_id,
            "participants": list(meta.participants),
            "created_at": meta.created_at,
            "updated_at": meta.updated_at,
            "next_seq": meta.next_seq,
            "entry_count": meta.entry_count,
            **({"absent": list(meta.absent)} if meta.absent else {}),
        }
        for e in entries:
            yield {"type": "entry", **e.to_dict()}


def export_world_jsonl(owner: str, world_id: str) -> str:
    """`export_world` as JSON Lines text (UTF-8, one object per line, trailing newline)."""
    return "".join(
        json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
        for line in export_world(owner, world_id)
    )


ImportMode = Literal["restore", "merge"]


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote."""

    world_id: str
    mode: str
    dialogues_created: int
    dialogues_merged: int
    entries_created: int
    entries_skipped: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(vars(self))


@dataclass
class _ParsedDialogue:
    record: DialogueRecord
    entries: list[EntryRecord] = field(default_factory=list)


def _bad_line(number: int, message: str) -> InvalidInput:
    return InvalidInput(f"line {number}: {message}", field="body", line=number)


def _parse_export(lines: Iterable[tuple[int, object]]) -> list[_ParsedDialogue]:
    """Validate a whole export (numbered lines) before anything is written; every problem names its line."""
    header: Mapping[str, Any] | None = None
    dialogues: dict[str, _ParsedDialogue] = {}
    records: dict[str, DialogueRecord] = {}
    n_entries = 0
    for number, line in lines:
        if not isinstance(line, Mapping):
            raise _bad_line(number, "each line must be a JSON object")
        kind = line.get("type")
        if header is None:
            header = parse_header(number, line)
            continue
        if kind == "dialogue":
            dialogues_record = parse_dialogue_line(number, line)
            if dialogues_record.dialogue_id in dialogues:
                raise _bad_line(number, f"dialogue {dialogues_record.dialogue_id!r} appears twice")
            dialogues[dialogues_record.dialogue_id] = _ParsedDialogue(dialogues_record)
            records[dialogues_record.dialogue_id] = dialogues_record
        elif kind == "entry":
            parsed = parse_entry_line(number, line, records)
            dialogues[parsed.dialogue_id].entries.append(parsed)
            n_entries += 1
        else:
            raise _bad_line(number, f"unknown line type {kind!r}; expected 'dialogue' or 'entry'")
    if header is None:
        raise InvalidInput("the import is empty; expected a world header line", field="body")
    if header.get("dialogues") != len(dialogues) or header.get("entries") != n_entries:
        raise InvalidInput(
            f"the header announces {header.get('dialogues')} dialogues and {header.get('entries')} entries "
            f"but the file holds {len(dialogues)} and {n_entries}; is it truncated?",
            field="body",
        )
    for d in dialogues.values():
        seqs = [e.seq for e in d.entries]
        ids = [e.entry_id for e in d.entries]
        if len(set(seqs)) != len(seqs) or len(set(ids)) != len(ids):
            raise InvalidInput(
                f"dialogue {d.record.dialogue_id!r} repeats an entry seq or entry_id", field="body"
            )
        if d.record.entry_count != len(d.entries) or (seqs and max(seqs) >= d.record.next_seq):
            raise InvalidInput(
                f"dialogue {d.record.dialogue_id!r}: entry_count/next_seq do not match its entries",
                field="body",
            )
    return list(dialogues.values())


def parse_header(number: int, line: object) -> Mapping[str, Any]:
    """The `world` header line of an export (the first line), checked."""
    if not isinstance(line, Mapping):
        raise _bad_line(number, "each line must be a JSON object")
    if line.get("type") != "world" or line.get("format") != EXPORT_FORMAT:
        raise _bad_line(number, f"the first line must be the world header of a {EXPORT_FORMAT!r} export")
    if line.get("version") != EXPORT_VERSION:
        raise _bad_line(
            number, f"unsupported export version {line.get('version')!r}; expected {EXPORT_VERSION}"
        )
    return line


def _count_field(number: int, line: Mapping[str, Any], name: str) -> int:
    value = line.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad_line(number, f"{name} must be a non-negative integer")
    return value


def _timestamp_field(number: int, line: Mapping[str, Any], name: str) -> str:
    value = line.get(name)
    if not isinstance(value, str) or not value:
        raise _bad_line(number, f"{name} must be a timestamp string")
    return value


def parse_dialogue_line(number: int, line: Mapping[str, Any]) -> DialogueRecord:
    try:
        participants = normalize_participants(line.get("participants"))
    except InvalidInput as exc:
        raise _bad_line(number, exc.message) from exc
    dialogue_id = dialogue_key(participants)
    if line.get("dialogue_id") != dialogue_id:
        raise _bad_line(number, f"dialogue_id {line.get('dialogue_id')!r} does not match its participants")
    return DialogueRecord(
        dialogue_id=dialogue_id,
        participants=participants,
        next_seq=_count_field(number, line, "next_seq"),
        entry_count=_count_field(number, line, "entry_count"),
        absent=_subset(number, line, "absent", participants),
        created_at=_timestamp_field(number, line, "created_at"),
        updated_at=_timestamp_field(number, line, "updated_at"),
    )


def parse_entry_line(
    number: int, line: Mapping[str, Any], dialogues: Mapping[str, DialogueRecord]
) -> EntryRecord:
    dialogue_id = line.get("dialogue_id")
    if not isinstance(dialogue_id, str) or dialogue_id not in dialogues:
        raise _bad_line(
            number, f"entry of dialogue {dialogue_id!r} comes before (or without) its dialogue line"
        )
    seq = _count_field(number, line, "seq")
    created_at = _timestamp_field(number, line, "created_at")
    if "entry_id" not in line:
        raise _bad_line(number, "entry is missing 'entry_id'")
    participants = dialogues[dialogue_id].participants
    # A join or leave was perceived by whoever was present: its stored audience is checked here, not
    # as a request's (where it may not be given).
    fields = {k: line[k] for k in ENTRY_FIELDS if k in line and not (k == "audience" and "kind" in line)}
    try:
        entry = parse_entry(fields)
    except InvalidInput as exc:
        raise _bad_line(number, exc.message) from exc
    if entry.participant_id not in participants:
        raise _bad_line(number, f"{entry.participant_id!r} is not a participant of {dialogue_id!r}")
    audience = _subset(number, line, "audience", participants) or None
    return EntryRecord(
        dialogue_id=dialogue_id,
        entry_id=str(entry.entry_id),
        participant_id=entry.participant_id,
        role=entry.role,
        content=entry.content,
        game_tick=entry.game_tick,
        seq=seq,
        created_at=created_at,
        name=entry.name,
        audience=audience,
        visibility=entry.visibility,
        kind=entry.kind,
    )


def _subset(
    number: int, line: Mapping[str, Any], name: str, participants: tuple[str, ...]
) -> tuple[str, ...]:
    """An optional list of the dialogue's participants (`absent`, `audience`), sorted; () when absent."""
    if line.get(name) is None:
        return ()
    try:
        ids = normalize_participants(line[name], field=name)
    except InvalidInput as exc:
        raise _bad_line(number, exc.message) from exc
    strangers = [p for p in ids if p not in participants]
    if strangers:
        raise _bad_line(number, f"{name} names {strangers[0]!r}, who is not a participant")
    return ids


def import_world(
    owner: str, world_id: str, lines: Iterable[Mapping[str, Any]], *, mode: ImportMode = "restore"
) -> ImportResult:
    """Load an export (the objects `export_world` yields) into a world; see `_import`."""
    return _import(owner, world_id, enumerate(lines, start=1), mode)


def _import(owner: str, world_id: str, lines: Iterable[tuple[int, object]], mode: str) -> ImportResult:
    """Load an export into a world (game load).

    mode "restore" (default): the world must hold no dialogue (else WorldNotEmpty, 409); afterwards
    exporting it gives back exactly the imported dialogues and entries (ids, sequences, timestamps).
    mode "merge": dialogues the world lacks are restored exactly; into existing ones each entry is
    appended (new sequence, same tick), and entries whose entry_id is already there are skipped, so
    merging the same file twice changes nothing. The whole file is validated before anything is written.
    """
    world_id = validate_world_id(world_id)
    if mode not in ("restore", "merge"):
        raise InvalidInput(f"mode must be 'restore' or 'merge', got {mode!r}", field="mode")
    parsed = _parse_export(lines)
    live(owner, world_id, writing=True)
    if mode == "restore" and not world_io.world_is_empty(owner, world_id):
        raise WorldNotEmpty(
            f"world {world_id!r} already holds dialogues; import into an empty world or use mode=merge",
            world_id=world_id,
        )
    created = merged = added = skipped = 0
    for d in parsed:
        existing = store.get_dialogue(owner, world_id, d.record.dialogue_id)
        if existing is None:
            world_io.restore_dialogue(owner, world_id, d.record, d.entries)
            created += 1
            added += len(d.entries)
            continue
        if mode == "restore":  # someone wrote into the world while we imported
            raise WorldNotEmpty(
                f"dialogue {d.record.dialogue_id!r} appeared in world {world_id!r} during import"
            )
        merged += 1
        for e in sorted(d.entries, key=lambda e: (e.game_tick, e.seq)):
            new = NewEntry(e.participant_id, e.role, e.content, e.game_tick, e.name, e.entry_id, kind=e.kind)
            stored, was_created = store.append_entry(owner, world_id, existing, new, _as_exported(e))
            if was_created:
                added += 1
                existing = replace(existing, next_seq=stored.seq + 1)
            else:
                skipped += 1
    return ImportResult(world_id, mode, created, merged, added, skipped)


def _as_exported(e: EntryRecord) -> Perceive:
    """DLG-3: a merged entry keeps the audience it was exported with (membership is not replayed)."""
    return lambda d: Perception(e.audience or d.participants, e.audience, e.visibility)


def import_world_jsonl(owner: str, world_id: str, text: str, *, mode: ImportMode = "restore") -> ImportResult:
    """`import_world` from JSON Lines text; blank lines are ignored, a malformed line is a 400 naming it."""

    def lines() -> Iterator[tuple[int, object]]:
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"line {number} is not valid JSON: {exc.msg}", field="body", line=number
                ) from exc
            yield number, value

    return _import(owner, world_id, lines(), mode)
