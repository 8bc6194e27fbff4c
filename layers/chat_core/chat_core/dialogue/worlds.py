"""DLG-2: browsing dialogue memory (the caller's worlds, the dialogues of one world); DLG-4: deleting a
world (soft, then purged), a dialogue or one entry.

Listings are one Query on the caller's own partition; the cursor is the last id of the page (a position
in the caller's own keys, validated like any id, so it cannot reach anyone else's items). Every key
holds the owner, so another user's world, dialogue or entry is simply not found (404).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from chat_core.errors import DialogueNotFound, EntryNotFound, WorldDeleted, WorldNotFound
from chat_core.settings import get_settings
from chat_core.store import dialogues as dialogue_store
from chat_core.store import directory as store
from chat_core.store import world_io
from chat_core.store.dialogues import validate_dialogue_id, validate_entry_id, validate_world_id
from chat_core.store.directory import WorldState

MAX_PAGE: Final = 100


def live(owner: str, world_id: str, *, writing: bool = False) -> WorldState:
    """DLG-4: refuse a deleted world: reads answer 404 (it is gone), writes 409 (the id is still held
    until the purge). One GetItem, whose answer also says which saves are loaded (DLG-5)."""
    state = store.world_state(owner, world_id)
    if state.status != "deleted":
        return state
    if writing:
        raise WorldDeleted(
            f"world {world_id!r} was deleted and is waiting to be purged; write into another world id",
            world_id=world_id,
        )
    raise WorldNotFound(f"no world {world_id!r}", world_id=world_id)


def list_worlds(owner: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
    """GET /worlds: the caller's worlds by id (`dialogues`: how many), `next_cursor` when more remain."""
    after = validate_world_id(cursor) if cursor is not None else None
    items, last = store.page_worlds(owner, limit, after)
    return {"items": items, "next_cursor": last}


def list_dialogues(owner: str, world_id: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
    """GET /worlds/{world_id}/dialogues: the world's dialogues by id with their participants."""
    world_id = validate_world_id(world_id)
    after = validate_dialogue_id(cursor) if cursor is not None else None
    live(owner, world_id)
    items, last = store.page_world_dialogues(owner, world_id, limit, after)
    return {"world_id": world_id, "items": items, "next_cursor": last}


def delete_world(owner: str, world_id: str) -> dict[str, Any]:
    """DELETE /worlds/{world_id}: gone from every route at once; its items are purged once the world
    item's TTL (RETENTION_DAYS) removes it, through the table stream, as deleted conversations are."""
    world_id = validate_world_id(world_id)
    state = store.world_state(owner, world_id).status
    if state == "deleted" or (state == "unknown" and world_io.world_is_empty(owner, world_id)):
        raise WorldNotFound(f"no world {world_id!r}", world_id=world_id)
    now = datetime.now(UTC)
    purge_after = now + timedelta(days=get_settings().retention_days)
    if not store.mark_world_deleted(owner, world_id, _iso(now), purge_after):
        raise WorldNotFound(f"no world {world_id!r}", world_id=world_id)
    return {"world_id": world_id, "deleted_at": _iso(now), "purge_after": _iso(purge_after)}


def delete_dialogue(owner: str, world_id: str, dialogue_id: str) -> dict[str, Any]:
    """DELETE /worlds/{world_id}/dialogues/{dialogue_id}: the dialogue, its entries and their witness
    rows, at once (see `world_io.delete_dialogue`)."""
    world_id = validate_world_id(world_id)
    dialogue = _dialogue(owner, world_id, dialogue_id)
    in_world_item = store.world_state(owner, world_id).status == "live"
    entries = world_io.delete_dialogue(owner, world_id, dialogue, in_world_item)
    return {"world_id": world_id, "dialogue_id": dialogue.dialogue_id, "entries_deleted": entries}


def delete_entry(owner: str, world_id: str, dialogue_id: str, entry_id: str) -> dict[str, Any]:
    """DELETE /worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id} (moderation): the entry is
    gone from history, prompts, witness lists and exports; the rest of the dialogue is unchanged."""
    world_id = validate_world_id(world_id)
    entry_id = validate_entry_id(entry_id)
    dialogue = _dialogue(owner, world_id, dialogue_id)
    entry = dialogue_store.entry_by_id(owner, world_id, dialogue.dialogue_id, entry_id)
    if entry is None:
        raise EntryNotFound(f"no entry {entry_id!r} in dialogue {dialogue.dialogue_id!r}", entry_id=entry_id)
    world_io.delete_entry(owner, world_id, dialogue, entry)
    return {"world_id": world_id, "dialogue_id": dialogue.dialogue_id, "deleted": entry.to_dict()}


def _dialogue(owner: str, world_id: str, dialogue_id: str) -> dialogue_store.DialogueRecord:
    dialogue_id = validate_dialogue_id(dialogue_id)
    live(owner, world_id)
    found = dialogue_store.get_dialogue(owner, world_id, dialogue_id)
    if found is None:
        raise DialogueNotFound(
            f"no dialogue {dialogue_id!r} in world {world_id!r}", dialogue_id=dialogue_id, world_id=world_id
        )
    return found


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
