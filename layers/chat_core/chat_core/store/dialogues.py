"""Multi-party dialogue storage (seed 004): dialogues, participant index, entries; GetItem/Query only.

Item layout in the single table (owner and world in every key, so no access crosses either):

| item                 | pk                                    | sk                               |
|----------------------|---------------------------------------|----------------------------------|
| dialogue meta        | USER#<o>#WORLD#<w>#DLG#<dialogue_id>  | ~META                            |
| entry                | USER#<o>#WORLD#<w>#DLG#<dialogue_id>  | E#<tick, 20 digits>#<seq, 10>    |
| entry-id guard       | USER#<o>#WORLD#<w>#DLG#<dialogue_id>  | ID#<entry_id>                    |
| world directory      | USER#<o>#WORLD#<w>#DIR                | DLG#<dialogue_id>                |
| participant index    | USER#<o>#WORLD#<w>#P#<participant>    | DLG#<count, 2 digits>#<dialogue_id> |
| participant stats    | USER#<o>#WORLD#<w>#P#<participant>    | ~STATS                           |

The participant count sits in the index sort key, so "dialogues of P with more than k participants" is
a key-condition range (`BETWEEN DLG#<k+1>#` and `DLG$`) that never reads a smaller dialogue. World ids,
participant ids and entry ids are validated to exclude `#` (and the few other separators we use); the
owner is percent-escaped; so no value can forge another key. Reads are strongly consistent: a game
that stores a line and at once builds the next prompt must see that line.
"""

from __future__ import annotations

import hashlib
import heapq
import random
import re
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from chat_core.errors import Conflict, DialogueNotFound, InvalidInput
from chat_core.store.base import bind, connection, store_error
from chat_core.store.dialogue_items import (
    DialogueEntryItem,
    DialogueMetaItem,
    EntryIdGuardItem,
    ParticipantDialogueItem,
    ParticipantStatsItem,
    WitnessItem,
    WorldDialogueItem,
)
from chat_core.store.directory import count_in_world
from chat_core.store.keys import entry_sk

MAX_PARTICIPANTS: Final = 32  # one start writes 2 + 2n items; a transaction holds at most 100
MAX_PARTICIPANT_ID_CHARS: Final = 64
MAX_WORLD_ID_CHARS: Final = 64
MAX_ENTRY_ID_CHARS: Final = 128
MAX_ROLE_CHARS: Final = 32
MAX_NAME_CHARS: Final = 64
# Longer participant sets are stored under a digest so pk/sk stay far below DynamoDB's key limits.
MAX_READABLE_KEY_BYTES: Final = 400
PARTICIPANT_JOINER: Final = "+"
_APPEND_ATTEMPTS: Final = 20
_FILTERED_PAGE: Final = 50  # entries read per request when history is filtered for one viewer

_WORLD_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_ENTRY_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
_ROLE_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# `#` separates key parts, `,` separates ids in query strings, `+` joins a dialogue id, `~` marks a
# digest id; `/`, `\`, `?`, `&`, `%` would make ids awkward in URLs. Whitespace and control characters
# are never part of a sane id.
_FORBIDDEN_ID_CHARS: Final = frozenset("#,+~/\\?&%")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------------------------------------- keys


def validate_world_id(world_id: object) -> str:
    """A world (save slot) id: 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit."""
    if not isinstance(world_id, str) or not world_id:
        raise InvalidInput("world_id must be a non-empty string", field="world_id")
    if len(world_id) > MAX_WORLD_ID_CHARS:
        raise InvalidInput(
            f"world_id has {len(world_id)} characters; the limit is {MAX_WORLD_ID_CHARS}", field="world_id"
        )
    if not _WORLD_RE.fullmatch(world_id):
        raise InvalidInput(
            f"world_id {world_id!r} may only contain letters, digits, '_', '.', '-' and must start with a "
            "letter or digit",
            field="world_id",
        )
    return world_id


