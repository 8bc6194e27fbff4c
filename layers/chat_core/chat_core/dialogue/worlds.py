"""DLG-2: browsing dialogue memory: the caller's worlds, and the dialogues of one world.

Both are one Query on the caller's own partition; the cursor is the last id of the page (a position in
the caller's own keys, validated like any id, so it cannot reach anyone else's items).
"""

from __future__ import annotations

from typing import Any, Final

from chat_core.store import worlds as store
from chat_core.store.dialogues import validate_dialogue_id, validate_world_id

MAX_PAGE: Final = 100


def list_worlds(owner: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
    """GET /worlds: the caller's worlds by id (`dialogues`: how many), `next_cursor` when more remain."""
    after = validate_world_id(cursor) if cursor is not None else None
    items, last = store.page_worlds(owner, limit, after)
    return {"items": items, "next_cursor": last}


def list_dialogues(owner: str, world_id: str, *, limit: int, cursor: str | None = None) -> dict[str, Any]:
    """GET /worlds/{world_id}/dialogues: the world's dialogues by id with their participants."""
    world_id = validate_world_id(world_id)
    after = validate_dialogue_id(cursor) if cursor is not None else None
    items, last = store.page_world_dialogues(owner, world_id, limit, after)
    return {"world_id": world_id, "items": items, "next_cursor": last}
