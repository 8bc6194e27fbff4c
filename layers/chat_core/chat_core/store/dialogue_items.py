"""The dialogue and world items of the one table (seed 004): worlds, their dialogues, entries, witnesses
and import jobs; key shapes live in `keys`. Nothing here talks to DynamoDB. `items` imports this module,
so a raw item of any kind reads back as its class wherever the table's items are read."""

from __future__ import annotations

from typing import Final

from pynamodb.attributes import (
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
)

from chat_core.store.base import TableItem
from chat_core.store.keys import escape_owner, world_prefix


class DialogueMetaItem(TableItem, discriminator="dialogue"):
    """One per dialogue: its participant set and the per-dialogue entry sequence."""

    dialogue_id = UnicodeAttribute()
    world_id = UnicodeAttribute()
    participants = ListAttribute[str]()
    participant_count = NumberAttribute()
    next_seq = NumberAttribute(default=0)
    entry_count = NumberAttribute(default=0)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    #: DLG-3: participants who left (or were not there at the start) and have not joined since.
    absent = ListAttribute[str](null=True)

    @classmethod
    def pk_for(cls, owner: str, world_id: str, dialogue_id: str) -> str:
        return f"{world_prefix(owner, world_id)}#DLG#{dialogue_id}"

    SK: Final = "~META"


class WorldItem(TableItem, discriminator="world"):
    """DLG-2: one per world of an owner (written with its first dialogue): the owner's worlds in one Query."""

    world_id = UnicodeAttribute()
    dialogue_count = NumberAttribute(default=0)
    created_at = UnicodeAttribute()
    #: DLG-4: set by DELETE /worlds/{id}, with `owner` (the purge checks the key against it) and the
    #: TTL `expires_at`; the table stream's removal of this item purges the world's partitions.
    deleted_at = UnicodeAttribute(null=True)
    owner = UnicodeAttribute(null=True)
    #: DLG-5 save games: {save_id: {"game_tick", "created_at"}}, and the saves loaded since
    #: ({save_id: loaded_at}): entries past a loaded save's tick stored before its load are hidden.
    saves = JSONAttribute(null=True)
    loads = JSONAttribute(null=True)

    @classmethod
    def pk_for(cls, owner: str) -> str:
        return f"USER#{escape_owner(owner)}#WORLDS"

    @classmethod
    def sk_for(cls, world_id: str) -> str:
        return f"W#{world_id}"


class ImportJobItem(TableItem, discriminator="import_job"):
    """DLG-6: one world import job, in the world's directory partition (purged with the world)."""

    job_id = UnicodeAttribute()
    mode = UnicodeAttribute()
    status = UnicodeAttribute()  # awaiting_upload, queued, running, done, failed
    object_key = UnicodeAttribute()
    #: Progress: the file's lines fully written (a resumed run skips them), bytes, what was written.
    lines_done = NumberAttribute(default=0)
    bytes_total = NumberAttribute(null=True)
    dialogues = NumberAttribute(default=0)
    entries = NumberAttribute(default=0)
    errors = JSONAttribute(null=True)  # [{"line", "message"}], the first 100
    error_count = NumberAttribute(default=0)
    runs = NumberAttribute(default=0)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    finished_at = UnicodeAttribute(null=True)

    @classmethod
    def sk_for(cls, job_id: str) -> str:
        return f"JOB#{job_id}"


class WorldDialogueItem(TableItem, discriminator="world_dialogue"):
    """World directory: lists a world's dialogues for export and the empty-world check of import."""

    dialogue_id = UnicodeAttribute()
    participants = ListAttribute[str]()
    created_at = UnicodeAttribute()

    @classmethod
    def pk_for(cls, owner: str, world_id: str) -> str:
        return f"{world_prefix(owner, world_id)}#DIR"

    @classmethod
    def sk_for(cls, dialogue_id: str) -> str:
        return f"DLG#{dialogue_id}"


class ParticipantDialogueItem(TableItem, discriminator="participant_dialogue"):
    """Inverted index: participant -> dialogue, with the dialogue's whole participant set."""

    dialogue_id = UnicodeAttribute()
    participants = ListAttribute[str]()
    participant_count = NumberAttribute()

    @classmethod
    def pk_for(cls, owner: str, world_id: str, participant_id: str) -> str:
        return f"{world_prefix(owner, world_id)}#P#{participant_id}"

    @classmethod
    def sk_for(cls, participant_count: int, dialogue_id: str) -> str:
        return f"DLG#{participant_count:02d}#{dialogue_id}"


class ParticipantStatsItem(TableItem, discriminator="participant_stats"):
    """How many dialogues a participant is in: lets retrieval start from the rarest participant."""

    dialogue_count = NumberAttribute(default=0)

    SK: Final = "~STATS"


class DialogueEntryItem(TableItem, discriminator="dialogue_entry"):
    """One line of a dialogue; the sort key orders by game tick, then by insertion sequence."""

    entry_id = UnicodeAttribute()
    participant_id = UnicodeAttribute()
    role = UnicodeAttribute()
    content = UnicodeAttribute()
    game_tick = NumberAttribute()
    seq = NumberAttribute()
    name = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    #: DLG-3: who perceived it, stored only when that is not every participant (absent: all of them).
    audience = ListAttribute[str](null=True)
    visibility = UnicodeAttribute(null=True)
    kind = UnicodeAttribute(null=True)  # "join" / "leave"; absent: a line


class WitnessItem(TableItem, discriminator="witness"):
    """DLG-3: a pointer to an entry in the partition of each participant who perceived it, in game-time
    order across all dialogues, so "what P witnessed" is one key-range Query (then one BatchGetItem of
    the entries). It holds keys only: a world's text is stored once, whatever the audiences."""

    dialogue_id = UnicodeAttribute()
    game_tick = NumberAttribute()
    seq = NumberAttribute()
    created_at = UnicodeAttribute()

    @classmethod
    def pk_for(cls, owner: str, world_id: str, participant_id: str) -> str:
        return f"{world_prefix(owner, world_id)}#WIT#{participant_id}"

    @classmethod
    def sk_for(cls, game_tick: int, created_at: str, dialogue_id: str, seq: int) -> str:
        # The order of EntryRecord.sort_key: tick, arrival time (fixed-width ISO), dialogue, sequence.
        return f"E#{game_tick:020d}#{created_at}#{dialogue_id}#{seq:010d}"


class EntryIdGuardItem(TableItem, discriminator="dialogue_entry_id"):
    """Makes an entry_id unique within its dialogue (retried queue deliveries never store twice)."""

    entry_sk = UnicodeAttribute()

    @classmethod
    def sk_for(cls, entry_id: str) -> str:
        return f"ID#{entry_id}"