def validate_participant_id(participant_id: object, *, field: str = "participant_id") -> str:
    """A participant id: 1-64 characters, any script, no whitespace/control characters, none of #,+~/\\?&%."""
    if not isinstance(participant_id, str) or not participant_id:
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    if len(participant_id) > MAX_PARTICIPANT_ID_CHARS:
        raise InvalidInput(
            f"{field} has {len(participant_id)} characters; the limit is {MAX_PARTICIPANT_ID_CHARS}",
            field=field,
        )
    for ch in participant_id:
        if ch in _FORBIDDEN_ID_CHARS or ch.isspace() or unicodedata.category(ch)[0] in ("C", "Z"):
            raise InvalidInput(
                f"{field} {participant_id!r} contains {ch!r}; ids may not contain whitespace, control "
                "characters or any of # , + ~ / \\ ? & %",
                field=field,
            )
    return participant_id


def normalize_participants(participant_ids: object, *, field: str = "participants") -> tuple[str, ...]:
    """Validate a participant list and return it as a sorted set (duplicates collapse)."""
    if isinstance(participant_ids, str) or not isinstance(participant_ids, Sequence | set | frozenset):
        raise InvalidInput(f"{field} must be a list of participant ids", field=field)
    ids = {validate_participant_id(p, field=field) for p in participant_ids}
    if not ids:
        raise InvalidInput(f"{field} must name at least one participant", field=field)
    if len(ids) > MAX_PARTICIPANTS:
        raise InvalidInput(
            f"{field} names {len(ids)} participants; the limit is {MAX_PARTICIPANTS}", field=field
        )
    return tuple(sorted(ids))


def dialogue_key(participants: Sequence[str]) -> str:
    """The dialogue id of a sorted participant set: `a+b+c`, or `~<sha256>` when that would be long.

    Readable ids can't start with `~` (forbidden in participant ids), so the two forms never collide.
    """
    joined = PARTICIPANT_JOINER.join(participants)
    if len(joined.encode("utf-8")) <= MAX_READABLE_KEY_BYTES:
        return joined
    return "~" + hashlib.sha256(joined.encode("utf-8")).hexdigest()


def validate_dialogue_id(dialogue_id: object) -> str:
    """A dialogue id as returned by `dialogue_key` (readable `a+b` or digest `~<hex>`)."""
    if not isinstance(dialogue_id, str) or not dialogue_id:
        raise InvalidInput("dialogue_id must be a non-empty string", field="dialogue_id")
    if dialogue_id.startswith("~"):
        if not re.fullmatch(r"~[0-9a-f]{64}", dialogue_id):
            raise InvalidInput(f"dialogue_id {dialogue_id!r} is not a valid dialogue id", field="dialogue_id")
        return dialogue_id
    parts = dialogue_id.split(PARTICIPANT_JOINER)
    for p in parts:
        validate_participant_id(p, field="dialogue_id")
    if list(parts) != sorted(set(parts)):
        raise InvalidInput(
            f"dialogue_id {dialogue_id!r} is not a valid dialogue id "
            "(participant ids sorted, unique, joined by '+')",
            field="dialogue_id",
        )
    return dialogue_id


def validate_entry_id(entry_id: object) -> str:
    """A client-chosen entry id (idempotency key): 1-128 characters of A-Z a-z 0-9 _ . : -."""
    if not isinstance(entry_id, str) or not entry_id:
        raise InvalidInput("entry_id must be a non-empty string", field="entry_id")
    if len(entry_id) > MAX_ENTRY_ID_CHARS or not _ENTRY_ID_RE.fullmatch(entry_id):
        raise InvalidInput(
            f"entry_id must be 1-{MAX_ENTRY_ID_CHARS} characters of letters, digits, '_', '.', ':', '-'",
            field="entry_id",
        )
    return entry_id


# ------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class DialogueRecord:
    """A stored dialogue."""

    dialogue_id: str
    participants: tuple[str, ...]
    next_seq: int
    entry_count: int
    created_at: str
    updated_at: str
    absent: tuple[str, ...] = ()

    @property
    def present(self) -> tuple[str, ...]:
        """DLG-3: the participants there now (everyone but those who left or have not joined)."""
        return tuple(p for p in self.participants if p not in self.absent)


@dataclass(frozen=True)
class NewEntry:
    """A validated entry about to be stored."""

    participant_id: str
    role: str
    content: str
    game_tick: int
    name: str | None = None
    entry_id: str | None = None
    audience: tuple[str, ...] | None = None
    visibility: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class Perception:
    """DLG-3, decided by `dialogue.audience` from the dialogue as it is when the entry is written."""

    witnesses: tuple[str, ...]  # every participant who perceived it: one witness row each
    audience: tuple[str, ...] | None  # stored on the entry when it is not every participant
    visibility: str | None
    absent_after: tuple[str, ...] | None = None  # the dialogue's new absent set (join / leave)


