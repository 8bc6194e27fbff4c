"""PRV-3: importing a user's conversations on the template's table, bucket and queue in moto: an export
imported into a fresh user is the same message by message; ChatGPT's conversations.json imports whole,
branches, tool calls and images included; a bad file fails naming what is wrong and writes nothing; a
worker killed half-way and delivered again leaves one copy of each conversation."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import boto3
import botocore.client
import pytest
from chat_core.privacy import import_run

from functions.routes import BY_FOLDER
from tests.integration.test_user_erasure import (  # noqa: F401
    BOB,
    BUCKET,
    erasure_call,
    lived_a_little,
    run_queue,
    storage,
)
from tests.integration.test_user_export import export_call
from tests.support import events
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "chatgpt" / "conversations.json"
#: What an archive's message must keep through an import (ids may differ, the rest may not).
KEPT = (
    "seq",
    "role",
    "content",
    "parts",
    "parent_seq",
    "model",
    "created_at",
    "tokens",
    "tool_calls",
    "tool_call_id",
    "name",
    "usage",
    "cost_micros",
    "deleted_at",
)


def import_call(method: str, target: str, import_id: str = "", action: str = "", *, user: str) -> api.Answer:
    suffix = (f"/{import_id}" if import_id else "") + (f"/{action}" if action else "")
    route = (
        "/users/{user_id}/imports" + ("/{import_id}" if import_id else "") + (f"/{action}" if action else "")
    )
    event = events.http_event(
        method,
        f"/users/{quote(target, safe='')}/imports{suffix}",
        route=route,
        path_parameters={"user_id": target, **({"import_id": import_id} if import_id else {})},
        body={} if method == "POST" else events._NO_BODY,
        user=user,
    )
    return api.invoke("user_imports", event)


def upload(job: dict[str, Any], data: bytes) -> None:
    """The client's PUT to the presigned URL, as moto receives it."""
    key = job["upload"]["url"].split(f"{BUCKET}.s3.amazonaws.com/")[1].split("?")[0]
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key=key, Body=data)


def imported(user: str, data: bytes, queue: str) -> dict[str, Any]:
    """Ask for an import, upload `data`, start it, run the queue; the job as GET shows it."""
    job = import_call("POST", user, user=user)
    assert job.status == 202, job.body
    assert job.body["status"] == "awaiting_upload"
    upload(job.body, data)
    started = import_call("POST", user, job.body["import_id"], "start", user=user)
    assert started.status == 202, started.body
    run_queue(queue)
    return import_call("GET", user, job.body["import_id"], user=user).body


def archive_of(user: str, queue: str) -> dict[str, Any]:
    asked = export_call("POST", user, user=user)
    run_queue(queue)
    url = export_call("GET", user, asked.body["export_id"], user=user).body["url"]
    key = url.split(f"{BUCKET}.s3.amazonaws.com/")[1].split("?")[0]
    raw = boto3.client("s3", region_name="us-east-1").get_object(Bucket=BUCKET, Key=key)["Body"].read()
    archive: dict[str, Any] = json.loads(gzip.decompress(raw))
    return archive


def shape(archive: dict[str, Any]) -> list[dict[str, Any]]:
    """Each conversation as an import must keep it: title, model, active leaf, every message's kept
    fields, branch links; by creation time (ids differ)."""
    conversations = []
    for c in archive["conversations"]:
        item = c["conversation"]
        conversations.append(
            {
                "head": {
                    k: item.get(k) for k in ("title", "model", "active_leaf", "created_at", "message_count")
                },
                "messages": [{k: m.get(k) for k in KEPT if k in m} for m in c["messages"]],
                "links": sorted((link["parent_seq"], link["child_seq"]) for link in c["links"]),
                "summary": (c.get("summary") or {}).get("text"),
            }
        )
    return sorted(conversations, key=lambda c: (c["head"]["created_at"], c["head"]["title"] or ""))


def conversations_of(user: str) -> list[dict[str, Any]]:
    listed = api.listing(user=user)
    assert listed.status == 200, listed.body
    found: list[dict[str, Any]] = listed.body["items"]
    return found


