"""The golden scenario, dialogue half: worlds, dialogues and entries, history, prompts, saves, world
files and import jobs, and the console's static files (see test_golden_answers.py)."""

from __future__ import annotations

import gzip
import json
import time

import httpx

from tests.golden.recording import ALICE, BOB, Call, Recorder

WORLD = "golden-world"


def worlds(rec: Recorder) -> None:
    rec.family = "worlds"
    world = {"world_id": WORLD}
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "a new dialogue by participants with two entries",
        path=world,
        json_body={
            "participants": ["A", "B"],
            "entries": [
                {
                    "participant_id": "A",
                    "content": "Hello B",
                    "game_tick": 10,
                    "entry_id": "e1",
                    "role": "character",
                },
                {
                    "participant_id": "B",
                    "content": "Hello A",
                    "game_tick": 20,
                    "entry_id": "e2",
                    "role": "character",
                },
            ],
        },
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "a whisper in a three-way dialogue, one entry",
        path=world,
        json_body={
            "participants": ["A", "B", "C"],
            "entry": {
                "participant_id": "A",
                "content": "Only B hears this",
                "game_tick": 30,
                "entry_id": "e3",
                "role": "character",
                "audience": ["A", "B"],
                "visibility": "whisper",
            },
        },
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "the same entry id again",
        path=world,
        json_body={
            "participants": ["A", "B"],
            "entry": {
                "participant_id": "A",
                "content": "Hello B",
                "game_tick": 10,
                "entry_id": "e1",
                "role": "character",
            },
        },
    )
    rec.call("POST", "/worlds/{world_id}/dialogues/entries", "400: not JSON", path=world, content=b"{")
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "422: an entry without a game tick",
        path=world,
        json_body={"participants": ["A", "B"], "entry": {"participant_id": "A", "content": "x"}},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        "404: no such dialogue id",
        path=world,
        json_body={
            "dialogue_id": "nope",
            "entry": {"participant_id": "A", "content": "x", "game_tick": 1, "role": "character"},
        },
    )
    rec.call("GET", "/worlds", "the caller's worlds")
    rec.call("GET", "/worlds", "another user has none", user=BOB)
    rec.call("GET", "/worlds", "422: limit out of range", params={"limit": 0})
    rec.call("GET", "/worlds/{world_id}/dialogues", "the world's dialogues", path=world)
    rec.call(
        "GET",
        "/worlds/{world_id}/dialogues",
        "another user, the same world id: theirs, empty",
        path=world,
        user=BOB,
    )
    rec.call(
        "GET", "/worlds/{world_id}/history", "history of A and B", path=world, params={"participants": "A,B"}
    )
    rec.call("GET", "/worlds/{world_id}/history", "what C witnessed", path=world, params={"for": "C"})
    rec.call("GET", "/worlds/{world_id}/history", "422: limit out of range", path=world, params={"limit": -1})
    rec.call(
        "GET",
        "/worlds/{world_id}/history",
        "another user, the same world id: theirs, empty",
        path=world,
        user=BOB,
        params={"participants": "A,B"},
    )
    rec.call("GET", "/worlds/{world_id}/history", "400: neither participants nor for", path=world)
    rec.call(
        "POST",
        "/worlds/{world_id}/prompt",
        "the prompt for B answering A",
        path=world,
        json_body={
            "participants": ["A", "B"],
            "system_prompt": "You are B.",
            "ai_participant": "B",
            "names": {"A": "Alice", "B": "Bob"},
            "current": {"participant_id": "A", "content": "How are you?", "game_tick": 40},
        },
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/prompt",
        "422: no system prompt",
        path=world,
        json_body={"participants": ["A"]},
    )
    rec.call("POST", "/worlds/{world_id}/prompt", "400: not JSON", path=world, content=b"{")
    rec.call(
        "POST",
        "/worlds/{world_id}/prompt",
        "another user, the same world id: a prompt of their empty world",
        path=world,
        user=BOB,
        json_body={"participants": ["A", "B"], "system_prompt": "x"},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/saves",
        "save at tick 20",
        path=world,
        json_body={"save_id": "s1", "game_tick": 20},
    )
    rec.call("POST", "/worlds/{world_id}/saves", "422: no game tick", path=world, json_body={"save_id": "s1"})
    rec.call(
        "POST",
        "/worlds/{world_id}/saves",
        "another user, the same world id: a save of their own",
        path=world,
        user=BOB,
        json_body={"save_id": "s1", "game_tick": 1},
    )
    rec.call("GET", "/worlds/{world_id}/saves", "the world's saves", path=world)
    rec.call("GET", "/worlds/{world_id}/saves", "another user: only their own save", path=world, user=BOB)
    save = {"world_id": WORLD, "save_id": "s1"}
    rec.call("DELETE", "/worlds/{world_id}/saves/{save_id}/load", "404: nothing loaded to revert", path=save)
    rec.call("POST", "/worlds/{world_id}/saves/{save_id}/load", "load the save", path=save)
    rec.call(
        "GET",
        "/worlds/{world_id}/history",
        "history after the load",
        path=world,
        params={"participants": "A,B"},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/saves/{save_id}/load",
        "404: no such save",
        path={"world_id": WORLD, "save_id": "nope"},
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/saves/{save_id}/load",
        "another user loads their own save",
        path=save,
        user=BOB,
    )
    rec.call("DELETE", "/worlds/{world_id}/saves/{save_id}/load", "revert the load", path=save)
    rec.call(
        "DELETE",
        "/worlds/{world_id}/saves/{save_id}/load",
        "another user reverts their own load",
        path=save,
        user=BOB,
    )
    rec.call("GET", "/worlds/{world_id}/export", "the world as JSON Lines", path=world)
    rec.call(
        "GET",
        "/worlds/{world_id}/export",
        "another user, the same world id: theirs, empty",
        path=world,
        user=BOB,
    )
    dialogue_ab = "A+B"
    entry = {"world_id": WORLD, "dialogue_id": dialogue_ab, "entry_id": "e2"}
    rec.call(
        "DELETE",
        "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}",
        "404: another user's",
        path=entry,
        user=BOB,
    )
    rec.call(
        "DELETE",
        "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}",
        "delete an entry",
        path=entry,
    )
    rec.call(
        "DELETE",
        "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}",
        "404: already deleted",
        path=entry,
    )
    dialogue = {"world_id": WORLD, "dialogue_id": "A+B+C"}
    rec.call(
        "DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}", "404: another user's", path=dialogue, user=BOB
    )
    rec.call("DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}", "delete a dialogue", path=dialogue)
    rec.call("DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}", "404: already deleted", path=dialogue)