Perceive = Callable[["DialogueRecord"], Perception]


def everyone(dialogue: DialogueRecord) -> Perception:
    """Every participant perceived it (entries written without audiences, as before DLG-3)."""
    return Perception(dialogue.participants, None, None)


@dataclass(frozen=True)
class EntryRecord:
    """A stored entry of a dialogue (what history and export return)."""

    dialogue_id: str
    entry_id: str
    participant_id: str
    role: str
    content: str
    game_tick: int
    seq: int
    created_at: str
    name: str | None = None
    audience: tuple[str, ...] | None = None
    visibility: str | None = None
    kind: str | None = None

    def perceived_by(self, participant_id: str) -> bool:
        """DLG-3: whether this participant (one of its dialogue's) perceived the entry."""
        return self.audience is None or participant_id in self.audience

    def sort_key(self) -> tuple[int, str, str, int]:
        """Game tick first; equal ticks by wall-clock arrival, then dialogue and sequence (deterministic)."""
        return (self.game_tick, self.created_at, self.dialogue_id, self.seq)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, `name` omitted when absent."""
        out: dict[str, Any] = {
            "dialogue_id": self.dialogue_id,
            "entry_id": self.entry_id,
            "participant_id": self.participant_id,
            "role": self.role,
            "content": self.content,
            "game_tick": self.game_tick,
            "seq": self.seq,
            "created_at": self.created_at,
        }
        if self.name is not None:
            out["name"] = self.name
        if self.audience is not None:
            out["audience"] = list(self.audience)
        for key in ("visibility", "kind"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


def dialogue_record(item: DialogueMetaItem) -> DialogueRecord:
    return DialogueRecord(
        dialogue_id=item.dialogue_id,
        participants=tuple(item.participants),
        next_seq=int(item.next_seq),
        entry_count=int(item.entry_count),
        created_at=item.created_at,
        updated_at=item.updated_at,
        absent=tuple(item.absent or ()),
    )


def entry_record(dialogue_id: str, item: DialogueEntryItem) -> EntryRecord:
    return EntryRecord(
        dialogue_id=dialogue_id,
        entry_id=item.entry_id,
        participant_id=item.participant_id,
        role=item.role,
        content=item.content,
        game_tick=int(item.game_tick),
        seq=int(item.seq),
        created_at=item.created_at,
        name=item.name,
        audience=None if item.audience is None else tuple(item.audience),
        visibility=item.visibility,
        kind=item.kind,
    )


def first_check_failed(exc: TransactWriteError) -> bool:
    """Whether a transaction was cancelled by the condition of its first item (the one that says
    "new" or "still there"), as opposed to a conflict or a failure."""
    reasons = exc.cancellation_reasons or []
    return bool(reasons) and reasons[0] is not None and reasons[0].code == "ConditionalCheckFailed"


def count_participants(
    tx: TransactWrite, owner: str, world_id: str, participants: Sequence[str], delta: int
) -> None:
    """Add `delta` to each participant's dialogue counter, in `tx`."""
    for p in participants:
        tx.update(
            ParticipantStatsItem(ParticipantDialogueItem.pk_for(owner, world_id, p), ParticipantStatsItem.SK),
            actions=[ParticipantStatsItem.dialogue_count.add(delta)],
            add_version_condition=False,
        )


def unavailable(exc: PynamoDBException, what: str) -> Exception:
    """StoreUnavailable (503) when retrying could help; any other failure stays itself (a bug, not "busy")."""
    return store_error(exc, f"storage failed while {what}; retry later")


# ------------------------------------------------------------------------------------------ dialogues


def get_dialogue(owner: str, world_id: str, dialogue_id: str) -> DialogueRecord | None:
    """One GetItem (strongly consistent): the dialogue, or None."""
    bind()
    try:
        item = DialogueMetaItem.get(
            DialogueMetaItem.pk_for(owner, world_id, dialogue_id), DialogueMetaItem.SK, consistent_read=True
        )
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise unavailable(exc, "reading a dialogue") from exc
    return dialogue_record(item)


