"""Save games (DLG-5): a world's snapshot at a game tick, loaded and reverted as a game's saves are.

`save` records a save id at a tick (the same id again overwrites it, as a game overwrites a save slot).
`load` makes the world's history the loaded timeline: every entry past the save's tick that was stored
before the load disappears from history, witness lists and prompts; entries stored after the load (the
story as it goes on from the save) are there as usual. `revert` undoes a load: the hidden entries come
back. Nothing is deleted, so a load costs one write and a revert one more; reads filter by the loads in
effect, which come with the GetItem every world route already makes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.dialogue.gametime import check_tick
from chat_core.dialogue.worlds import live
from chat_core.errors import InvalidInput, SaveNotFound
from chat_core.store import directory as store
from chat_core.store.dialogues import validate_world_id

MAX_SAVES: Final = 100
_SAVE_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


def validate_save_id(save_id: object) -> str:
    """A save id: 1-64 characters of A-Z a-z 0-9 _ . : - starting with a letter or digit."""
    if not isinstance(save_id, str) or not _SAVE_ID.fullmatch(save_id):
        raise InvalidInput(
            "save_id must be 1-64 characters of letters, digits, '_', '.', ':', '-' starting with a letter "
            "or digit",
            field="save_id",
        )
    return save_id


def _now() -> str:
    # The format of entries' created_at, so "stored before the load" is a string comparison.
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _row(save_id: str, save: dict[str, Any], load: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "save_id": save_id,
        "game_tick": int(save["game_tick"]),
        "created_at": save["created_at"],
        "loaded_at": None if load is None else load["loaded_at"],
    }


def save(owner: str, world_id: str, save_id: str, game_tick: object) -> dict[str, Any]:
    """POST /worlds/{world_id}/saves: record `save_id` at `game_tick`; answers it and whether it
    replaced an earlier save of that id."""
    world_id = validate_world_id(world_id)
    save_id = validate_save_id(save_id)
    tick = check_tick(game_tick)
    state = live(owner, world_id, writing=True)
    if save_id not in state.saves and len(state.saves) >= MAX_SAVES:
        raise InvalidInput(f"world {world_id!r} has {MAX_SAVES} saves, the limit", field="save_id")
    now = _now()
    record: dict[str, Any] = {"game_tick": tick, "created_at": now}
    store.set_save(owner, world_id, save_id, record, now)
    return {
        "world_id": world_id,
        **_row(save_id, record, state.loads.get(save_id)),
        "replaced": save_id in state.saves,
    }


def list_saves(owner: str, world_id: str) -> dict[str, Any]:
    """GET /worlds/{world_id}/saves: every save by tick, with when it was loaded (null: not loaded)."""
    world_id = validate_world_id(world_id)
    state = live(owner, world_id)
    rows = [_row(k, v, state.loads.get(k)) for k, v in state.saves.items()]
    rows.sort(key=lambda r: (r["game_tick"], r["save_id"]))
    return {"world_id": world_id, "saves": rows}


def load(owner: str, world_id: str, save_id: str) -> dict[str, Any]:
    """POST /worlds/{world_id}/saves/{save_id}/load: from now on history is the save's timeline."""
    world_id = validate_world_id(world_id)
    save_id = validate_save_id(save_id)
    state = live(owner, world_id, writing=True)
    found = _find(state, world_id, save_id)
    record = {"game_tick": int(found["game_tick"]), "loaded_at": _now()}
    store.set_load(owner, world_id, save_id, record)
    return {"world_id": world_id, **_row(save_id, found, record)}


def revert(owner: str, world_id: str, save_id: str) -> dict[str, Any]:
    """DELETE /worlds/{world_id}/saves/{save_id}/load: undo the load; what it hid is back."""
    world_id = validate_world_id(world_id)
    save_id = validate_save_id(save_id)
    state = live(owner, world_id, writing=True)
    found = _find(state, world_id, save_id)
    if save_id not in state.loads:
        raise SaveNotFound(f"save {save_id!r} of world {world_id!r} is not loaded", save_id=save_id)
    store.set_load(owner, world_id, save_id, None)
    return {"world_id": world_id, **_row(save_id, found, None)}


def _find(state: store.WorldState, world_id: str, save_id: str) -> dict[str, Any]:
    found = state.saves.get(save_id)
    if found is None:
        raise SaveNotFound(f"no save {save_id!r} in world {world_id!r}", save_id=save_id)
    return found
