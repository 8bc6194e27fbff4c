"""`make run`'s embedded store as its data grows: post latency with 1,000 / 10,000 / 100,000 items stored.

A developer's local data only grows. Each size starts a fresh local server (offline model, nothing
persisted), fills it with a world import of the size (one dialogue of public lines: an entry and its
witness rows per line, in partitions of their own), then times sequential posts to one conversation,
twenty concurrent posters and the conversation listing (LOC-2: a Query reads its partition, and a Query
of the global index its index partition, not every item stored); then kills the server (`kill -9`) and
times its restart on that data (LOC-3: snapshot load and journal replay).
"""

from __future__ import annotations

import gzip
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench import Section, progress, verdict

SIZES = (1_000, 10_000, 100_000)
ITEMS_PER_LINE = 3  # the entry and one witness row for each of its two perceivers
SEQUENTIAL = 30
LISTINGS = 30
POSTERS, POSTS_EACH = 20, 3
GOAL = 1.5  # post p50 at the largest size within this factor of the smallest
RESTART_GOAL = 10.0  # seconds from start to banner at the largest size (LOC-3)
STAMP = "2026-01-01T00:00:00Z"


def world_file(lines: int) -> bytes:
    """A world export of one two-person dialogue with `lines` public lines."""
    header = {
        "type": "world",
        "format": "chat-history.dialogues",
        "version": 1,
        "world_id": "filler",
        "exported_at": STAMP,
        "dialogues": 1,
        "entries": lines,
    }
    dialogue = {
        "type": "dialogue",
        "dialogue_id": "A+B",
        "participants": ["A", "B"],
        "created_at": STAMP,
        "updated_at": STAMP,
        "next_seq": lines,
        "entry_count": lines,
    }
    rows = [json.dumps(header), json.dumps(dialogue)]
    for n in range(lines):
        entry = {
            "type": "entry",
            "dialogue_id": "A+B",
            "entry_id": f"e{n}",
            "participant_id": "A" if n % 2 else "B",
            "role": "character",
            "content": f"line {n}: the caravan reaches the ford at dawn",
            "game_tick": n,
            "seq": n,
            "created_at": STAMP,
        }
        rows.append(json.dumps(entry))
    return ("\n".join(rows) + "\n").encode()