def create_dialogue(
    owner: str, world_id: str, participants: tuple[str, ...], absent: tuple[str, ...] = ()
) -> bool:
    """Create a dialogue with its directory, index and counter items in one transaction.

    Returns True if this call created it, False if it already existed (a concurrent start won).
    """
    settings = bind()
    dialogue_id = dialogue_key(participants)
    now = _now()
    count = len(participants)
    meta = DialogueMetaItem(
        DialogueMetaItem.pk_for(owner, world_id, dialogue_id),
        DialogueMetaItem.SK,
        dialogue_id=dialogue_id,
        world_id=world_id,
        participants=list(participants),
        participant_count=count,
        next_seq=0,
        entry_count=0,
        created_at=now,
        updated_at=now,
        absent=list(absent) or None,
    )
    try:
        with TransactWrite(connection=connection(settings)) as tx:
            tx.save(meta, condition=DialogueMetaItem.pk.does_not_exist())
            tx.save(
                WorldDialogueItem(
                    WorldDialogueItem.pk_for(owner, world_id),
                    WorldDialogueItem.sk_for(dialogue_id),
                    dialogue_id=dialogue_id,
                    participants=list(participants),
                    created_at=now,
                )
            )
            count_in_world(tx, owner, world_id, now)
            count_participants(tx, owner, world_id, participants, 1)
            for p in participants:
                pk = ParticipantDialogueItem.pk_for(owner, world_id, p)
                tx.save(
                    ParticipantDialogueItem(
                        pk,
                        ParticipantDialogueItem.sk_for(count, dialogue_id),
                        dialogue_id=dialogue_id,
                        participants=list(participants),
                        participant_count=count,
                    )
                )
    except TransactWriteError as exc:
        if first_check_failed(exc):
            return False
        raise unavailable(exc, "creating a dialogue") from exc
    return True


def append_entry(
    owner: str, world_id: str, dialogue: DialogueRecord, entry: NewEntry, perceive: Perceive = everyone
) -> tuple[EntryRecord, bool]:
    """Store `entry` at the dialogue's next sequence; returns (record, created).

    One TransactWrite: put the entry, put its entry-id guard, bump `next_seq` only if it still has the
    value we read. A concurrent writer makes the bump fail; we re-read and retry, so equal-tick entries
    keep their arrival order and none is lost. A repeated `entry_id` returns the stored entry with
    created=False instead of writing it twice. `perceive` decides, from the dialogue as read, who perceived
    the entry (one witness row each, in the same transaction: at most 3 + 32 items) and whether it
    changes who is present; a retry after a stale read decides again from the fresh dialogue.
    """
    settings = bind()
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue.dialogue_id)
    entry_id = entry.entry_id or _new_entry_id()
    expected = dialogue.next_seq
    current = dialogue
    for attempt in range(_APPEND_ATTEMPTS):
        now = _now()
        sk = entry_sk(entry.game_tick, expected)
        seen = perceive(current)
        item = DialogueEntryItem(
            pk,
            sk,
            entry_id=entry_id,
            participant_id=entry.participant_id,
            role=entry.role,
            content=entry.content,
            game_tick=entry.game_tick,
            seq=expected,
            name=entry.name,
            created_at=now,
            audience=None if seen.audience is None else list(seen.audience),
            visibility=seen.visibility,
            kind=entry.kind,
        )
        record = entry_record(dialogue.dialogue_id, item)
        meta_actions: list[Any] = [
            DialogueMetaItem.next_seq.set(expected + 1),
            DialogueMetaItem.entry_count.add(1),
            DialogueMetaItem.updated_at.set(now),
        ]
        if seen.absent_after is not None:
            meta_actions.append(DialogueMetaItem.absent.set(list(seen.absent_after)))
        try:
            with TransactWrite(connection=connection(settings)) as tx:
                tx.save(item, condition=DialogueEntryItem.pk.does_not_exist())
                tx.save(
                    EntryIdGuardItem(pk, EntryIdGuardItem.sk_for(entry_id), entry_sk=sk),
                    condition=EntryIdGuardItem.pk.does_not_exist(),
                )
                tx.update(
                    DialogueMetaItem(pk, DialogueMetaItem.SK),
                    actions=meta_actions,
                    condition=DialogueMetaItem.next_seq == expected,
                    add_version_condition=False,
                )
                for witness in seen.witnesses:
                    tx.save(witness_item(owner, world_id, witness, record))
        except TransactWriteError as exc:
            reasons = exc.cancellation_reasons or []
            codes = [r.code if r is not None else None for r in reasons][:3]
            if len(codes) == 3 and codes[1] == "ConditionalCheckFailed":
                existing = entry_by_id(owner, world_id, dialogue.dialogue_id, entry_id)
                if existing is not None:
                    return existing, False
            # The sequence we read is stale: another writer took it (its entry exists, or the counter moved).
            if len(codes) == 3 and "ConditionalCheckFailed" in (codes[0], codes[2]):
                fresh = get_dialogue(owner, world_id, dialogue.dialogue_id)
                if fresh is None:
                    raise DialogueNotFound(f"dialogue {dialogue.dialogue_id!r} no longer exists") from exc
                expected = fresh.next_seq
                current = fresh
                # Jittered backoff: writers racing on one dialogue spread out instead of colliding again.
                time.sleep(random.uniform(0, min(0.2, 0.005 * 2**attempt)))  # noqa: S311
                continue
            raise unavailable(exc, "storing a dialogue entry") from exc
        return record, True
    raise Conflict(
        f"dialogue {dialogue.dialogue_id!r} is being written by many writers at once; retry",
        dialogue_id=dialogue.dialogue_id,
    )


