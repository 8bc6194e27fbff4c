"""The golden scenario, a user's data (PRV-1..3): an export, an import (ChatGPT's conversations.json through
a presigned upload) and an erasure requested and read back, with their typical errors (see
test_golden_answers.py). Its own user, and last, since it erases."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.golden.recording import ADMIN_GROUP, BOB, Recorder

USER = "dora"
CHATGPT_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "chatgpt" / "conversations.json"


def _until_done(rec: Recorder, path: str) -> None:
    """Wait (unrecorded) until the job behind `path` is done, so what is recorded next does not race with
    the worker; fails after a minute."""
    deadline = time.monotonic() + 60.0
    with httpx.Client(base_url=rec.url, headers={"X-User-Id": USER}, timeout=10.0) as client:
        while (status := client.get(path).json().get("status")) not in ("done", "failed"):
            assert time.monotonic() < deadline, f"{path} still {status!r} after a minute"
            time.sleep(0.1)


def user_data(rec: Recorder) -> None:
    rec.family = "user_data"
    where = {"user_id": USER}
    rec.call(
        "POST",
        "/conversations",
        "something to export and erase",
        user=USER,
        json_body={"title": "mine", "system_prompt": "be brief"},
    )
    queued = ("status", "updated_at")
    export = rec.call(
        "POST", "/users/{user_id}/exports", "an export of one's own data", user=USER, path=where, racy=queued
    )
    rec.call("POST", "/users/{user_id}/exports", "another user's data: 403", user=BOB, path=where)
    export_id = str(export.json().get("export_id", "missing"))
    _until_done(rec, f"/users/{USER}/exports/{export_id}")
    found = {**where, "export_id": export_id}
    # gzip of ids and timestamps: its length varies by a byte or two
    rec.call(
        "GET",
        "/users/{user_id}/exports/{export_id}",
        "the export, done",
        user=USER,
        path=found,
        racy=("bytes",),
    )
    rec.call(
        "GET",
        "/users/{user_id}/exports/{export_id}",
        "an unknown export: 404",
        user=USER,
        path={**where, "export_id": "nope"},
    )
    imports = "/users/{user_id}/imports"
    job = rec.call("POST", imports, "an import job and its upload URL", user=USER, path=where)
    rec.call("POST", imports, "an import into another user's account: 403", user=BOB, path=where)
    imported = {**where, "import_id": str(job.json().get("import_id", "missing"))}
    rec.call(
        "POST",
        "/users/{user_id}/imports/{import_id}/start",
        "a start before the upload: 409",
        user=USER,
        path=imported,
    )
    upload = job.json().get("upload") or {}
    uploaded = httpx.put(str(upload.get("url")), content=CHATGPT_SAMPLE.read_bytes(), timeout=30)
    assert uploaded.status_code == 200
    rec.call(
        "POST",
        "/users/{user_id}/imports/{import_id}/start",
        "the import started",
        user=USER,
        path=imported,
        racy=queued,
    )
    _until_done(rec, f"/users/{USER}/imports/{imported['import_id']}")
    rec.call("GET", "/users/{user_id}/imports/{import_id}", "the import, done", user=USER, path=imported)
    rec.call(
        "GET",
        "/users/{user_id}/imports/{import_id}",
        "an unknown import: 404",
        user=USER,
        path={**where, "import_id": "nope"},
    )
    rec.call("GET", "/users/{user_id}/erasure", "no erasure asked yet", user=USER, path=where)
    rec.call("POST", "/users/{user_id}/erasure", "another user's erasure: 403", user=BOB, path=where)
    rec.call(
        "POST",
        "/users/{user_id}/erasure",
        "an administrator erases the user",
        user="root",
        groups=ADMIN_GROUP,
        path=where,
        racy=("status", "phase", "updated_at", "passes", "items", "jobs", "objects", "idempotency_records"),
    )
    # The job waits ERASURE_SETTLE_SECONDS (two minutes) between its passes: still running when read
    rec.call(
        "GET",
        "/users/{user_id}/erasure",
        "the erasure's progress",
        user=USER,
        path=where,
        racy=("status", "phase", "updated_at", "passes", "items", "jobs", "objects", "idempotency_records"),
    )
