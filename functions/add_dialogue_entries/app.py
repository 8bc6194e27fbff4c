"""POST /worlds/{world_id}/dialogues/entries: append game-timed lines to a participant-set dialogue."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import entries
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.dialogue_schemas import AddEntriesIn
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/dialogues/entries")
def add_dialogue_entries(world_id: str, body: AddEntriesIn) -> Response[Any]:
    added = entries.add_entries(
        caller(app), world_id, body.target(), body.entry_dicts(), present=body.present
    )
    created = sum(1 for a in added if a.created)
    result = {
        "world_id": world_id,
        "dialogue_id": added[0].entry.dialogue_id,
        "entries": [a.entry.to_dict() for a in added],
        "created": created,
        "duplicates": len(added) - created,
    }
    # A replay whose entry_ids were all stored before changes nothing: 200, like a read.
    return json_response(201 if created else 200, result)


lambda_handler = http_entry(app)
