"""DLG-2: the owner's worlds and each world's dialogues, for browsing (the console's world picker).

| item            | pk                       | sk                |
|-----------------|--------------------------|-------------------|
| world           | USER#<o>#WORLDS          | W#<world_id>      |
| world directory | USER#<o>#WORLD#<w>#DIR   | DLG#<dialogue_id> |

The world item is written (type, id, first creation time, dialogue count) in the same transaction that
creates or restores each of its dialogues (store/dialogues.py); worlds whose dialogues were all created
before it existed are not listed, but open by id as before.
"""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import PynamoDBException
from pynamodb.transactions import TransactWrite

from chat_core.store.base import TableItem, store_error
from chat_core.store.items import WorldDialogueItem, WorldItem


def count_in_world(tx: TransactWrite, owner: str, world_id: str, now: str) -> None:
    """DLG-2: the owner's world item (created with the world's first dialogue) counts its dialogues."""
    tx.update(
        WorldItem(WorldItem.pk_for(owner), WorldItem.sk_for(world_id)),
        actions=[
            TableItem.item_type.set(WorldItem),
            WorldItem.world_id.set(world_id),
            WorldItem.created_at.set(WorldItem.created_at | now),
            WorldItem.dialogue_count.add(1),
        ],
        add_version_condition=False,
    )


def page_worlds(owner: str, limit: int, after: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """DLG-2: the owner's worlds by id, one Query; returns the page and the last world id when more remain."""
    condition = WorldItem.sk > WorldItem.sk_for(after) if after else WorldItem.sk.startswith("W#")
    try:
        found: list[dict[str, Any]] = [
            {"world_id": w.world_id, "dialogues": int(w.dialogue_count or 0), "created_at": w.created_at}
            for w in WorldItem.query(
                WorldItem.pk_for(owner), condition, limit=limit + 1, consistent_read=True
            )
        ]
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while listing worlds; retry later") from exc
    more = len(found) > limit
    return found[:limit], found[limit - 1]["world_id"] if more else None


def page_world_dialogues(
    owner: str, world_id: str, limit: int, after: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """DLG-2: one world's dialogues (directory items) by id, one Query; the page, and the last id when
    more remain."""
    pk = WorldDialogueItem.pk_for(owner, world_id)
    condition = (
        WorldDialogueItem.sk > WorldDialogueItem.sk_for(after)
        if after
        else WorldDialogueItem.sk.startswith("DLG#")
    )
    try:
        found: list[dict[str, Any]] = [
            {"dialogue_id": d.dialogue_id, "participants": list(d.participants), "created_at": d.created_at}
            for d in WorldDialogueItem.query(pk, condition, limit=limit + 1, consistent_read=True)
        ]
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while listing dialogues; retry later") from exc
    more = len(found) > limit
    return found[:limit], found[limit - 1]["dialogue_id"] if more else None
