"""MEM-11 over `make run`'s server: a post, its stream indexing it, then a search and a recalled window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.local_server import ServerProcess, settle_streams

pytestmark = pytest.mark.e2e


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path, args=["--no-persist"]).start()
    yield process
    process.stop()


def test_post_then_search_and_recall(server: ServerProcess) -> None:
    headers = {"X-User-Id": "recall-e2e"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60.0) as client:
        # Given a conversation whose first message names the cat, with recall on, and 8 more turns
        created = client.post("/conversations", json={"window_policy": {"recall": True}})
        assert created.status_code == 201, created.text
        cid = created.json()["conversation_id"]
        first = client.post("/messages", json={"conversation_id": cid, "content": "My cat is called Mochi"})
        assert first.status_code == 201, first.text
        for turn in range(8):
            answer = client.post("/messages", json={"conversation_id": cid, "content": f"weather {turn}?"})
            assert answer.status_code == 201, answer.text
        settle_streams(server.url)
        # When the caller searches, then the first message is found
        found = client.get("/memory/search", params={"q": "cat Mochi"}).json()["results"]
        assert any(r["conversation_id"] == cid and r["seq"] == 1 for r in found)
        # And another user finds nothing of it
        other = client.get("/memory/search", params={"q": "cat Mochi"}, headers={"X-User-Id": "someone"})
        assert other.json()["results"] == []
        # And the window of a question about the cat recalls it
        window = client.post(f"/conversations/{cid}/window", json={"content": "what is my cat called?"})
        entries = {e["seq"]: e for e in window.json()["inspect"]["entries"]}
        assert entries[1]["state"] == "recalled"
