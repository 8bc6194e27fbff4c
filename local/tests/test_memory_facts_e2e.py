"""Long-term facts over the local server (`make run` with FACTS_EXTRACTION=all, the offline model):
facts appear after a turn, a contradiction supersedes, a delete cascades (MEM-31..35)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import ServerProcess, settle_streams

pytestmark = pytest.mark.e2e


def _facts(api: httpx.Client, **params: str) -> list[dict[str, Any]]:
    answer = api.get("/memory", params=params)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["facts"])


def _until(api: httpx.Client, url: str, check: Any, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """The facts once `check` holds (the stream delivers the turn to the extraction in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        settle_streams(url)
        facts = _facts(api)
        if check(facts) or time.monotonic() > deadline:
            return facts
        time.sleep(0.2)


def test_facts_appear_supersede_and_go_with_their_messages(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path, env={"FACTS_EXTRACTION": "all"}, args=["--no-persist"]).start()
    try:
        with server.client("fiona") as api:
            # Given a turn in which the user says where they live
            posted = api.post("/messages", json={"content": "Hi! I live in Lisbon."})
            assert posted.status_code == 201, posted.text
            cid = posted.json()["conversation_id"]
            # Then the fact appears once the turn has gone through the stream
            facts = _until(api, server.url, lambda f: len(f) == 1)
            assert [f["text"] for f in facts] == ["The user lives in Lisbon"]
            first = facts[0]
            # When a later turn contradicts it
            api.post("/messages", json={"conversation_id": cid, "content": "I live in Porto"})
            facts = _until(api, server.url, lambda f: f and f[0]["text"] == "The user lives in Porto")
            # Then the new fact supersedes the old one, hidden unless asked for
            assert [f["text"] for f in facts] == ["The user lives in Porto"]
            assert facts[0]["supersedes"] == first["id"]
            everything = {f["id"]: f["status"] for f in _facts(api, include_superseded="true")}
            assert everything[first["id"]] == "superseded"
            # And a window asking for facts carries them
            window = api.post(
                f"/conversations/{cid}/window",
                json={"content": "where?", "window_policy": {"max_messages": 10, "facts": True}},
            ).json()
            assert "The user lives in Porto" in window["messages"][0]["content"]
            # When the conversation is deleted, its facts go with it
            assert api.delete(f"/conversations/{cid}").status_code == 204
            assert _facts(api, include_superseded="true") == []
            # And a literal route under /memory is not taken for a fact id
            assert api.delete("/memory/01JAAAAAAAAAAAAAAAAAAAAAAA").status_code == 404
    finally:
        server.stop()
