"""LOC-3: the local server keeps every write it answered, even through `kill -9` of its process group."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import ServerProcess, local_client
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e

POSTERS = 6
#: Acknowledged posts to wait for before the kill (several per poster, with writes still in flight).
ACKNOWLEDGED = 36


class _Poster(threading.Thread):
    """Posts to one conversation of its own, one turn after another, until stopped or cut off."""

    def __init__(self, url: str, index: int, stop: threading.Event) -> None:
        super().__init__(name=f"poster-{index}", daemon=True)
        self.url, self.index, self.stop = url, index, stop
        self.conversation_id: str | None = None
        #: Message ids of every 201 answer (user and assistant).
        self.acknowledged: list[str] = []
        self.posts = 0

    def run(self) -> None:
        headers = {"X-User-Id": f"poster-{self.index}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30.0) as client:
            while not self.stop.is_set():
                body: dict[str, Any] = {"content": f"poster {self.index} post {self.posts}"}
                if self.conversation_id:
                    body["conversation_id"] = self.conversation_id
                try:
                    answer = client.post("/messages", json=body)
                except httpx.HTTPError:
                    return  # the server is gone
                if answer.status_code != 201:
                    continue
                data = answer.json()
                self.conversation_id = data["conversation_id"]
                self.acknowledged += [
                    data["user_message"]["message_id"],
                    data["assistant_message"]["message_id"],
                ]
                self.posts += 1


def _wait(condition: Any, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def _message_ids(client: httpx.Client, conversation_id: str) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        params = {"cursor": cursor} if cursor else {}
        answer = client.get(f"/conversations/{conversation_id}", params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        ids += [m["message_id"] for m in body["messages"]]
        cursor = body.get("next_cursor")
        if not cursor:
            return ids


def test_every_acknowledged_post_survives_kill_9_of_the_server(model: OpenAIStandin, tmp_path: Path) -> None:
    """LOC-3: six concurrent posters, `kill -9` of the server's process group while they post, a restart
    on the same data: every message id of every 201 answer is there, and sequences have no gap."""
    env = {"LLM_BASE_URL": model.base_url, "LLM_MODEL": "standin-model", "LLM_MAX_RETRIES": "0"}
    # A snapshot interval far longer than the test: whatever survives, survives through the journal.
    args = ["--snapshot-interval", "3600"]
    server = ServerProcess(tmp_path, env=env, args=args, session=True).start()
    stop = threading.Event()
    posters = [_Poster(server.url, i, stop) for i in range(POSTERS)]
    try:
        # Given six clients posting at once
        for poster in posters:
            poster.start()
        _wait(lambda: sum(p.posts for p in posters) >= ACKNOWLEDGED, f"{ACKNOWLEDGED} posts answered 201", 90)
        # When the server's whole process group is killed while they post
        assert server.proc is not None
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)
    finally:
        stop.set()
        for poster in posters:
            poster.join(timeout=30)
        server.stop(signal.SIGKILL)
    acknowledged = {p.conversation_id: list(p.acknowledged) for p in posters if p.conversation_id}
    total = sum(len(ids) for ids in acknowledged.values())
    # Then after a restart on the same data directory
    restarted = ServerProcess(tmp_path, env=env, args=args).start()
    try:
        endpoint = re.search(r"embedded moto at (http://\S+),", restarted.output)
        assert endpoint is not None, restarted.output
        found: dict[str, list[str]] = {}
        for index, poster in enumerate(posters):
            if poster.conversation_id is None:
                continue
            with restarted.client(f"poster-{index}") as client:
                found[poster.conversation_id] = _message_ids(client, poster.conversation_id)
        # (the store itself, for the sequence numbers behind the answers)
        store = local_client(endpoint.group(1))
        sequences: dict[str, list[int]] = defaultdict(list)
        ids_stored: list[str] = []
        for page in store.get_paginator("scan").paginate(TableName=_table_name(restarted.output)):
            for item in page["Items"]:
                sk = item["sk"]["S"]
                if sk.startswith("MSG#"):
                    sequences[item["pk"]["S"]].append(int(sk[4:]))
                    ids_stored.append(item["message_id"]["S"])
    finally:
        restarted.stop()
    kept = sum(1 for cid, ids in acknowledged.items() for i in ids if i in set(found[cid]))
    restored = re.search(r"restored \d+ items \(\d+ journal records.*", restarted.output)
    posts = sum(p.posts for p in posters)
    print(f"LOC-3 kill -9: {posts} posts answered 201, {kept} of {total} message ids kept")
    print(restored.group(0) if restored else "")
    # every message id of every 201 answer is there
    missing = [i for cid, ids in acknowledged.items() for i in ids if i not in set(found[cid])]
    assert total >= 2 * ACKNOWLEDGED
    assert not missing, f"{len(missing)} of {total} acknowledged message ids are gone"
    # and every conversation's sequences run 1..n without a gap or a duplicate
    for pk, seqs in sequences.items():
        assert sorted(seqs) == list(range(1, len(seqs) + 1)), (pk, sorted(seqs))
    assert len(ids_stored) == len(set(ids_stored))
    # and the restart said what it restored
    assert re.search(r"\d+ items restored in [\d.]+ s", restarted.output), restarted.output


def _table_name(banner: str) -> str:
    found = re.search(r"embedded moto at \S+, table (\S+)", banner)
    assert found is not None, banner
    return found.group(1)
