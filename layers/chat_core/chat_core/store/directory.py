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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pynamodb.exceptions import DoesNotExist, PynamoDBException, UpdateError
from pynamodb.transactions import TransactWrite

from chat_core.errors import Conflict, WorldDeleted
from chat_core.store.base import TableItem, bind, store_error
from chat_core.store.dialogue_items import WorldDialogueItem, WorldItem

_MAP_ATTEMPTS = 5


def world_key(owner: str, world_id: str) -> tuple[str, str]:
    """(pk, sk) of an owner's world item (DLG-2)."""
    return WorldItem.pk_for(owner), WorldItem.sk_for(world_id)


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


@dataclass(frozen=True)
class WorldState:
    """DLG-4/5: what the world item says: "live", "deleted", or "unknown" (no item: no dialogue yet, or
    a world older than world items); its saves and the loads in effect."""

    status: Literal["live", "deleted", "unknown"]
    saves: dict[str, dict[str, Any]] = field(default_factory=dict)
    loads: dict[str, dict[str, Any]] = field(default_factory=dict)

    def hidden(self) -> tuple[tuple[int, str], ...]:
        """DLG-5: (game_tick, loaded_at) per load in effect: entries with a later tick that were stored
        before that moment are not part of the loaded timeline."""
        # The tick as it was when loaded: overwriting the save later does not move what the load hid.
        return tuple(
            (int(load["game_tick"]), str(load["loaded_at"])) for _, load in sorted(self.loads.items())
        )


def world_state(owner: str, world_id: str) -> WorldState:
    """One GetItem (strongly consistent) of the world item."""
    bind()
    try:
        item = WorldItem.get(WorldItem.pk_for(owner), WorldItem.sk_for(world_id), consistent_read=True)
    except DoesNotExist:
        return WorldState("unknown")
    except PynamoDBException as exc:
        raise store_error(exc, "storage failed while reading a world; retry later") from exc
    status: Literal["live", "deleted"] = "live" if item.deleted_at is None else "deleted"
    return WorldState(status, dict(item.saves or {}), dict(item.loads or {}))


def set_save(owner: str, world_id: str, save_id: str, save: dict[str, Any] | None, now: str) -> None:
    """DLG-5: record a save (None: forget it, with its load) on the world item (made if missing)."""
    bind()
    actions: list[Any] = [
        TableItem.item_type.set(WorldItem),
        WorldItem.world_id.set(world_id),
        WorldItem.created_at.set(WorldItem.created_at | now),
    ]
    _update_world(owner, world_id, actions, save_id, save, "saves")


def set_load(owner: str, world_id: str, save_id: str, load: dict[str, Any] | None) -> None:
    """DLG-5: record a load of a save (`{"game_tick", "loaded_at"}`; None: revert it)."""
    bind()
    _update_world(owner, world_id, [], save_id, load, "loads")


def _update_world(
    owner: str, world_id: str, actions: list[Any], key: str, value: Any, attribute: str
) -> None:
    """Read-modify-write of one map attribute, guarded by the value read (a concurrent change retries)."""
    for _ in range(_MAP_ATTEMPTS):
        state = world_state(owner, world_id)
        if state.status == "deleted":
            raise WorldDeleted(f"world {world_id!r} was deleted", world_id=world_id)
        current = dict(state.saves if attribute == "saves" else state.loads)
        before = dict(current)
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
        column = WorldItem.saves if attribute == "saves" else WorldItem.loads
        # Empty maps are removed, so "none yet" is always "absent".
        guard = (
            column.does_not_exist() if not before else column == before
        ) & WorldItem.deleted_at.does_not_exist()
        try:
            WorldItem(WorldItem.pk_for(owner), WorldItem.sk_for(world_id)).update(
                actions=[*actions, column.set(current) if current else column.remove()],
                condition=guard,
                add_version_condition=False,
            )
        except UpdateError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                continue
            raise store_error(exc, "storage failed while saving a world; retry later") from exc
        return
    raise Conflict(f"world {world_id!r} is being changed by many requests at once; retry")


def mark_world_deleted(owner: str, world_id: str, now: str, expires_at: datetime) -> bool:
    """DLG-4: soft delete: the world item (made if the world predates it) records the deletion and the
    TTL that purges it. False when it was already deleted."""
    bind()
    try:
        WorldItem(WorldItem.pk_for(owner), WorldItem.sk_for(world_id)).update(
            actions=[
                TableItem.item_type.set(WorldItem),
                WorldItem.world_id.set(world_id),
                WorldItem.created_at.set(WorldItem.created_at | now),
                WorldItem.deleted_at.set(now),
                WorldItem.owner.set(owner),
                TableItem.expires_at.set(expires_at),
            ],
            condition=WorldItem.deleted_at.does_not_exist(),
            add_version_condition=False,
        )
    except UpdateError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise store_error(exc, "storage failed while deleting a world; retry later") from exc
    return True


def _page(
    query: Iterable[Any], limit: int, row: Callable[[Any], dict[str, Any]], what: str, id_field: str
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of `limit` rows (the query asks for one more, to know whether more remain) and the last
    id on it when they do."""
    try:
        found = [row(item) for item in query]
    except PynamoDBException as exc:
        raise store_error(exc, f"storage failed while listing {what}; retry later") from exc
    more = len(found) > limit
    return found[:limit], found[limit - 1][id_field] if more else None


def page_worlds(owner: str, limit: int, after: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """DLG-2: the owner's worlds by id, one Query; the page, and the last world id when more remain."""
    sk = WorldItem.sk
    condition = sk > WorldItem.sk_for(after) if after else sk.startswith("W#")
    query = WorldItem.query(
        WorldItem.pk_for(owner),
        condition,
        filter_condition=WorldItem.deleted_at.does_not_exist(),
        limit=limit + 1,
        consistent_read=True,
    )

    def row(w: WorldItem) -> dict[str, Any]:
        return {"world_id": w.world_id, "dialogues": int(w.dialogue_count or 0), "created_at": w.created_at}

    return _page(query, limit, row, "worlds", "world_id")


def page_world_dialogues(
    owner: str, world_id: str, limit: int, after: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """DLG-2: one world's dialogues (directory items) by id, one Query; the page, and the last id when
    more remain."""
    sk = WorldDialogueItem.sk
    condition = sk > WorldDialogueItem.sk_for(after) if after else sk.startswith("DLG#")
    pk = WorldDialogueItem.pk_for(owner, world_id)
    query = WorldDialogueItem.query(pk, condition, limit=limit + 1, consistent_read=True)

    def row(d: WorldDialogueItem) -> dict[str, Any]:
        return {
            "dialogue_id": d.dialogue_id,
            "participants": list(d.participants),
            "created_at": d.created_at,
        }

    return _page(query, limit, row, "dialogues", "dialogue_id")
