"""A world's dialogues as a whole: list, read whole, restore exactly as exported (DLG-1 save/load);
delete an entry, a dialogue, purge a deleted world (DLG-4).

Same item layout as `store.dialogues`; Query, BatchWriteItem and TransactWrite.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from chat_core.errors import Conflict, DialogueNotFound, EntryNotFound
from chat_core.store.base import TableItem, bind, connection
from chat_core.store.dialogue_items import (
    DialogueEntryItem,
    DialogueMetaItem,
    EntryIdGuardItem,
    ParticipantDialogueItem,
    WitnessItem,
    WorldDialogueItem,
    WorldItem,
)
from chat_core.store.dialogues import (
    DialogueRecord,
    EntryRecord,
    count_participants,
    dialogue_record,
    entry_record,
    first_check_failed,
    unavailable,
    witness_item,
)
from chat_core.store.directory import count_in_world
from chat_core.store.keys import entry_sk
from chat_core.store.partitions import delete_partition


def world_dialogue_ids(owner: str, world_id: str) -> Iterator[str]:
    """Query the world directory: every dialogue id of the world, in id order."""
    bind()
    try:
        for item in WorldDialogueItem.query(
            WorldDialogueItem.pk_for(owner, world_id),
            WorldDialogueItem.sk.startswith("DLG#"),
            consistent_read=True,
        ):
            yield item.dialogue_id
    except PynamoDBException as exc:
        raise unavailable(exc, "listing a world's dialogues") from exc


def world_is_empty(owner: str, world_id: str) -> bool:
    """One Query with Limit=1 on the world directory."""
    bind()
    try:
        return not any(
            WorldDialogueItem.query(
                WorldDialogueItem.pk_for(owner, world_id),
                WorldDialogueItem.sk.startswith("DLG#"),
                limit=1,
                consistent_read=True,
            )
        )
    except PynamoDBException as exc:
        raise unavailable(exc, "reading a world") from exc


def read_dialogue(
    owner: str, world_id: str, dialogue_id: str
) -> tuple[DialogueRecord, list[EntryRecord]] | None:
    """The whole dialogue partition with one (paginated) Query: meta and every entry in tick order."""
    bind()
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue_id)
    meta: DialogueRecord | None = None
    entries: list[EntryRecord] = []
    try:
        for item in TableItem.query(pk, consistent_read=True):
            if isinstance(item, DialogueEntryItem):
                entries.append(entry_record(dialogue_id, item))
            elif isinstance(item, DialogueMetaItem):
                meta = dialogue_record(item)
    except PynamoDBException as exc:
        raise unavailable(exc, "reading a dialogue") from exc
    if meta is None:
        return None
    return meta, entries


def restore_dialogue(
    owner: str, world_id: str, dialogue: DialogueRecord, entries: Sequence[EntryRecord]
) -> None:
    """Write a dialogue exactly as exported (ids, sequences, timestamps) into a world that lacks it.

    The entries first, then the dialogue item, so a half-finished restore is visible as a missing
    dialogue, not as a dialogue with missing entries. Conflict when the world already has it.
    """
    put_entries(owner, world_id, dialogue, entries)
    if not put_dialogue(owner, world_id, dialogue):
        raise Conflict(f"dialogue {dialogue.dialogue_id!r} already exists in world {world_id!r}")


def put_entries(owner: str, world_id: str, dialogue: DialogueRecord, entries: Sequence[EntryRecord]) -> None:
    """Entries exactly as exported, with their id guards and witness rows, and the dialogue's
    participant-index items: BatchWriteItem, 25 a request (retried by PynamoDB). Idempotent: writing the
    same entries again writes the same items (DLG-6: a re-run import makes no second copy)."""
    bind()
    participants = dialogue.participants
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue.dialogue_id)
    count = len(participants)
    try:
        with TableItem.batch_write() as batch:
            for e in entries:
                sk = entry_sk(e.game_tick, e.seq)
                batch.save(
                    DialogueEntryItem(
                        pk,
                        sk,
                        entry_id=e.entry_id,
                        participant_id=e.participant_id,
                        role=e.role,
                        content=e.content,
                        game_tick=e.game_tick,
                        seq=e.seq,
                        name=e.name,
                        created_at=e.created_at,
                        audience=None if e.audience is None else list(e.audience),
                        visibility=e.visibility,
                        kind=e.kind,
                    )
                )
                batch.save(EntryIdGuardItem(pk, EntryIdGuardItem.sk_for(e.entry_id), entry_sk=sk))
                for witness in e.audience or participants:
                    batch.save(witness_item(owner, world_id, witness, e))
            for p in participants:
                batch.save(
                    ParticipantDialogueItem(
                        ParticipantDialogueItem.pk_for(owner, world_id, p),
                        ParticipantDialogueItem.sk_for(count, dialogue.dialogue_id),
                        dialogue_id=dialogue.dialogue_id,
                        participants=list(participants),
                        participant_count=count,
                    )
                )
    except PynamoDBException as exc:
        raise unavailable(exc, "restoring dialogue entries") from exc


def put_dialogue(owner: str, world_id: str, dialogue: DialogueRecord) -> bool:
    """The dialogue item as exported, its directory item, and the counts (participants', the world's)
    in one TransactWrite conditioned on the dialogue being new; False (nothing written, nothing counted
    twice) when the world already has it. The counters use an atomic ADD so dialogues restored side by
    side don't overwrite each other's counts."""
    settings = bind()
    participants = dialogue.participants
    dialogue_id = dialogue.dialogue_id
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue_id)
    try:
        with TransactWrite(connection=connection(settings)) as tx:
            tx.save(
                DialogueMetaItem(
                    pk,
                    DialogueMetaItem.SK,
                    dialogue_id=dialogue_id,
                    world_id=world_id,
                    participants=list(participants),
                    participant_count=len(participants),
                    next_seq=dialogue.next_seq,
                    entry_count=dialogue.entry_count,
                    created_at=dialogue.created_at,
                    updated_at=dialogue.updated_at,
                    absent=list(dialogue.absent) or None,
                ),
                condition=DialogueMetaItem.pk.does_not_exist(),
            )
            tx.save(
                WorldDialogueItem(
                    WorldDialogueItem.pk_for(owner, world_id),
                    WorldDialogueItem.sk_for(dialogue_id),
                    dialogue_id=dialogue_id,
                    participants=list(participants),
                    created_at=dialogue.created_at,
                )
            )
            count_in_world(tx, owner, world_id, dialogue.created_at)
            count_participants(tx, owner, world_id, participants, 1)
    except TransactWriteError as exc:
        if first_check_failed(exc):
            return False
        raise unavailable(exc, "restoring a dialogue") from exc
    return True


# ------------------------------------------------------------------------------------------ deleting


def _witness_keys(
    owner: str, world_id: str, e: EntryRecord, participants: Sequence[str]
) -> list[WitnessItem]:
    """The witness rows of an entry (whoever perceived it; for older entries every participant, whose
    rows may not exist: deleting a missing item is harmless)."""
    sk = WitnessItem.sk_for(e.game_tick, e.created_at, e.dialogue_id, e.seq)
    return [WitnessItem(WitnessItem.pk_for(owner, world_id, p), sk) for p in e.audience or participants]


def delete_entry(owner: str, world_id: str, dialogue: DialogueRecord, entry: EntryRecord) -> None:
    """DLG-4 (moderation): one TransactWrite removes the entry, its id guard and its witness rows and
    counts it out of the dialogue (its sequence number is not reused)."""
    settings = bind()
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue.dialogue_id)
    try:
        with TransactWrite(connection=connection(settings)) as tx:
            tx.delete(
                DialogueEntryItem(pk, entry_sk(entry.game_tick, entry.seq)),
                condition=DialogueEntryItem.pk.exists(),
            )
            tx.delete(EntryIdGuardItem(pk, EntryIdGuardItem.sk_for(entry.entry_id)))
            for row in _witness_keys(owner, world_id, entry, dialogue.participants):
                tx.delete(row)
            tx.update(
                DialogueMetaItem(pk, DialogueMetaItem.SK),
                actions=[DialogueMetaItem.entry_count.add(-1)],
                add_version_condition=False,
            )
    except TransactWriteError as exc:
        if first_check_failed(exc):
            raise EntryNotFound(f"no entry {entry.entry_id!r} in dialogue {dialogue.dialogue_id!r}") from exc
        raise unavailable(exc, "deleting a dialogue entry") from exc


def delete_dialogue(owner: str, world_id: str, dialogue: DialogueRecord, in_world_item: bool) -> int:
    """DLG-4: delete a dialogue; returns how many entries went.

    Its entries, id guards and witness rows go first (BatchWriteItem, 25 a request), then one
    TransactWrite removes the dialogue item, its directory and participant-index items and counts it
    out of its participants and its world (`in_world_item`: the world has a world item). A delete that
    fails part way leaves the dialogue listed with fewer entries; repeating the delete finishes it.
    """
    settings = bind()
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue.dialogue_id)
    entries = 0
    try:
        with TableItem.batch_write() as batch:
            for item in TableItem.query(pk, consistent_read=True):
                if isinstance(item, DialogueMetaItem):
                    continue
                if isinstance(item, DialogueEntryItem):
                    entries += 1
                    for row in _witness_keys(
                        owner, world_id, entry_record(dialogue.dialogue_id, item), dialogue.participants
                    ):
                        batch.delete(row)
                batch.delete(item)
        count = len(dialogue.participants)
        with TransactWrite(connection=connection(settings)) as tx:
            tx.delete(DialogueMetaItem(pk, DialogueMetaItem.SK), condition=DialogueMetaItem.pk.exists())
            tx.delete(
                WorldDialogueItem(
                    WorldDialogueItem.pk_for(owner, world_id), WorldDialogueItem.sk_for(dialogue.dialogue_id)
                )
            )
            for p in dialogue.participants:
                index_pk = ParticipantDialogueItem.pk_for(owner, world_id, p)
                tx.delete(
                    ParticipantDialogueItem(
                        index_pk, ParticipantDialogueItem.sk_for(count, dialogue.dialogue_id)
                    )
                )
            count_participants(tx, owner, world_id, dialogue.participants, -1)
            if in_world_item:
                tx.update(
                    WorldItem(WorldItem.pk_for(owner), WorldItem.sk_for(world_id)),
                    actions=[WorldItem.dialogue_count.add(-1)],
                    add_version_condition=False,
                )
    except TransactWriteError as exc:
        if first_check_failed(exc):
            raise DialogueNotFound(f"no dialogue {dialogue.dialogue_id!r} in world {world_id!r}") from exc
        raise unavailable(exc, "deleting a dialogue") from exc
    except PynamoDBException as exc:
        raise unavailable(exc, "deleting a dialogue") from exc
    return entries


def purge_world(owner: str, world_id: str) -> int:
    """DLG-4: delete every item of a deleted world; returns how many. Each dialogue's partition, then
    the index and witness partitions of everyone in them, the directory last (so a purge that fails
    part way is finished by running it again: what is left is still listed)."""
    bind()
    participants: set[str] = set()
    deleted = 0
    try:
        directory = list(
            WorldDialogueItem.query(
                WorldDialogueItem.pk_for(owner, world_id),
                WorldDialogueItem.sk.startswith("DLG#"),
                consistent_read=True,
            )
        )
    except PynamoDBException as exc:
        raise unavailable(exc, "purging a world") from exc
    for d in directory:
        participants.update(d.participants)
        deleted += delete_partition(DialogueMetaItem.pk_for(owner, world_id, d.dialogue_id)).deleted
    for p in sorted(participants):
        deleted += delete_partition(ParticipantDialogueItem.pk_for(owner, world_id, p)).deleted
        deleted += delete_partition(WitnessItem.pk_for(owner, world_id, p)).deleted
    deleted += delete_partition(WorldDialogueItem.pk_for(owner, world_id)).deleted
    return deleted
