"""MEM-5 over `make run`'s server: every stored message is searchable soon after its 201, whatever stored
it (the append route without an answer, the Conversations API's items), and recallable into a window;
dialogue lines (a posted entry, an imported world) are recallable into a prompt at once (MEM-45); a
deleted message, a deleted conversation and a `store: false` turn never are."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.local_server import ServerProcess, settle_streams

pytestmark = pytest.mark.e2e

#: How long the stream's delivery may take on a busy machine (a deadline, not a figure asserted).
DEADLINE_S = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("findable"), args=["--no-persist"]).start()
    yield process
    process.stop()


def _client(server: ServerProcess, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"X-User-Id": user}, timeout=60.0)


def _search(client: httpx.Client, query: str) -> list[dict[str, Any]]:
    answer = client.get("/memory/search", params={"q": query})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["results"])


def _found_within(client: httpx.Client, query: str, conversation_id: str) -> list[dict[str, Any]]:
    """The search's hits in `conversation_id`, once there are any (fails at the deadline)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        hits = [r for r in _search(client, query) if r["conversation_id"] == conversation_id]
        if hits:
            return hits
        assert time.monotonic() < deadline, f"{query!r} not searchable in {DEADLINE_S} s"
        time.sleep(0.1)


def test_mem5_a_message_appended_without_an_answer_is_searchable_and_recalled(server: ServerProcess) -> None:
    """MEM-5, MEM-11: the append route with no answer after it; the stream indexes the message by itself."""
    with _client(server, "findable-append") as client:
        # Given a conversation with recall on, and 12 messages appended (no model answer, ever)
        created = client.post("/conversations", json={"window_policy": {"recall": True}})
        assert created.status_code == 201, created.text
        cid = created.json()["conversation_id"]
        messages = [{"role": "user", "content": "My cat is called Mochi"}] + [
            {"role": "user", "content": f"note {n} about the weather"} for n in range(11)
        ]
        appended = client.post(f"/conversations/{cid}/messages", json={"messages": messages})
        assert appended.status_code == 201, appended.text
        # When the caller searches for a word of the first
        hits = _found_within(client, "Mochi", cid)
        # Then it is found, and a window about the cat recalls it from beyond the recency window
        assert hits[0]["seq"] == 1
        window = client.post(f"/conversations/{cid}/window", json={"content": "what is my cat called?"})
        assert window.status_code == 200, window.text
        entries = {e["seq"]: e for e in window.json()["inspect"]["entries"]}
        assert entries[1]["state"] == "recalled"


def test_mem5_conversation_items_are_searchable(server: ServerProcess) -> None:
    """MEM-5: POST /v1/conversations/{id}/items (the OpenAI Conversations API) stores messages the
    stream indexes without any answer."""
    with _client(server, "findable-items") as client:
        # Given a conversation of the Conversations API
        created = client.post("/v1/conversations", json={})
        assert created.status_code == 200, created.text
        cid = created.json()["id"]
        # When an item is added
        item = {"type": "message", "role": "user", "content": "The spare key hides under the heron statue"}
        added = client.post(f"/v1/conversations/{cid}/items", json={"items": [item]})
        assert added.status_code == 200, added.text
        # Then a search finds it (our own routes show the bare id, RSP-6)
        assert _found_within(client, "heron statue", cid.removeprefix("conv_"))


def test_mem5_deleted_unstored_and_deleted_conversations_are_never_searchable(server: ServerProcess) -> None:
    """MEM-5, RSP-9: a deleted message, a deleted conversation's messages and a `store: false` turn are
    never found, once the stream has delivered them (a message appended after them is)."""
    with _client(server, "findable-gone") as client:
        # Given a message appended then deleted
        created = client.post("/conversations", json={})
        cid = created.json()["conversation_id"]
        stored = client.post(
            f"/conversations/{cid}/messages", json={"messages": [{"role": "user", "content": "zanzibar"}]}
        )
        assert stored.status_code == 201, stored.text
        message_id = stored.json()["messages"][0]["message_id"]
        assert client.delete(f"/conversations/{cid}/messages/{message_id}").status_code in (200, 204)
        # And a conversation whose message is appended, then the conversation deleted
        other = client.post("/conversations", json={}).json()["conversation_id"]
        body = {"messages": [{"role": "user", "content": "quetzalcoatl"}]}
        assert client.post(f"/conversations/{other}/messages", json=body).status_code == 201
        assert client.delete(f"/conversations/{other}").status_code in (200, 204)
        # And a store: false response
        unstored = client.post("/v1/responses", json={"input": "kilimanjaro", "store": False})
        assert unstored.status_code == 200, unstored.text
        # And, after them all, a message that is kept
        after = {"messages": [{"role": "user", "content": "timbuktu"}]}
        assert client.post(f"/conversations/{cid}/messages", json=after).status_code == 201
        # When the stream has delivered all of it
        _found_within(client, "timbuktu", cid)
        settle_streams(server.url)
        # Then none of the three is found
        for word in ("zanzibar", "quetzalcoatl", "kilimanjaro"):
            assert _search(client, word) == [], word


