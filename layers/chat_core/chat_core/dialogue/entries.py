"""Multi-party dialogue memory (seed 004, DLG-1): participant-set dialogues, history, save/load.

Concepts: a *world* is one save slot of an owner; a *dialogue* is the conversation of one exact set of
participants in a world (its id is the sorted ids joined by '+', e.g. `player+zorg`); an *entry* is one
line said by a participant at a game tick. `get_historical_context(["A", "B"])` returns the *primary*
history (dialogue A+B itself) and the *ancillary* history (every dialogue of that world that contains A
and B and someone else, e.g. A+B+C), each the newest `limit` entries in game-tick order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from chat_core.dialogue.gametime import check_tick, format_tick
from chat_core.errors import (
    Conflict,
    DialogueNotFound,
    InvalidInput,
    MessageTooLong,
    WorldNotEmpty,
)
from chat_core.settings import get_settings
from chat_core.store import dialogues as store
from chat_core.store.dialogues import (
    MAX_NAME_CHARS,
    MAX_PARTICIPANTS,
    MAX_ROLE_CHARS,
    DialogueRecord,
    EntryRecord,
    NewEntry,
    dialogue_key,
    normalize_participants,
    validate_dialogue_id,
    validate_entry_id,
    validate_participant_id,
    validate_world_id,
)

DEFAULT_HISTORY_LIMIT: Final = 10
MAX_HISTORY_LIMIT: Final = 100
MAX_ENTRIES_PER_REQUEST: Final = 100
EXPORT_FORMAT: Final = "chat-history.dialogues"
EXPORT_VERSION: Final = 1

_ENTRY_FIELDS: Final = frozenset({"participant_id", "role", "content", "game_tick", "name", "entry_id"})

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "MAX_HISTORY_LIMIT",
    "MAX_PARTICIPANTS",
    "AddedEntry",
    "DialogueRecord",
    "EntryRecord",
    "HistoricalContext",
    "ImportResult",
    "NewEntry",
    "add_entries",
    "add_entry",
    "dialogue_key",
    "export_world",
    "export_world_jsonl",
    "get_dialogue_entries",
    "get_historical_context",
    "import_world",
    "import_world_jsonl",
    "normalize_participants",
    "parse_entry",
    "start_or_get_conversation",
    "validate_limit",
    "validate_world_id",
]


# ------------------------------------------------------------------------------------------ inputs


def parse_entry(data: Mapping[str, Any] | NewEntry) -> NewEntry:
    """Validate one entry given as a mapping (`participant_id`, `role`, `content`, `game_tick`, optional
    `name` and `entry_id`) and return it; every problem is an InvalidInput naming the field."""
    if isinstance(data, NewEntry):
        data = {k: v for k, v in vars(data).items() if v is not None}
    if not isinstance(data, Mapping):
        raise InvalidInput("an entry must be a JSON object", field="entry")
    unknown = sorted(set(data) - _ENTRY_FIELDS)
    if unknown:
        raise InvalidInput(
            f"unknown entry field(s): {', '.join(unknown)}; allowed: {', '.join(sorted(_ENTRY_FIELDS))}",
            field="entry",
        )
    for required in ("participant_id", "role", "content", "game_tick"):
        if required not in data:
            raise InvalidInput(f"entry is missing {required!r}", field=required)
    participant_id = validate_participant_id(data["participant_id"])
    role = data["role"]
    if not isinstance(role, str) or not role or len(role) > MAX_ROLE_CHARS or not role.isascii():
        raise InvalidInput(
            f"role must be a label of 1-{MAX_ROLE_CHARS} ASCII characters (e.g. user, assistant, character)",
            field="role",
        )
    if not (role[0].isalpha() and all(c.isalnum() or c in "_-" for c in role)):
        raise InvalidInput(
            "role may only contain letters, digits, '_' and '-', starting with a letter", field="role"
        )
    content = data["content"]
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content must be a non-empty string", field="content")
    limit = get_settings().max_content_chars
    if len(content) > limit:
        raise MessageTooLong(f"content has {len(content)} characters; the limit is {limit}", field="content")
    tick = check_tick(data["game_tick"])
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS):
        raise InvalidInput(
            f"name must be a non-empty string of at most {MAX_NAME_CHARS} characters", field="name"
        )
    entry_id = data.get("entry_id")
    if entry_id is not None:
        entry_id = validate_entry_id(entry_id)
    return NewEntry(
        participant_id=participant_id,
        role=role,
        content=content,
        game_tick=tick,
        name=name.strip() if isinstance(name, str) else None,
        entry_id=entry_id,
    )


def validate_limit(limit: object, *, field: str = "limit") -> int:
    """A history limit: an integer 0..100 (0 asks for no entries)."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInput(f"{field} must be an integer", field=field)
    if not 0 <= limit <= MAX_HISTORY_LIMIT:
        raise InvalidInput(f"{field} must be between 0 and {MAX_HISTORY_LIMIT}, got {limit}", field=field)
    return limit