def _fill(api: httpx.Client, items: int) -> None:
    job = api.post("/worlds/filler/imports")
    job.raise_for_status()
    job_id = job.json()["job_id"]
    packed = gzip.compress(world_file(items // ITEMS_PER_LINE))
    httpx.put(job.json()["upload_url"], content=packed, timeout=300).raise_for_status()
    api.post(f"/worlds/filler/imports/{job_id}/start").raise_for_status()
    deadline = time.monotonic() + 1800
    while (state := api.get(f"/worlds/filler/imports/{job_id}").json())["status"] != "done":
        if state["status"] not in ("queued", "running") or time.monotonic() > deadline:
            raise RuntimeError(f"the filler import did not finish: {state}")
        time.sleep(0.5)


def _post(api: httpx.Client, conversation_id: str | None, text: str) -> tuple[float, str]:
    body: dict[str, Any] = {"content": text}
    if conversation_id:
        body["conversation_id"] = conversation_id
    started = time.perf_counter()
    answer = api.post("/messages", json=body)
    elapsed = time.perf_counter() - started
    if answer.status_code != 201:
        raise RuntimeError(f"post answered {answer.status_code}: {answer.text[:300]}")
    return elapsed, str(answer.json()["conversation_id"])


def _concurrent(url: str, conversation_id: str) -> list[float]:
    samples: list[float] = []
    lock = threading.Lock()

    def poster(index: int) -> None:
        with httpx.Client(base_url=url, headers={"X-User-Id": "bench"}, timeout=120) as api:
            for k in range(POSTS_EACH):
                elapsed, _ = _post(api, conversation_id, f"poster {index} post {k}")
                with lock:
                    samples.append(elapsed)

    threads = [threading.Thread(target=poster, args=(i,)) for i in range(POSTERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return samples


def _listing(api: httpx.Client) -> float:
    started = time.perf_counter()
    answer = api.get("/conversations")
    elapsed = time.perf_counter() - started
    if answer.status_code != 200 or not answer.json()["items"]:
        raise RuntimeError(f"listing answered {answer.status_code}: {answer.text[:300]}")
    return elapsed


def _measure(items: int) -> dict[str, float]:
    import signal

    from tests.support.local_server import ServerProcess

    with tempfile.TemporaryDirectory() as data:
        server = ServerProcess(Path(data)).start()
        try:
            with httpx.Client(base_url=server.url, headers={"X-User-Id": "bench"}, timeout=120) as api:
                progress(f"local store: filling {items:,} items")
                _fill(api, items)
                progress(f"local store: {SEQUENTIAL} sequential posts at {items:,} items")
                _, conversation_id = _post(api, None, "warm up")
                sequential = [_post(api, conversation_id, f"post {n}")[0] for n in range(SEQUENTIAL)]
                listings = [_listing(api) for _ in range(LISTINGS)]
            progress(f"local store: {POSTERS} concurrent posters at {items:,} items")
            concurrent = sorted(_concurrent(server.url, conversation_id))
        finally:
            server.stop(signal.SIGKILL)
        progress(f"local store: restart after kill -9 at {items:,} items")
        started = time.perf_counter()
        restarted = ServerProcess(Path(data)).start()
        restart = time.perf_counter() - started
        restarted.stop()
    return {
        "p50": statistics.median(sequential),
        "p90": sorted(sequential)[int(0.9 * len(sequential))],
        "concurrent_p99": concurrent[min(len(concurrent) - 1, int(0.99 * len(concurrent)))],
        "listing_p50": statistics.median(listings),
        "restart": restart,
    }


def run() -> list[Section]:
    figures = {items: _measure(items) for items in SIZES}
    base = figures[SIZES[0]]["p50"]
    rows = [
        [
            f"{items:,}",
            f"{f['p50'] * 1000:.0f}",
            f"{f['p90'] * 1000:.0f}",
            f"{f['concurrent_p99'] * 1000:.0f}",
            f"{f['p50'] / base:.2f}x",
            f"{f['listing_p50'] * 1000:.0f}",
            f"{f['restart']:.1f}",
        ]
        for items, f in figures.items()
    ]
    ratio = figures[SIZES[-1]]["p50"] / base
    restart = figures[SIZES[-1]]["restart"]
    return [
        {
            "title": "Local server (`make run`): posts as the embedded store grows",
            "columns": [
                "items stored",
                "post p50 (ms)",
                "post p90 (ms)",
                f"{POSTERS} posters p99 (ms)",
                "p50 vs 1,000",
                "listing p50 (ms)",
                "restart after kill -9 (s)",
            ],
            "rows": rows,
            "notes": (
                "Offline model, data persisted (snapshot + journal, as `make run`); the items are a world "
                "import (entries and witness rows) beside the conversation posted to; the listing is "
                "`GET /conversations` (a Query of the global index); the restart is from the start of "
                "the process to its banner, after `kill -9`. Goals: p50 at 100,000 items within "
                f"{GOAL}x of 1,000 (LOC-2); restart at 100,000 items within {RESTART_GOAL:g} s (LOC-3)."
            ),
            "summary": [
                [
                    "local store: post p50 at 100k vs 1k items",
                    f"{ratio:.2f}x",
                    f"<= {GOAL}x",
                    verdict(ratio <= GOAL),
                ],
                [
                    "local store: restart after kill -9 at 100k items",
                    f"{restart:.1f} s",
                    f"<= {RESTART_GOAL:g} s",
                    verdict(restart <= RESTART_GOAL),
                ],
            ],
        }
    ]