def test_prv3_an_export_imported_into_a_fresh_user_is_the_same_message_by_message(storage: str) -> None:  # noqa: F811
    """PRV-3: Given Carol with branched conversations (an edit, an image part, a summary) and her export,
    When Dave imports the archive, Then Dave's own export holds the same conversations message by message
    (roles, content, parents, active leaf, models, timestamps, tokens), readable and listed."""
    lived_a_little("carol", "carol writes")
    before = archive_of("carol", storage)

    job = imported("dave", gzip.compress(json.dumps(before).encode()), storage)

    assert job["status"] == "done", job
    assert job["format"] == "chat-history.user-export"
    total = sum(len(c["messages"]) for c in before["conversations"])
    assert job["progress"]["messages_done"] == job["progress"]["messages_total"] == total
    after = archive_of("dave", storage)
    kept, got = shape(before), shape(after)
    blob_parts = [m for c in kept for m in c["messages"] if "blob" in (m.get("parts") or "")]
    for message in blob_parts:  # stored in S3 by reference: a placeholder text part in the import
        message.pop("parts")
    for message in (m for c in got for m in c["messages"] if "not in the export" in (m.get("parts") or "")):
        message.pop("parts")
    assert blob_parts
    assert got == kept
    assert sorted(c["conversation_id"] for c in conversations_of("dave")) == sorted(job["conversation_ids"])
    branched = max(
        job["conversation_ids"], key=lambda i: len(api.tree(i, user="dave").body.get("messages", []))
    )
    assert api.detail(branched, user="dave").status == 200


def test_prv3_a_chatgpt_export_imports_whole(storage: str) -> None:  # noqa: F811
    """PRV-3: Given ChatGPT's export (as the zip ChatGPT sends) with an edited question, a regenerated
    answer, a python call with its output, a browsing call with its quote, an image and a system message,
    When Erin imports it, Then both conversations are there with every branch, the active path at
    `current_node`, tool calls answered by their results, the image as a placeholder, models and times
    kept."""
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("conversations.json", SAMPLE.read_bytes())

    job = imported("erin", packed.getvalue(), storage)

    assert job["status"] == "done", job
    assert job["format"] == "chatgpt"
    assert job["progress"] == {**job["progress"], "conversations_total": 2, "messages_total": 18}
    exported = {c["conversation"]["title"]: c for c in archive_of("erin", storage)["conversations"]}
    first = exported["Arithmetic, a cat and football"]
    messages = {m["seq"]: m for m in first["messages"]}
    assert len(messages) == 15
    path, seq = [], first["conversation"]["active_leaf"]
    while seq:
        path.append(messages[seq])
        seq = messages[seq].get("parent_seq", seq - 1)
    assert path[0]["content"] == "Argentina won it."
    assert path[-1]["content"] == "What is 2+2?"
    assert len(path) == 12
    roots = [m["content"] for m in messages.values() if m.get("parent_seq", m["seq"] - 1) == 0]
    assert roots == ["What is 2+2?", "What is 3+3?"]  # the edit is a branch beside the original
    regenerated = [m for m in messages.values() if "(regenerated)" in m.get("content", "")]
    assert regenerated[0]["model"] == "gpt-4o-mini"
    assert regenerated[0]["parent_seq"] == 3
    calls = {json.loads(m["tool_calls"])[0]["id"]: m for m in messages.values() if m.get("tool_calls")}
    results = [m for m in messages.values() if m["role"] == "tool"]
    assert len(calls) == len(results) == 2
    for result in results:
        assert result["tool_call_id"] in calls
        assert messages[result["seq"] - 1] is calls[result["tool_call_id"]]
    assert any("image file-service://file-cat123" in m.get("content", "") for m in messages.values())
    assert messages[1]["created_at"] == "2024-11-19T07:06:41.000000Z"
    assert first["conversation"]["model"] == "gpt-4o"
    assert all(m["tokens"] > 0 for m in messages.values())
    assert exported["Hello"]["messages"][0]["role"] == "system"
    leaf = api.detail(job["conversation_ids"][0], user="erin")
    assert leaf.status == 200, leaf.body