# -------------------------------------------------------------------------------------- operations


def start_or_get_conversation(owner: str, world_id: str, participant_ids: Sequence[str]) -> str:
    """The dialogue id of exactly this participant set, creating the dialogue and its index entries if
    needed. Idempotent and safe under concurrent starts (conditional transaction)."""
    return _dialogue_for(owner, validate_world_id(world_id), participant_ids).dialogue_id


def _dialogue_for(owner: str, world_id: str, participant_ids: Sequence[str]) -> DialogueRecord:
    participants = normalize_participants(participant_ids)
    key = dialogue_key(participants)
    found = store.get_dialogue(owner, world_id, key)
    if found is not None:
        return found
    store.create_dialogue(owner, world_id, participants)
    created = store.get_dialogue(owner, world_id, key)
    if created is None:  # pragma: no cover - only if the table loses a just-committed item
        raise Conflict(f"dialogue {key!r} could not be created; retry")
    return created


def _resolve(owner: str, world_id: str, dialogue: str | Sequence[str]) -> DialogueRecord:
    if isinstance(dialogue, str):
        dialogue_id = validate_dialogue_id(dialogue)
        found = store.get_dialogue(owner, world_id, dialogue_id)
        if found is None:
            raise DialogueNotFound(
                f"no dialogue {dialogue_id!r} in world {world_id!r}",
                dialogue_id=dialogue_id,
                world_id=world_id,
            )
        return found
    return _dialogue_for(owner, world_id, dialogue)


@dataclass(frozen=True)
class AddedEntry:
    """An entry after `add_entry`: `created` is False when its entry_id had already been stored."""

    entry: EntryRecord
    created: bool


def add_entry(
    owner: str, world_id: str, dialogue: str | Sequence[str], entry: Mapping[str, Any] | NewEntry
) -> AddedEntry:
    """Append one entry. `dialogue` is a dialogue id (must exist) or a participant list (created if
    needed). The speaker must be a participant of the dialogue. Cost: 1 GetItem + 1 TransactWrite."""
    return add_entries(owner, world_id, dialogue, [entry])[0]


def add_entries(
    owner: str,
    world_id: str,
    dialogue: str | Sequence[str],
    entries: Sequence[Mapping[str, Any] | NewEntry],
) -> list[AddedEntry]:
    """Append entries in the given order (all validated before anything is written)."""
    world_id = validate_world_id(world_id)
    if not entries:
        raise InvalidInput("at least one entry is required", field="entries")
    if len(entries) > MAX_ENTRIES_PER_REQUEST:
        raise InvalidInput(
            f"{len(entries)} entries in one request; the limit is {MAX_ENTRIES_PER_REQUEST}", field="entries"
        )
    parsed = [parse_entry(e) for e in entries]
    if not isinstance(dialogue, str):
        participants = set(normalize_participants(dialogue))
        _check_speakers(parsed, participants, dialogue_key(tuple(sorted(participants))))
    record = _resolve(owner, world_id, dialogue)
    _check_speakers(parsed, set(record.participants), record.dialogue_id)
    out: list[AddedEntry] = []
    for new in parsed:
        stored, created = store.append_entry(owner, world_id, record, new)
        out.append(AddedEntry(stored, created))
        if created:
            # Our own write advanced the sequence; carry it so the next append needs no re-read.
            record = replace(record, next_seq=stored.seq + 1)
    return out


