"""A world's dialogues as a whole (DLG-1 save/load): list, read whole, restore exactly as exported.

Same item layout as `store.dialogues`; Query, BatchWriteItem and one TransactWrite per restored dialogue.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from chat_core.errors import Conflict
from chat_core.store.base import TableItem, bind, connection
from chat_core.store.dialogues import (
    DialogueRecord,
    EntryRecord,
    dialogue_record,
    entry_record,
    unavailable,
    witness_item,
)
from chat_core.store.items import (
    DialogueEntryItem,
    DialogueMetaItem,
    EntryIdGuardItem,
    ParticipantDialogueItem,
    ParticipantStatsItem,
    WorldDialogueItem,
)
from chat_core.store.keys import entry_sk
from chat_core.store.worlds import count_in_world


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

    Batched writes (25 per request, retried by PynamoDB); the meta item goes last so a half-finished
    restore is visible as a missing dialogue, not as a dialogue with missing entries. The participant
    counters use an atomic ADD so dialogues restored side by side don't overwrite each other's counts.
    """
    settings = bind()
    participants = dialogue.participants
    dialogue_id = dialogue.dialogue_id
    pk = DialogueMetaItem.pk_for(owner, world_id, dialogue_id)
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
                        ParticipantDialogueItem.sk_for(count, dialogue_id),
                        dialogue_id=dialogue_id,
                        participants=list(participants),
                        participant_count=count,
                    )
                )
        with TransactWrite(connection=connection(settings)) as tx:
            tx.save(
                DialogueMetaItem(
                    pk,
                    DialogueMetaItem.SK,
                    dialogue_id=dialogue_id,
                    world_id=world_id,
                    participants=list(participants),
                    participant_count=count,
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
            for p in participants:
                tx.update(
                    ParticipantStatsItem(
                        ParticipantDialogueItem.pk_for(owner, world_id, p), ParticipantStatsItem.SK
                    ),
                    actions=[ParticipantStatsItem.dialogue_count.add(1)],
                    add_version_condition=False,
                )
    except TransactWriteError as exc:
        reasons = exc.cancellation_reasons or []
        if reasons and reasons[0] is not None and reasons[0].code == "ConditionalCheckFailed":
            raise Conflict(f"dialogue {dialogue_id!r} already exists in world {world_id!r}") from exc
        raise unavailable(exc, "restoring a dialogue") from exc
    except PynamoDBException as exc:
        raise unavailable(exc, "restoring a dialogue") from exc