def _bad_files() -> dict[str, tuple[bytes, str, str]]:
    """name -> (file, the error's path, words its message holds)."""
    cycle = json.loads(SAMPLE.read_text())
    cycle[0]["mapping"]["root"]["parent"] = "a4"
    dangling = json.loads(SAMPLE.read_text())
    dangling[1]["mapping"]["ans"]["parent"] = "nowhere"
    wrong_role = json.loads(SAMPLE.read_text())
    wrong_role[1]["mapping"]["q"]["message"]["author"]["role"] = "wizard"
    future = {"format": "chat-history.user-export", "version": 2, "conversations": []}
    return {
        "not json": (b"{this is not json", "", "not JSON"),
        "not an export": (json.dumps({"hello": 1}).encode(), "", "neither"),
        "another version": (gzip.compress(json.dumps(future).encode()), "/version", "version 2"),
        "a cycle": (json.dumps(cycle).encode(), "/0", "cycle"),
        "a dangling parent": (json.dumps(dangling).encode(), "/1", "'nowhere'"),
        "a wrong role": (json.dumps(wrong_role).encode(), "/1/mapping/q/message/author/role", "user"),
        "too large": (SAMPLE.read_bytes() + b" " * 4096, "", "limit"),
    }


@pytest.mark.parametrize("name", list(_bad_files()))
def test_prv3_a_bad_file_fails_with_a_clear_error_and_writes_nothing(
    storage: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    name: str,
) -> None:
    """PRV-3: Given a file that is not JSON, not an export, of another version, a mapping with a cycle or a
    dangling parent, a wrong role, or over the size limit, When Fay imports it, Then the job fails with
    an error naming where (a JSON pointer) and what, and Fay has no conversation and no message."""
    data, path, words = _bad_files()[name]
    monkeypatch.setattr(import_run, "MAX_BYTES", len(SAMPLE.read_bytes()) + 1024)

    job = imported("fay", data, storage)

    assert job["status"] == "failed", job
    assert job["error"]["path"] == path, job["error"]
    assert words in job["error"]["message"], job["error"]
    assert conversations_of("fay") == []
    table = boto3.client("dynamodb", region_name="us-east-1").scan(TableName="chat-history-it")["Items"]
    assert not [i for i in table if i["pk"]["S"].startswith("USER#fay#")]