def world_files(rec: Recorder) -> None:
    rec.family = "world_files"
    imported = {"world_id": "golden-import"}
    stamp = "2026-01-01T00:00:00.000000Z"
    lines = [
        {"type": "world", "format": "chat-history.dialogues", "version": 1, "world_id": "src",
         "exported_at": stamp, "dialogues": 1, "entries": 2},
        {"type": "dialogue", "dialogue_id": "A+B", "participants": ["A", "B"], "created_at": stamp,
         "updated_at": stamp, "next_seq": 2, "entry_count": 2},
        {"type": "entry", "dialogue_id": "A+B", "entry_id": "i1", "participant_id": "A", "role": "character",
         "content": "Imported one", "game_tick": 1, "seq": 0, "created_at": stamp},
        {"type": "entry", "dialogue_id": "A+B", "entry_id": "i2", "participant_id": "B", "role": "character",
         "content": "Imported two", "game_tick": 2, "seq": 1, "created_at": stamp},
    ]  # fmt: skip
    ndjson = "".join(json.dumps(line) + "\n" for line in lines).encode()
    ndjson_headers = {"Content-Type": "application/x-ndjson"}
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "import JSON Lines",
        path=imported,
        content=ndjson,
        headers=ndjson_headers,
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "409: the world is not empty (mode=restore)",
        path=imported,
        params={"mode": "restore"},
        content=ndjson,
        headers=ndjson_headers,
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "400: a line that is not JSON, named by its number",
        path={"world_id": "golden-bad-import"},
        content=ndjson.splitlines(keepends=True)[0] + b"not json\n",
        headers=ndjson_headers,
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/import",
        "422: an unknown mode",
        path=imported,
        params={"mode": "sideways"},
        content=ndjson,
        headers=ndjson_headers,
    )
    rec.call("GET", "/worlds/{world_id}/export", "the imported world", path=imported)
    # The file's size races with the clock: it holds the export time, and gzip packs digits unevenly.
    export = rec.call("POST", "/worlds/{world_id}/exports", "an export to S3", path=imported, racy=("bytes",))
    packed = httpx.get(export.json()["url"], timeout=60)
    rec.families[rec.family].append(
        Call(
            "GET",
            "<presigned export url>",
            "the exported file, unpacked",
            packed.status_code,
            dict(packed.headers),
            {"jsonl": [json.loads(line) for line in gzip.decompress(packed.content).decode().splitlines()]},
        )
    )
    rec.call(
        "POST",
        "/worlds/{world_id}/exports",
        "another user, the same world id: an export of theirs, empty",
        path=imported,
        user=BOB,
        racy=("bytes",),
    )
    target = {"world_id": "golden-job"}
    job = rec.call(
        "POST", "/worlds/{world_id}/imports", "an import job and its upload URL", path=target
    ).json()
    job_path = {"world_id": "golden-job", "job_id": job["job_id"]}
    rec.call("GET", "/worlds/{world_id}/imports/{job_id}", "the job awaits its upload", path=job_path)
    rec.call("POST", "/worlds/{world_id}/imports/{job_id}/start", "409: nothing uploaded yet", path=job_path)
    rec.call("GET", "/worlds/{world_id}/imports/{job_id}", "404: another user's job", path=job_path, user=BOB)
    rec.call(
        "POST",
        "/worlds/{world_id}/imports/{job_id}/start",
        "404: another user's job",
        path=job_path,
        user=BOB,
    )
    rec.call(
        "GET",
        "/worlds/{world_id}/imports/{job_id}",
        "400: not a job id",
        path={"world_id": "golden-job", "job_id": "nope"},
    )
    uploaded = httpx.put(job["upload_url"], content=gzip.compress(ndjson, mtime=0), timeout=60)
    assert uploaded.status_code == 200, uploaded.text
    # The worker may pick the job up before the answer is written: its progress races with it.
    rec.call(
        "POST",
        "/worlds/{world_id}/imports/{job_id}/start",
        "start the job",
        path=job_path,
        racy=("status", "runs", "lines_done", "dialogues", "entries", "error_count", "bytes_done"),
    )
    deadline = time.monotonic() + 60
    with httpx.Client(base_url=rec.url, headers={"X-User-Id": ALICE}) as client:
        path = f"/worlds/golden-job/imports/{job['job_id']}"
        while client.get(path).json().get("status") not in ("done", "failed"):
            assert time.monotonic() < deadline, "the import job did not finish in 60 s"
            time.sleep(0.1)
    rec.call("GET", "/worlds/{world_id}/imports/{job_id}", "the job is done", path=job_path)
    rec.call("POST", "/worlds/{world_id}/imports/{job_id}/start", "409: already done", path=job_path)
    rec.call(
        "GET", "/worlds/{world_id}/history", "the job's world", path=target, params={"participants": "A,B"}
    )
    rec.call("DELETE", "/worlds/{world_id}", "404: another user's world", path=target, user=BOB)
    rec.call("DELETE", "/worlds/{world_id}", "delete the world", path=target)
    rec.call("DELETE", "/worlds/{world_id}", "404: already deleted", path=target)
    rec.call("GET", "/worlds/{world_id}/dialogues", "404: deleted", path=target)


def console(rec: Recorder) -> None:
    rec.family = "console"
    rec.call("GET", "/console", "the console page", user=None)
    rec.call("GET", "/console/{file+}", "its script", path={"file": "console.js"}, user=None)
    rec.call("GET", "/console/{file+}", "its style sheet", path={"file": "console.css"}, user=None)
    rec.call("GET", "/console/{file+}", "the page by name", path={"file": "index.html"}, user=None)
    rec.call("GET", "/console/{file+}", "404: no such file", path={"file": "nope.js"}, user=None)
    rec.call(
        "GET", "/console/{file+}", "404: no escaping the folder", path={"file": "..%2Fapp.py"}, user=None
    )