def witness_item(owner: str, world_id: str, witness: str, e: EntryRecord) -> WitnessItem:
    """DLG-3: the pointer to entry `e` in the witness partition of `witness`."""
    return WitnessItem(
        WitnessItem.pk_for(owner, world_id, witness),
        WitnessItem.sk_for(e.game_tick, e.created_at, e.dialogue_id, e.seq),
        dialogue_id=e.dialogue_id,
        game_tick=e.game_tick,
        seq=e.seq,
        created_at=e.created_at,
    )


def _new_entry_id() -> str:
    return uuid.uuid4().hex


def entry_by_id(owner: str, world_id: str, dialogue_id: str, entry_id: str) -> EntryRecord | None:
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue_id)
    try:
        guard = EntryIdGuardItem.get(pk, EntryIdGuardItem.sk_for(entry_id), consistent_read=True)
        item = DialogueEntryItem.get(pk, guard.entry_sk, consistent_read=True)
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise unavailable(exc, "reading a dialogue entry") from exc
    return entry_record(dialogue_id, item)


# -------------------------------------------------------------------------------------------- reading


Hidden = tuple[tuple[int, str], ...]  # DLG-5: (game_tick, loaded_at) of each save load in effect


def _visible(model: type[DialogueEntryItem] | type[WitnessItem], viewer: str | None, hidden: Hidden) -> Any:
    """The filter of a read for `viewer` (DLG-3) on the loaded timeline (DLG-5); None: no filter."""
    condition: Any = None
    if viewer is not None:
        condition = DialogueEntryItem.audience.does_not_exist() | DialogueEntryItem.audience.contains(viewer)
    for tick, loaded_at in hidden:
        shown = ~((model.game_tick > tick) & (model.created_at < loaded_at))
        condition = shown if condition is None else condition & shown
    return condition


def newest_entries(
    owner: str, world_id: str, dialogue_id: str, limit: int, viewer: str | None = None, hidden: Hidden = ()
) -> list[EntryRecord]:
    """One Query, newest first with Limit=limit; returned oldest first (tick, then sequence).

    With `viewer` (DLG-3), only the entries that participant perceived: the same Query with a filter,
    paging further back only past entries the viewer did not perceive (whispers among others); so
    does `hidden` (DLG-5) past entries a loaded save left out of the timeline.
    """
    bind()
    if limit <= 0:
        return []
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue_id)
    perceived = _visible(DialogueEntryItem, viewer, hidden)
    try:
        items = list(
            DialogueEntryItem.query(
                pk,
                DialogueEntryItem.sk.startswith("E#"),
                filter_condition=perceived,
                scan_index_forward=False,
                limit=limit,
                page_size=limit if perceived is None else max(limit, _FILTERED_PAGE),
                consistent_read=True,
            )
        )
    except PynamoDBException as exc:
        raise unavailable(exc, "reading dialogue entries") from exc
    return [entry_record(dialogue_id, i) for i in reversed(items)]