def _check_speakers(entries: Sequence[NewEntry], participants: set[str], dialogue_id: str) -> None:
    for e in entries:
        if e.participant_id not in participants:
            raise InvalidInput(
                f"participant_id {e.participant_id!r} is not a participant of dialogue {dialogue_id!r}",
                field="participant_id",
            )


@dataclass(frozen=True)
class HistoricalContext:
    """Seed 004's HistoricalContext: `primary` (exactly these participants) and `ancillary` (dialogues
    with all of them plus others), each the newest `limit` entries, oldest first by game tick."""

    participants: tuple[str, ...]
    dialogue_id: str
    primary: list[EntryRecord]
    ancillary: list[EntryRecord]
    ancillary_dialogues: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "participants": list(self.participants),
            "dialogue_id": self.dialogue_id,
            "primary": [_labelled(e) for e in self.primary],
            "ancillary": [_labelled(e) for e in self.ancillary],
            "ancillary_dialogues": list(self.ancillary_dialogues),
        }


def _labelled(entry: EntryRecord) -> dict[str, Any]:
    """An entry as history answers it: with `game_time`, its tick on the default calendar as a prompt
    line shows it (DLG-2)."""
    return {**entry.to_dict(), "game_time": format_tick(entry.game_tick)}


def get_dialogue_entries(
    owner: str, world_id: str, participant_ids: Sequence[str], limit: int = DEFAULT_HISTORY_LIMIT
) -> list[EntryRecord]:
    """The newest `limit` entries of exactly this participant set's dialogue, in tick order (1 Query)."""
    world_id = validate_world_id(world_id)
    limit = validate_limit(limit)
    return store.newest_entries(owner, world_id, dialogue_key(normalize_participants(participant_ids)), limit)


def get_historical_context(
    owner: str, world_id: str, primary_participants: Sequence[str], limit: int = DEFAULT_HISTORY_LIMIT
) -> HistoricalContext:
    """Primary and ancillary history of a participant set (seed 004 GetHistoricalContextFor).

    Reads, for n participants, S superset dialogues and D dialogues of the rarest participant:
    1 Query (primary, Limit=limit) + ceil(n/100) BatchGetItem (per-participant dialogue counters)
    + 1 paginated Query of the rarest participant's index restricted by key condition to dialogues with
    more than n participants (so at most D items, usually far fewer) + S Queries (newest first,
    Limit=limit). Merge: O(S*limit*log S). Nothing is read from dialogues that can't be supersets, and
    nothing older than each dialogue's newest `limit` entries.
    """
    world_id = validate_world_id(world_id)
    limit = validate_limit(limit)
    participants = normalize_participants(primary_participants)
    key = dialogue_key(participants)
    primary = store.newest_entries(owner, world_id, key, limit)
    if limit == 0:
        return HistoricalContext(participants, key, [], [])
    counts = store.participant_dialogue_counts(owner, world_id, participants)
    rarest = min(participants, key=lambda p: (counts[p], p))
    supersets: list[str] = []
    if counts[rarest] > 0:
        wanted = set(participants)
        for dialogue_id, members in store.dialogues_with_more_participants(
            owner, world_id, rarest, len(participants)
        ):
            if wanted.issubset(members):
                supersets.append(dialogue_id)
    streams = [store.newest_entries(owner, world_id, d, limit) for d in supersets]
    ancillary = store.merge_newest(streams, limit)
    return HistoricalContext(participants, key, primary, ancillary, sorted(supersets))