def _prompt(client: httpx.Client, world: str, participants: list[str], line: str) -> dict[str, Any]:
    body = {
        "participants": participants,
        "ai_participant": participants[1],
        "system_prompt": "You are the smith.",
        "history_limit": 1,
        "max_prompt_tokens": 2000,
        "recall": True,
        "current": {"participant_id": participants[0], "content": line},
    }
    answer = client.post(f"/worlds/{world}/prompt", json=body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _recalled(prompt: dict[str, Any]) -> str:
    return json.dumps(prompt["messages"], ensure_ascii=False)


def test_mem45_a_dialogue_entry_is_recallable_at_once(server: ServerProcess) -> None:
    """MEM-45, MEM-5: dialogue recall ranks the perceived lines when the prompt is built (no index to
    wait for): a line is recalled right after its 201, and a deleted line never is."""
    with _client(server, "findable-dialogue") as client:
        # Given three lines, the first and second about keys, the second then deleted
        participants = ["player", "smith"]
        entries = [
            {
                "participant_id": "player",
                "role": "user",
                "content": "I hid the silver key in the well",
                "entry_id": "k1",
                "game_tick": 10,
            },
            {
                "participant_id": "player",
                "role": "user",
                "content": "The copper key is in the barn",
                "entry_id": "k2",
                "game_tick": 20,
            },
            {
                "participant_id": "smith",
                "role": "assistant",
                "content": "Good morning.",
                "entry_id": "k3",
                "game_tick": 30,
            },
        ]
        posted = client.post(
            "/worlds/w1/dialogues/entries", json={"participants": participants, "entries": entries}
        )
        assert posted.status_code in (200, 201), posted.text
        dialogue_id = posted.json().get("dialogue_id") or "player+smith"
        deleted = client.delete(f"/worlds/w1/dialogues/{dialogue_id}/entries/k2")
        assert deleted.status_code in (200, 204), deleted.text
        # When a prompt about the keys is built with recall, at once
        prompt = _prompt(client, "w1", participants, "Where did I hide the silver key?")
        # Then the kept line is recalled and the deleted one is not
        assert "silver key in the well" in _recalled(prompt)
        assert "copper key" not in _recalled(prompt)


def test_mem45_an_imported_line_is_recallable_at_once(server: ServerProcess) -> None:
    """MEM-45, DLG-6: a world loaded by import is recallable as soon as the import answers."""
    stamp = "2026-01-01T00:00:00.000000Z"
    lines = [
        {
            "type": "world",
            "format": "chat-history.dialogues",
            "version": 1,
            "world_id": "src",
            "exported_at": stamp,
            "dialogues": 1,
            "entries": 2,
        },
        {
            "type": "dialogue",
            "dialogue_id": "player+smith",
            "participants": ["player", "smith"],
            "created_at": stamp,
            "updated_at": stamp,
            "next_seq": 2,
            "entry_count": 2,
        },
        {
            "type": "entry",
            "dialogue_id": "player+smith",
            "entry_id": "i1",
            "participant_id": "player",
            "role": "user",
            "content": "The golden anvil is buried by the mill",
            "game_tick": 10,
            "seq": 0,
            "created_at": stamp,
        },
        {
            "type": "entry",
            "dialogue_id": "player+smith",
            "entry_id": "i2",
            "participant_id": "smith",
            "role": "assistant",
            "content": "Good day.",
            "game_tick": 20,
            "seq": 1,
            "created_at": stamp,
        },
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    with _client(server, "findable-import") as client:
        # Given a world imported from JSON Lines
        imported = client.post("/worlds/w2/import", params={"mode": "restore"}, content=text.encode())
        assert imported.status_code == 201, imported.text
        # When a prompt about the anvil is built with recall
        prompt = _prompt(client, "w2", ["player", "smith"], "Where is the golden anvil?")
        # Then the imported line is recalled
        assert "golden anvil is buried" in _recalled(prompt)