def witnessed(
    owner: str, world_id: str, participant_id: str, limit: int, hidden: Hidden = ()
) -> list[EntryRecord]:
    """DLG-3: the newest `limit` entries this participant perceived, in any dialogue of the world,
    returned oldest first. One Query (Limit=limit) of its witness partition, then one BatchGetItem of
    those entries (limit <= 100): the cost does not depend on how many dialogues it was in nor on their
    length."""
    bind()
    if limit <= 0:
        return []
    try:
        rows = list(
            WitnessItem.query(
                WitnessItem.pk_for(owner, world_id, participant_id),
                WitnessItem.sk.startswith("E#"),
                filter_condition=_visible(WitnessItem, None, hidden),
                scan_index_forward=False,
                limit=limit,
                page_size=limit if not hidden else max(limit, _FILTERED_PAGE),
                consistent_read=True,
            )
        )
        keys = [
            (DialogueMetaItem.pk_for(owner, world_id, r.dialogue_id), entry_sk(int(r.game_tick), int(r.seq)))
            for r in rows
        ]
        found = {(i.pk, i.sk): i for i in DialogueEntryItem.batch_get(keys, consistent_read=True)}
    except PynamoDBException as exc:
        raise unavailable(exc, "reading what a participant witnessed") from exc
    # An entry deleted since (moderation) has no item left: its pointer is skipped.
    return [
        entry_record(r.dialogue_id, found[k])
        for r, k in zip(reversed(rows), reversed(keys), strict=True)
        if k in found
    ]


def participant_dialogue_counts(owner: str, world_id: str, participants: Sequence[str]) -> dict[str, int]:
    """BatchGetItem of each participant's counter item (absent = 0 dialogues)."""
    bind()
    keys = [
        (ParticipantDialogueItem.pk_for(owner, world_id, p), ParticipantStatsItem.SK) for p in participants
    ]
    by_pk = {k[0]: p for k, p in zip(keys, participants, strict=True)}
    counts = dict.fromkeys(participants, 0)
    try:
        for item in ParticipantStatsItem.batch_get(keys, consistent_read=True):
            counts[by_pk[item.pk]] = int(item.dialogue_count)
    except PynamoDBException as exc:
        raise unavailable(exc, "reading participant counters") from exc
    return counts


def dialogues_with_more_participants(
    owner: str, world_id: str, participant_id: str, more_than: int
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Query the participant's index for dialogues with more than `more_than` participants.

    The count is in the sort key, so smaller dialogues are never read. Yields (dialogue_id, participants).
    """
    bind()
    if more_than >= MAX_PARTICIPANTS:
        return
    pk = ParticipantDialogueItem.pk_for(owner, world_id, participant_id)
    # '$' sorts right after '#', so this range covers every DLG#<count>#... with count > more_than.
    low = f"DLG#{more_than + 1:02d}#"
    try:
        for item in ParticipantDialogueItem.query(
            pk, ParticipantDialogueItem.sk.between(low, "DLG$"), consistent_read=True
        ):
            yield item.dialogue_id, tuple(item.participants)
    except PynamoDBException as exc:
        raise unavailable(exc, "reading the participant index") from exc


def merge_newest(streams: Iterable[list[EntryRecord]], limit: int) -> list[EntryRecord]:
    """Newest `limit` entries across per-dialogue lists (each oldest first), returned oldest first.

    Order is `EntryRecord.sort_key` (tick, then arrival time, dialogue and sequence). Each list is at
    most `limit` long, so sorting it is cheap; the heap merge then costs O(limit * log(streams)).
    """
    if limit <= 0:
        return []
    ordered = [sorted(s, key=EntryRecord.sort_key, reverse=True) for s in streams]
    newest_first = heapq.merge(*ordered, key=EntryRecord.sort_key, reverse=True)
    picked: list[EntryRecord] = []
    for record in newest_first:
        picked.append(record)
        if len(picked) == limit:
            break
    picked.reverse()
    return picked
