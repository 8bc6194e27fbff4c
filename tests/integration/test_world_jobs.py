"""DLG-6 on the template's table, bucket and queue in moto: an import job killed half-way and run again
holds exactly one copy of every entry; bad lines are reported by number; a truncated file fails."""

from __future__ import annotations

import gzip
import json
import uuid
from collections import Counter
from collections.abc import Iterator

import boto3
import pytest
from chat_core.dialogue import jobs, transfer, worlds
from chat_core.dialogue.entries import add_entries, get_historical_context, get_witnessed
from chat_core.errors import Conflict, WorldNotEmpty
from chat_core.store import dialogues as dialogue_store
from chat_core.store import world_io

from tests.integration.test_dialogue_delete import world_keys
from tests.support.runtime import drop, renew

BUCKET = "chat-history-blobs-it"


@pytest.fixture
def storage(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The blob bucket and the import queue in moto; returns the queue URL."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="imports-it")["QueueUrl"]
    monkeypatch.setenv("BLOB_BUCKET", BUCKET)
    monkeypatch.setenv("IMPORT_QUEUE_URL", queue)
    renew()
    yield queue
    drop()


def line(who: str, text: str, tick: int, **kw: object) -> dict[str, object]:
    return {"participant_id": who, "role": "character", "content": text, "game_tick": tick, **kw}


def source_world(entries: int, per_call: int = 100) -> tuple[str, bytes]:
    """A world of two dialogues (whispers among them) and its export file: `per_call` lines at a time,
    alternately among A and B and among A, B and C."""
    w = f"src-{uuid.uuid4().hex[:8]}"
    for start in range(0, entries, per_call):
        batch = [
            line("A", f"line {n}", n, **({"visibility": "whisper", "audience": ["B"]} if n % 7 == 0 else {}))
            for n in range(start, min(entries, start + per_call))
        ]
        add_entries("alice", w, ["A", "B", "C"] if (start // per_call) % 2 else ["A", "B"], batch)
    return w, transfer.export_world_jsonl("alice", w).encode()


def upload(job: dict[str, object], data: bytes) -> None:
    key = str(job["upload_url"]).split(f"{BUCKET}.s3.amazonaws.com/")[1].split("?")[0]
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key=key, Body=data)


def queued(queue: str) -> list[dict[str, str]]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def body(text: bytes) -> list[str]:
    return text.decode().splitlines()[1:]


class Killed(Exception):
    """The worker's process dying mid-run."""


@pytest.mark.slow
def test_dlg6_an_import_killed_half_way_and_run_again_holds_one_copy_of_everything(
    storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DLG-6: the worker dies after its first batch; the job shows where it got to; running it again
    (the queue redelivers) finishes it, and the world is the source exactly: every entry, witness row
    and count once."""
    # Given a world of 60 lines in two dialogues, and the job writing 20 lines at a time instead of its
    # 500 (BATCH), so that 60 lines take the three writes 1,200 would (each line is a write of its own
    # when the source world is built, most of this test's time)
    monkeypatch.setattr(jobs, "BATCH", 20)
    source, exported = source_world(60, per_call=20)
    job = jobs.create_import("alice", "copy")
    upload(job, gzip.compress(exported))
    job_id = str(job["job_id"])
    started = jobs.start_import("alice", "copy", job_id)
    assert started["status"] == "queued"
    assert queued(storage) == [{"owner": "alice", "world_id": "copy", "job_id": job_id}]

    # When the worker dies in the middle of its third write: after the second dialogue was written and
    # counted, before the progress that says so was recorded
    writes = {"n": 0}
    put_entries = world_io.put_entries

    def dying(*args: object, **kwargs: object) -> None:
        writes["n"] += 1
        if writes["n"] == 3:
            raise Killed
        put_entries(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(world_io, "put_entries", dying)
    with pytest.raises(Killed):
        jobs.run_import("alice", "copy", job_id)
    monkeypatch.setattr(world_io, "put_entries", put_entries)
    halfway = jobs.get_import("alice", "copy", job_id)
    assert halfway["status"] == "running"
    assert 0 < halfway["lines_done"] < len(exported.splitlines())
    # And the queue delivers the message again: the job resumes and finishes
    result = jobs.run_import("alice", "copy", job_id)
    assert result["status"] == "done"
    done = jobs.get_import("alice", "copy", job_id)
    assert (done["status"], done["entries"], done["errors"], done["runs"]) == ("done", 60, [], 2)
    # Then the copy is the source, line for line, and nothing is there twice
    assert body(transfer.export_world_jsonl("alice", "copy").encode()) == body(exported)
    source_kinds = Counter(sk.split("#")[0] for _, sk in world_keys("alice", source))
    copy_kinds = Counter(sk.split("#")[0] for _, sk in world_keys("alice", "copy"))
    assert copy_kinds - Counter({"JOB": 1}) == source_kinds  # the job's own item aside
    assert copy_kinds["JOB"] == 1
    # Counters (ADDed, so a second count would show) once: the world's dialogues, each participant's
    counts = {w["world_id"]: w["dialogues"] for w in worlds.list_worlds("alice", limit=100)["items"]}
    assert counts["copy"] == counts[source] == 2
    stats = dialogue_store.participant_dialogue_counts
    assert (
        stats("alice", "copy", ["A", "B", "C"])
        == stats("alice", source, ["A", "B", "C"])
        == {"A": 2, "B": 2, "C": 1}
    )
    for viewer in ("A", "B", "C"):
        assert get_witnessed("alice", "copy", viewer, 100) == get_witnessed("alice", source, viewer, 100)
    assert not any(e.visibility == "whisper" for e in get_witnessed("alice", "copy", "C", 100))
    # And a finished job is not run twice
    with pytest.raises(Conflict):
        jobs.start_import("alice", "copy", job_id)


def test_dlg6_bad_lines_are_reported_by_number_and_a_truncated_file_fails(storage: str) -> None:
    """DLG-6: lines that are not JSON or not valid entries are listed with their numbers while the rest
    is imported; a file shorter than its header says fails the job; plain (not gzip) text works."""
    _, exported = source_world(30)
    lines = exported.decode().splitlines()
    lines[5] = "{not json"
    lines[9] = lines[9].replace('"game_tick":', '"game_tick":-')
    job = jobs.create_import("alice", "damaged")
    upload(job, ("\n".join(lines) + "\n").encode())
    jobs.start_import("alice", "damaged", str(job["job_id"]))
    jobs.run_import("alice", "damaged", str(job["job_id"]))
    state = jobs.get_import("alice", "damaged", str(job["job_id"]))
    assert state["status"] == "failed"
    assert [e["line"] for e in state["errors"]][:2] == [6, 10]
    assert "not valid JSON" in state["errors"][0]["message"]
    assert "game_tick" in state["errors"][1]["message"]
    assert len(get_historical_context("alice", "damaged", ["A", "B"], 100).primary) == 28
    # A truncated upload
    truncated = jobs.create_import("alice", "short")
    upload(truncated, ("\n".join(exported.decode().splitlines()[:20]) + "\n").encode())
    jobs.start_import("alice", "short", str(truncated["job_id"]))
    jobs.run_import("alice", "short", str(truncated["job_id"]))
    state = jobs.get_import("alice", "short", str(truncated["job_id"]))
    assert state["status"] == "failed"
    assert "truncated" in state["errors"][-1]["message"]
    # Started again after a complete upload, the failed job reads the file from the top and is done
    upload(truncated, exported)
    jobs.start_import("alice", "short", str(truncated["job_id"]))
    jobs.run_import("alice", "short", str(truncated["job_id"]))
    state = jobs.get_import("alice", "short", str(truncated["job_id"]))
    assert (state["status"], state["errors"], state["entries"]) == ("done", [], 30)
    assert len(get_historical_context("alice", "short", ["A", "B"], 100).primary) == 30


def test_dlg6_jobs_belong_to_their_owner_and_need_an_empty_world_and_a_file(storage: str) -> None:
    """DLG-6: another user's job is 404; starting before the upload is 409; a job restores into an
    empty world only (409 otherwise)."""
    job = jobs.create_import("alice", "slot")
    job_id = str(job["job_id"])
    with pytest.raises(jobs.ImportNotFound):
        jobs.get_import("mallory", "slot", job_id)
    with pytest.raises(jobs.ImportNotFound):
        jobs.start_import("mallory", "slot", job_id)
    with pytest.raises(Conflict, match="no file yet"):
        jobs.start_import("alice", "slot", job_id)
    add_entries("alice", "busy", ["A", "B"], [line("A", "hi", 1)])
    with pytest.raises(WorldNotEmpty):
        jobs.create_import("alice", "busy")
