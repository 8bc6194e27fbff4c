"""Multi-party dialogue memory (seed 004, DLG-1): participant-set dialogues, their entries and history;
who perceived each entry (DLG-3, see `dialogue.audience`).

Concepts: a *world* is one save slot of an owner; a *dialogue* is the conversation of one exact set of
participants in a world (its id is the sorted ids joined by '+', e.g. `player+zorg`); an *entry* is one
line said by a participant at a game tick. `get_historical_context(["A", "B"])` returns the *primary*
history (dialogue A+B itself) and the *ancillary* history (every dialogue of that world that contains A
and B and someone else, e.g. A+B+C), each the newest `limit` entries in game-tick order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from chat_core.dialogue.audience import decide, initial_absent, parse_perception, perceive, rehearse
from chat_core.dialogue.gametime import check_tick, format_tick
from chat_core.dialogue.worlds import live
from chat_core.errors import (
    Conflict,
    DialogueNotFound,
    InvalidInput,
    MessageTooLong,
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

#: An entry's fields, in the order the request model, the export lines and the queue messages give them.
ENTRY_FIELDS: Final = (
    "participant_id",
    "role",
    "content",
    "game_tick",
    "name",
    "entry_id",
    "audience",
    "visibility",
    "kind",
)
_ENTRY_FIELDS: Final = frozenset(ENTRY_FIELDS)
#: What a join or leave entry says when the request gives no content or role.
_EVENT_TEXT: Final = {"join": "{who} joined.", "leave": "{who} left."}

__all__ = [
    "DEFAULT_HISTORY_LIMIT",
    "ENTRY_FIELDS",
    "MAX_HISTORY_LIMIT",
    "MAX_PARTICIPANTS",
    "AddedEntry",
    "DialogueRecord",
    "EntryRecord",
    "HistoricalContext",
    "NewEntry",
    "add_entries",
    "add_entry",
    "dialogue_key",
    "get_dialogue_entries",
    "get_historical_context",
    "get_witnessed",
    "normalize_participants",
    "parse_entry",
    "start_or_get_conversation",
    "validate_limit",
    "validate_world_id",
]


# ------------------------------------------------------------------------------------------ inputs


def parse_entry(data: Mapping[str, Any] | NewEntry) -> NewEntry:
    """Validate one entry given as a mapping (`participant_id`, `role`, `content`, `game_tick`, optional
    `name` and `entry_id`; DLG-3 `audience`, `visibility`, `kind`) and return it; every problem is an
    InvalidInput naming the field. A join or leave may leave out `content` and `role`."""
    if isinstance(data, NewEntry):
        data = {k: v for k, v in vars(data).items() if v is not None}
    if isinstance(data, Mapping):
        perception = parse_perception(data)
        kind = perception.get("kind")
        if kind is not None:  # a join or leave may leave out what it says and its role
            who = data.get("name") or data.get("participant_id")
            data = {"role": "event", "content": _EVENT_TEXT[kind].format(who=who), **data}
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
        **perception,
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
    world_id = validate_world_id(world_id)
    live(owner, world_id, writing=True)
    return _dialogue_for(owner, world_id, participant_ids).dialogue_id


def _dialogue_for(
    owner: str, world_id: str, participant_ids: Sequence[str], present: object = None
) -> DialogueRecord:
    participants = normalize_participants(participant_ids)
    absent = initial_absent(participants, present)
    key = dialogue_key(participants)
    found = store.get_dialogue(owner, world_id, key)
    if found is not None:
        return found
    store.create_dialogue(owner, world_id, participants, absent)
    created = store.get_dialogue(owner, world_id, key)
    if created is None:  # pragma: no cover - only if the table loses a just-committed item
        raise Conflict(f"dialogue {key!r} could not be created; retry")
    return created


def _resolve(
    owner: str, world_id: str, dialogue: str | Sequence[str], present: object = None
) -> DialogueRecord:
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
    return _dialogue_for(owner, world_id, dialogue, present)


@dataclass(frozen=True)
class AddedEntry:
    """An entry after `add_entry`: `created` is False when its entry_id had already been stored."""

    entry: EntryRecord
    created: bool


def add_entry(
    owner: str, world_id: str, dialogue: str | Sequence[str], entry: Mapping[str, Any] | NewEntry
) -> AddedEntry:
    """Append one entry. `dialogue` is a dialogue id (must exist) or a participant list (created if
    needed). The speaker must be a participant of the dialogue. Cost: 2 GetItems (the world, the
    dialogue) + 1 TransactWrite (the entry, its id guard, the dialogue counter, a witness row per
    perceiver)."""
    return add_entries(owner, world_id, dialogue, [entry])[0]


def add_entries(
    owner: str,
    world_id: str,
    dialogue: str | Sequence[str],
    entries: Sequence[Mapping[str, Any] | NewEntry],
    *,
    present: Sequence[str] | None = None,
) -> list[AddedEntry]:
    """Append entries in the given order (all validated before anything is written).

    `present` (DLG-3): who is there when this call creates the dialogue (default: every participant);
    it has no effect on a dialogue that exists, so a retried request behaves the same.
    """
    world_id = validate_world_id(world_id)
    if not entries:
        raise InvalidInput("at least one entry is required", field="entries")
    if len(entries) > MAX_ENTRIES_PER_REQUEST:
        raise InvalidInput(
            f"{len(entries)} entries in one request; the limit is {MAX_ENTRIES_PER_REQUEST}", field="entries"
        )
    parsed = [parse_entry(e) for e in entries]
    live(owner, world_id, writing=True)
    if not isinstance(dialogue, str):
        participants = set(normalize_participants(dialogue))
        _check_speakers(parsed, participants, dialogue_key(tuple(sorted(participants))))
    record = _resolve(owner, world_id, dialogue, present)
    _check_speakers(parsed, set(record.participants), record.dialogue_id)
    rehearse(parsed, record)
    out: list[AddedEntry] = []
    for new in parsed:
        stored, created = store.append_entry(owner, world_id, record, new, perceive(new))
        out.append(AddedEntry(stored, created))
        if created:
            record = _after(owner, world_id, record, new, stored)
    return out


def _after(
    owner: str, world_id: str, record: DialogueRecord, new: NewEntry, stored: EntryRecord
) -> DialogueRecord:
    """The dialogue after our own append, so the next append needs no re-read: written at the sequence
    we read, nothing else changed it in between (a join or leave moves the sequence too)."""
    if stored.seq != record.next_seq:  # the store re-read a dialogue others had written to
        fresh = store.get_dialogue(owner, world_id, record.dialogue_id)
        return fresh if fresh is not None else replace(record, next_seq=stored.seq + 1)
    absent = decide(new, record).absent_after
    return replace(record, next_seq=stored.seq + 1, absent=record.absent if absent is None else absent)


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
    viewer: str | None = None  # DLG-3: built for this participant (only what it perceived)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "for": self.viewer,
            "participants": list(self.participants),
            "dialogue_id": self.dialogue_id,
            "primary": labelled(self.primary),
            "ancillary": labelled(self.ancillary),
            "ancillary_dialogues": list(self.ancillary_dialogues),
        }


def labelled(entries: Sequence[EntryRecord]) -> list[dict[str, Any]]:
    """Entries as history answers them (see `_labelled`)."""
    return [_labelled(e) for e in entries]


def _labelled(entry: EntryRecord) -> dict[str, Any]:
    """An entry as history answers it: with `game_time`, its tick on the default calendar as a prompt
    line shows it (DLG-2)."""
    return {**entry.to_dict(), "game_time": format_tick(entry.game_tick)}


def get_dialogue_entries(
    owner: str,
    world_id: str,
    participant_ids: Sequence[str],
    limit: int = DEFAULT_HISTORY_LIMIT,
    viewer: str | None = None,
) -> list[EntryRecord]:
    """The newest `limit` entries of exactly this participant set's dialogue, in tick order (1 Query);
    with `viewer`, only those it may know of (entries without an audience, or naming it in theirs)."""
    world_id = validate_world_id(world_id)
    limit = validate_limit(limit)
    key = dialogue_key(normalize_participants(participant_ids))
    hidden = live(owner, world_id).hidden()
    return store.newest_entries(owner, world_id, key, limit, viewer, hidden)


def get_witnessed(
    owner: str, world_id: str, participant_id: str, limit: int = DEFAULT_HISTORY_LIMIT
) -> list[EntryRecord]:
    """DLG-3: the newest `limit` entries the participant perceived in any dialogue of the world, oldest
    first by game time. One Query of its witness partition, whatever the number and length of dialogues
    (entries stored before audiences existed are not in it: read them with the history)."""
    world_id = validate_world_id(world_id)
    limit = validate_limit(limit)
    participant_id = validate_participant_id(participant_id, field="for")
    hidden = live(owner, world_id).hidden()
    return store.witnessed(owner, world_id, participant_id, limit, hidden)


def get_historical_context(
    owner: str,
    world_id: str,
    primary_participants: Sequence[str],
    limit: int = DEFAULT_HISTORY_LIMIT,
    viewer: str | None = None,
) -> HistoricalContext:
    """Primary and ancillary history of a participant set (seed 004 GetHistoricalContextFor).

    Reads, for n participants, S superset dialogues and D dialogues of the rarest participant:
    1 Query (primary, Limit=limit) + ceil(n/100) BatchGetItem (per-participant dialogue counters)
    + 1 paginated Query of the rarest participant's index restricted by key condition to dialogues with
    more than n participants (so at most D items, usually far fewer) + S Queries (newest first,
    Limit=limit). Merge: O(S*limit*log S). Nothing is read from dialogues that can't be supersets, and
    nothing older than each dialogue's newest `limit` entries.

    With `viewer` (DLG-3, one of the participants) every entry it did not perceive is left out; a
    dialogue's Query then pages further back only past such entries, never into other dialogues.
    """
    world_id = validate_world_id(world_id)
    limit = validate_limit(limit)
    participants = normalize_participants(primary_participants)
    if viewer is not None and validate_participant_id(viewer, field="for") not in participants:
        raise InvalidInput(f"for names {viewer!r}, who is not one of the participants", field="for")
    key = dialogue_key(participants)
    hidden = live(owner, world_id).hidden()
    primary = store.newest_entries(owner, world_id, key, limit, viewer, hidden)
    if limit == 0:
        return HistoricalContext(participants, key, [], [], viewer=viewer)
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
    streams = [store.newest_entries(owner, world_id, d, limit, viewer, hidden) for d in supersets]
    ancillary = store.merge_newest(streams, limit)
    return HistoricalContext(participants, key, primary, ancillary, sorted(supersets), viewer)
