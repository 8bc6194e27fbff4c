"""A valid request for each known route, with the ids it names substituted in (unknown routes: `{}`)."""

from __future__ import annotations

from typing import Any

WORLD_PARTICIPANTS = ["alice_pc", "bob_npc"]


def dialogue_entries(marker: str) -> dict[str, Any]:
    return {
        "participants": WORLD_PARTICIPANTS,
        "entries": [
            {"participant_id": "alice_pc", "role": "user", "content": f"{marker} hello", "game_tick": 10},
            {"participant_id": "bob_npc", "role": "character", "content": f"{marker} hi", "game_tick": 11},
        ],
    }


def body_for(route_key: str, ids: dict[str, str], marker: str = "sample") -> Any:
    """The JSON body (or text for the import route) a valid request of `route_key` would send."""
    conversation_id = ids.get("conversation_id", "")
    bodies: dict[str, Any] = {
        "POST /conversations": {"title": f"{marker} title", "system_prompt": f"{marker} system"},
        "POST /messages": {"conversation_id": conversation_id, "content": f"{marker} question"},
        "POST /conversations/{conversation_id}/window": {"content": f"{marker} prospective"},
        "POST /worlds/{world_id}/dialogues/entries": dialogue_entries(marker),
        "POST /worlds/{world_id}/prompt": {"participants": WORLD_PARTICIPANTS, "system_prompt": "npc"},
        "POST /worlds/{world_id}/import": "",
        "PATCH /conversations/{conversation_id}/messages/{message_id}": {"pinned": True},
        "PATCH /conversations/{conversation_id}": {"title": f"{marker} renamed"},
        "POST /conversations/{conversation_id}/messages/{message_id}/edit": {"content": f"{marker} edited"},
        "PUT /conversations/{conversation_id}/active": {"message_id": ids.get("message_id", "")},
        "POST /conversations/{conversation_id}/messages": {
            "messages": [{"role": "user", "content": f"{marker} appended"}]
        },
        "POST /v1/responses": {"model": "gpt-4o-mini", "conversation": conversation_id, "input": marker},
        "POST /v1/responses/input_tokens": {
            "model": "gpt-4o-mini",
            "conversation": conversation_id,
            "input": f"{marker} count",
        },
        "POST /v1/responses/compact": {"model": "gpt-4o-mini", "input": f"{marker} compact"},
        "POST /v1/conversations/{conversation_id}": {"metadata": {"topic": f"{marker} topic"}},
        "POST /v1/conversations/{conversation_id}/items": {
            "items": [{"type": "message", "role": "user", "content": f"{marker} item"}]
        },
        "PUT /memory/items": {
            "namespace": ["notes", marker],
            "key": "k",
            "value": {"text": f"{marker} memory"},
        },
    }
    return bodies.get(route_key, {})


QUERIES: dict[str, dict[str, str]] = {
    "GET /worlds/{world_id}/history": {"participants": ",".join(WORLD_PARTICIPANTS)},
    "GET /memory/items": {"namespace": "notes.sample", "key": "k"},
    "DELETE /memory/items": {"namespace": "notes.sample", "key": "k"},
    "GET /memory/search": {"q": "sample"},
}