# ------------------------------------------------------------------------------------ save and load


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def export_world(owner: str, world_id: str) -> Iterator[dict[str, Any]]:
    """Every dialogue of the world and all its entries, as JSON-ready lines: a `world` header (with
    counts, so a truncated file is detected on import), then per dialogue a `dialogue` line followed by
    its `entry` lines in (game_tick, seq) order. Queries only: the world directory, then one per dialogue.
    """
    world_id = validate_world_id(world_id)
    dialogues: list[tuple[DialogueRecord, list[EntryRecord]]] = []
    for dialogue_id in store.world_dialogue_ids(owner, world_id):
        found = store.read_dialogue(owner, world_id, dialogue_id)
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
    n_entries = 0
    for number, line in lines:
        if not isinstance(line, Mapping):
            raise _bad_line(number, "each line must be a JSON object")
        kind = line.get("type")
        if header is None:
            if kind != "world" or line.get("format") != EXPORT_FORMAT:
                raise _bad_line(
                    number, f"the first line must be the world header of a {EXPORT_FORMAT!r} export"
                )
            if line.get("version") != EXPORT_VERSION:
                raise _bad_line(
                    number, f"unsupported export version {line.get('version')!r}; expected {EXPORT_VERSION}"
                )
            header = line
            continue
        if kind == "dialogue":
            dialogues_record = _parse_dialogue_line(number, line)
            if dialogues_record.dialogue_id in dialogues:
                raise _bad_line(number, f"dialogue {dialogues_record.dialogue_id!r} appears twice")
            dialogues[dialogues_record.dialogue_id] = _ParsedDialogue(dialogues_record)
        elif kind == "entry":
            parsed = _parse_entry_line(number, line, dialogues)
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


def _parse_dialogue_line(number: int, line: Mapping[str, Any]) -> DialogueRecord:
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
        created_at=_timestamp_field(number, line, "created_at"),
        updated_at=_timestamp_field(number, line, "updated_at"),
    )


def _parse_entry_line(
    number: int, line: Mapping[str, Any], dialogues: Mapping[str, _ParsedDialogue]
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
    fields = {
        k: line[k]
        for k in ("participant_id", "role", "content", "game_tick", "name", "entry_id")
        if k in line
    }
    try:
        entry = parse_entry(fields)
    except InvalidInput as exc:
        raise _bad_line(number, exc.message) from exc
    if entry.participant_id not in dialogues[dialogue_id].record.participants:
        raise _bad_line(number, f"{entry.participant_id!r} is not a participant of {dialogue_id!r}")
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
    )


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
    if mode == "restore" and not store.world_is_empty(owner, world_id):
        raise WorldNotEmpty(
            f"world {world_id!r} already holds dialogues; import into an empty world or use mode=merge",
            world_id=world_id,
        )
    created = merged = added = skipped = 0
    for d in parsed:
        existing = store.get_dialogue(owner, world_id, d.record.dialogue_id)
        if existing is None:
            store.restore_dialogue(owner, world_id, d.record, d.entries)
            created += 1
            added += len(d.entries)
            continue
        if mode == "restore":  # someone wrote into the world while we imported
            raise WorldNotEmpty(
                f"dialogue {d.record.dialogue_id!r} appeared in world {world_id!r} during import"
            )
        merged += 1
        for e in sorted(d.entries, key=lambda e: (e.game_tick, e.seq)):
            new = NewEntry(e.participant_id, e.role, e.content, e.game_tick, e.name, e.entry_id)
            stored, was_created = store.append_entry(owner, world_id, existing, new)
            if was_created:
                added += 1
                existing = replace(existing, next_seq=stored.seq + 1)
            else:
                skipped += 1
    return ImportResult(world_id, mode, created, merged, added, skipped)


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
