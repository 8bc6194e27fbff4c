"""DLG-6 through `make run`: a 16 MB world goes in through a presigned upload and an import job (SQS
worker, progress by line), comes out through the S3 export, and is the same world, line for line."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import httpx
import pytest

from tests.support.local_server import ServerProcess

pytestmark = pytest.mark.e2e

#: Past every ceiling of the request path (6 MB Lambda payload, 10 MB API Gateway body) with room to
#: spare, and three import batches; the same code runs at any size, and 50 MB took minutes of CPU.
WORLD_BYTES = 16 * 1024 * 1024

STAMP = "2026-01-01T00:00:00.000000Z"
# 4,000 characters of Chinese are 12,000 bytes of UTF-8: a 16 MB world in about 1,400 entries.
TEXT = "这是一段很长的对话内容，用来检验大型世界的导入与导出。" * 148


def world_file(target_bytes: int) -> bytes:
    """A world export of two dialogues (one whispered line in every ten) of at least `target_bytes`."""
    lines: list[dict[str, object]] = []
    dialogues = {"A+B": ["A", "B"], "A+B+C": ["A", "B", "C"]}
    per_dialogue: dict[str, list[dict[str, object]]] = {d: [] for d in dialogues}
    size = n = 0
    while size < target_bytes:
        dialogue_id = "A+B" if n % 2 else "A+B+C"
        seq = len(per_dialogue[dialogue_id])
        entry: dict[str, object] = {
            "type": "entry",
            "dialogue_id": dialogue_id,
            "entry_id": f"e{n}",
            "participant_id": "A",
            "role": "character",
            "content": f"{n} {TEXT}",
            "game_tick": n * 10,
            "seq": seq,
            "created_at": STAMP,
        }
        if n % 10 == 0:
            entry |= {"audience": ["A", "B"], "visibility": "whisper"}
        per_dialogue[dialogue_id].append(entry)
        size += len(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()) + 1
        n += 1
    header = {
        "type": "world",
        "format": "chat-history.dialogues",
        "version": 1,
        "world_id": "source",
        "exported_at": STAMP,
        "dialogues": 2,
        "entries": n,
    }
    lines.append(header)
    for dialogue_id, participants in dialogues.items():
        entries = per_dialogue[dialogue_id]
        lines.append(
            {
                "type": "dialogue",
                "dialogue_id": dialogue_id,
                "participants": participants,
                "created_at": STAMP,
                "updated_at": STAMP,
                "next_seq": len(entries),
                "entry_count": len(entries),
            }
        )
        lines.extend(entries)
    return "".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n" for x in lines).encode()


def body_lines(data: bytes) -> list[str]:
    """The lines after the header (whose world id and export time differ by design)."""
    return data.decode().splitlines()[1:]


def test_dlg6_a_16_mb_world_imports_as_a_job_and_exports_identically(tmp_path: Path) -> None:
    """DLG-6: 16 MB of JSON Lines, gzip-compressed, PUT to the job's presigned URL; the job runs on the
    queue with progress; the S3 export of the imported world equals the file; no ceiling of the request
    path (Lambda's 6 MB payload, API Gateway's 10 MB body) applies, and the import takes several batches."""
    original = world_file(WORLD_BYTES)
    assert len(original) > WORLD_BYTES
    # Nothing kept on disk: 16 MB of snapshots every half second is not what this test measures.
    server = ServerProcess(tmp_path, args=["--no-persist"]).start()
    try:
        with server.client() as api:
            # Given an import job and its upload URL
            job = api.post("/worlds/big/imports")
            assert job.status_code == 202, job.text
            job_id = job.json()["job_id"]
            assert job.json()["status"] == "awaiting_upload"
            not_yet = api.post(f"/worlds/big/imports/{job_id}/start")
            assert not_yet.status_code == 409, not_yet.text
            # When the game uploads its save (gzip) and starts the job
            put = httpx.put(job.json()["upload_url"], content=gzip.compress(original), timeout=120)
            assert put.status_code == 200, put.text
            started = api.post(f"/worlds/big/imports/{job_id}/start")
            assert started.status_code == 202, started.text
            # Then its progress is visible until it is done
            seen: set[int] = set()
            deadline = time.monotonic() + 600
            while (state := api.get(f"/worlds/big/imports/{job_id}").json())["status"] != "done":
                assert state["status"] in ("queued", "running"), state
                assert time.monotonic() < deadline, state
                seen.add(state["lines_done"])
                time.sleep(0.2)
            assert state["errors"] == []
            assert state["entries"] == len(original.splitlines()) - 3
            assert len(seen) > 1, "progress was never seen moving"
            # And the world's S3 export is the file, line for line
            # (the export copies 16 MB in the request: on a busy machine that can take minutes, and how
            # fast is not what this test asserts)
            export = api.post("/worlds/big/exports", timeout=300)
            assert export.status_code == 201, export.text
            packed = httpx.get(export.json()["url"], timeout=120)
            assert packed.status_code == 200
            assert body_lines(gzip.decompress(packed.content)) == body_lines(original)
            # And whispers kept their audience: C perceived none of them
            witnessed = api.get("/worlds/big/history", params={"for": "C", "limit": 100}).json()["witnessed"]
            assert witnessed
            assert all(e.get("visibility") != "whisper" for e in witnessed)
    finally:
        assert server.stop() == 0