def test_prv3_a_worker_killed_half_way_and_delivered_again_leaves_one_copy(
    storage: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PRV-3: Given an import whose first run dies after writing a conversation's messages and again
    after publishing part of them, When SQS delivers the message again, Then nothing was listed while
    the messages were written, and the job ends with one copy of each conversation and message."""
    monkeypatch.setattr(import_run, "_STEP_ITEMS", 1)
    monkeypatch.setattr("chat_core.store.imported.BATCH", 1)
    job = import_call("POST", "gus", user="gus").body
    upload(job, SAMPLE.read_bytes())
    import_call("POST", "gus", job["import_id"], "start", user="gus")

    def die_at(phase: str) -> Any:
        def step(at: str, n: int) -> None:
            if at == phase:
                raise RuntimeError("the worker was killed")

        return step

    with pytest.raises(RuntimeError):
        import_run.run_import("gus", job["import_id"], on_step=die_at("write"))
    assert conversations_of("gus") == []  # written but not published: nothing to see
    with pytest.raises(RuntimeError):
        import_run.run_import("gus", job["import_id"], on_step=die_at("publish"))
    run_queue(storage)  # the message was never deleted: SQS delivers it again

    done = import_call("GET", "gus", job["import_id"], user="gus").body
    assert done["status"] == "done"
    listed = conversations_of("gus")
    assert sorted(c["conversation_id"] for c in listed) == sorted(done["conversation_ids"])
    archive = archive_of("gus", storage)
    assert [len(c["messages"]) for c in archive["conversations"]] in ([15, 3], [3, 15])


def test_prv3_only_the_user_or_an_administrator_may_import_and_a_start_needs_the_file(storage: str) -> None:  # noqa: F811
    """PRV-3: Given Hal's import job, When Bob asks for or reads it he is refused; starting before the
    upload is a conflict; an unknown job is not found."""
    assert import_call("POST", "hal", user=BOB).status == 403
    job = import_call("POST", "hal", user="hal").body
    assert import_call("GET", "hal", job["import_id"], user=BOB).status == 403
    assert import_call("POST", "hal", job["import_id"], "start", user="hal").status == 409
    assert import_call("GET", "hal", "0" * 32, user="hal").status == 404
    assert job["upload"]["method"] == "PUT"
    assert job["upload"]["expires_in"] == 3600


def test_prv3_the_import_functions_make_only_the_calls_their_roles_grant(
    storage: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OPS-1, PRV-3: Given an import asked for, started and read through the route, and run by the worker's
    handler from an SQS batch, Then every DynamoDB, S3 and SQS action each made is one its route-table
    entry grants (the upload URL is signed with the route's role: PutObject)."""
    made: dict[str, set[str]] = {"user_imports": set(), "run_user_job": set()}
    current: list[str] = []
    original = botocore.client.BaseClient._make_api_call

    def record(self: Any, operation: str, params: Any) -> Any:
        service = self.meta.service_model.service_name
        if current and service in ("dynamodb", "s3", "sqs"):
            made[current[-1]].add(f"{service}:{ {'HeadObject': 'GetObject'}.get(operation, operation) }")
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    current.append("user_imports")
    job = import_call("POST", "ivy", user="ivy").body
    made["user_imports"].add("s3:PutObject")  # the presigned PUT: signed, not sent
    current.clear()
    upload(job, SAMPLE.read_bytes())
    current.append("user_imports")
    assert import_call("POST", "ivy", job["import_id"], "start", user="ivy").status == 202
    current.clear()
    sqs = boto3.client("sqs", region_name="us-east-1")
    got = sqs.receive_message(QueueUrl=storage)["Messages"][0]
    current.append("run_user_job")
    record_ = {
        "messageId": got["MessageId"],
        "body": got["Body"],
        "eventSource": "aws:sqs",
        "receiptHandle": "r",
    }
    record_ |= {"attributes": {}, "messageAttributes": {}, "md5OfBody": "", "awsRegion": "us-east-1"}
    record_["eventSourceARN"] = "arn:aws:sqs:us-east-1:123456789012:q"
    answer = api.load("run_user_job").lambda_handler(
        {"Records": [record_]}, LambdaContext(function_name="run_user_job")
    )
    assert answer == {"batchItemFailures": []}
    current[:] = ["user_imports"]
    assert import_call("GET", "ivy", job["import_id"], user="ivy").body["status"] == "done"
    current.clear()

    for folder, actions in made.items():
        granted = BY_FOLDER[folder].actions
        assert actions <= granted, f"{folder}: {sorted(actions - granted)} not granted"
    assert "dynamodb:BatchWriteItem" in made["run_user_job"]
    assert "s3:GetObject" in made["run_user_job"]


def test_prv1_an_erasure_erases_the_users_import_jobs_and_uploads(storage: str) -> None:  # noqa: F811
    """PRV-1, PRV-3: Given Jon's finished import (its job, its upload, its conversations), When Jon is
    erased, Then no import job, uploaded file or imported conversation of his is left."""
    job = imported("jon", SAMPLE.read_bytes(), storage)
    assert job["status"] == "done"
    digest = hashlib.sha256(b"jon").hexdigest()[:32]
    s3 = boto3.client("s3", region_name="us-east-1")
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=f"u/{digest}/imports/").get("KeyCount") == 1

    erasure_call("POST", "jon", user="jon")
    run_queue(storage)

    assert import_call("GET", "jon", job["import_id"], user="jon").status == 404
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=f"u/{digest}/").get("KeyCount") == 0
    assert conversations_of("jon") == []
