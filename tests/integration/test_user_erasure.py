"""PRV-1: erasing a user on the template's table, bucket and queue in moto. After the erasure a scan of
the whole table and bucket finds nothing holding the user's id or content but the receipt, also when the
user posted during the erasure and when the job died half-way and was resumed; another user's items and
objects are byte-for-byte unchanged."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import boto3
import botocore.client
import pytest
from chat_core.privacy import erasure, runner
from chat_core.store import ledger, memory_items, owner_sweep
from chat_core.store.ledger import BudgetRecord

from functions.routes import BY_FOLDER
from tests.integration.test_retention import add_event_and_summary
from tests.support import events
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.runtime import drop, renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TABLE = "chat-history-it"
BUCKET = "chat-history-blobs-it"
ALICE = "alice:eraseme@example.com"  # ':' and '@': the id travels percent-encoded in the path
BOB = "bob"
SECRET = "zebra-marmalade"  # content only Alice ever wrote
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


@pytest.fixture
def storage(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The blob bucket and the user-data queue in moto; returns the queue URL."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="user-data-it")["QueueUrl"]
    monkeypatch.setenv("BLOB_BUCKET", BUCKET)
    monkeypatch.setenv("BLOB_INLINE_BYTES", "1024")
    monkeypatch.setenv("USER_DATA_QUEUE_URL", queue)
    monkeypatch.setenv("ERASURE_SETTLE_SECONDS", "0")
    monkeypatch.setenv("ADMIN_GROUP", "admins")
    renew()
    yield queue
    drop()


def erasure_call(method: str, target: str, *, user: str, groups: str | None = None) -> api.Answer:
    event = events.http_event(
        method,
        f"/users/{quote(target, safe='')}/erasure",
        route="/users/{user_id}/erasure",
        path_parameters={"user_id": quote(target, safe="")},
        body={} if method == "POST" else events._NO_BODY,
        user=user,
    )
    return api.invoke("user_erasure", api._as_member(event, groups))


def lived_a_little(user: str, words: str) -> None:
    """Some of everything a user leaves: conversations with branches, an idempotent post, a named
    conversation, a summary and a turn-log event, an image in S3, memory items, a budget, usage, a world."""
    first = api.post(f"{words} one", user=user, idempotency_key=f"{user}-k1")
    assert first.status == 201, first.body
    conversation_id = first.body["conversation_id"]
    assert api.post(f"{words} two", conversation_id, user=user).status == 201
    edited = api.edit(conversation_id, first.body["user_message"]["message_id"], f"{words} edited", user=user)
    assert edited.status == 201, edited.body
    image = {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
    }
    appended = api.append(
        conversation_id, [{"role": "user", "content": [{"type": "text", "text": words}, image]}], user=user
    )
    assert appended.status in (200, 201), appended.body
    add_event_and_summary(user, conversation_id)
    gone = api.post(f"{words} deleted later", user=user)
    assert api.delete(gone.body["conversation_id"], user=user).status == 204
    memory_items.put(
        user, ("notes",), "k", json.dumps({"v": words}), now="2025-01-01T00:00:00Z", ttl_minutes=None
    )
    ledger.put_limits(
        BudgetRecord(owner=user, limits={"daily_tokens": 1000}, updated_at="2025-01-01T00:00:00Z")
    )
    assert api.usage(user=user).status == 200  # the stream's usage of the replies, delivered
    from chat_core.dialogue.entries import add_entries

    add_entries(
        user,
        "w1",
        ["A", "B"],
        [{"participant_id": "A", "role": "character", "content": words, "game_tick": 1}],
    )


def table_items() -> list[dict[str, Any]]:
    pages = boto3.client("dynamodb", region_name="us-east-1").get_paginator("scan").paginate(TableName=TABLE)
    return [item for page in pages for item in page["Items"]]


def objects() -> dict[str, bytes]:
    s3 = boto3.client("s3", region_name="us-east-1")
    listed = s3.list_objects_v2(Bucket=BUCKET).get("Contents") or []
    return {o["Key"]: s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def traces_of(user: str, secret: str) -> list[str]:
    """Every item or object holding the user's id (raw or escaped, or the digest of S3 keys) or content."""
    digest = hashlib.sha256(user.encode()).hexdigest()[:32]
    needles = (user, user.replace("%", "%25").replace("#", "%23"), secret, digest)
    found = [
        json.dumps(item, sort_keys=True)
        for item in table_items()
        if any(n in json.dumps(item, ensure_ascii=False) for n in needles)
    ]
    found += [
        key for key, body in objects().items() if any(n.encode() in key.encode() + body for n in needles)
    ]
    return found


def others(user: str) -> tuple[list[str], dict[str, bytes]]:
    """Every item and object that is not `user`'s, serialized whole (for a byte-for-byte comparison)."""
    digest = hashlib.sha256(user.encode()).hexdigest()[:32]
    mine = (owner_sweep.owner_prefix(user), "USERJOB#")
    everything = table_items()
    conversations = {
        i["pk"]["S"].rsplit("#", 1)[1] for i in everything if i["pk"]["S"].startswith(mine[0] + "CONV#")
    }
    items = sorted(
        json.dumps(i, sort_keys=True)
        for i in everything
        if not i["pk"]["S"].startswith(mine)
        and not any(c in i.get("data", {}).get("S", "") for c in conversations)
    )
    return items, {k: v for k, v in objects().items() if digest not in k}


def run_queue(queue: str) -> list[dict[str, Any]]:
    """Deliver the queue's messages to the worker until it is empty (as the event source mapping)."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    results = []
    for _ in range(50):
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=1).get("Messages") or []
        if not got:
            return results
        results.append(runner.run(json.loads(got[0]["Body"])))
        sqs.delete_message(QueueUrl=queue, ReceiptHandle=got[0]["ReceiptHandle"])
    raise AssertionError("the queue never emptied")


def test_prv1_erasure_leaves_only_a_receipt_and_other_users_untouched(storage: str) -> None:
    """PRV-1: Given Alice and Bob with some of everything, When Alice asks for her erasure and the worker
    runs it, Then nothing in the table or bucket holds her id or content but the receipt, and Bob's items
    and objects are byte-for-byte as they were."""
    lived_a_little(ALICE, SECRET)
    lived_a_little(BOB, "bob says hi")
    before_items, before_objects = others(ALICE)
    assert len(traces_of(ALICE, SECRET)) > 20

    asked = erasure_call("POST", ALICE, user=ALICE)
    assert asked.status == 202, asked.body
    assert asked.body["status"] == "queued"
    assert erasure_call("POST", ALICE, user=ALICE).body["requested_at"] == asked.body["requested_at"]
    run_queue(storage)

    receipt = erasure_call("GET", ALICE, user=ALICE).body
    assert receipt["status"] == "done"
    assert receipt["counts"]["items"] > 20
    assert receipt["counts"]["objects"] >= 1
    assert receipt["counts"]["idempotency_records"] == 1
    left = traces_of(ALICE, SECRET)
    assert len(left) == 1
    assert '"ERASURE"' in left[0]
    assert SECRET not in left[0]
    assert others(ALICE) == (before_items, before_objects)


def test_prv1_only_the_user_or_an_administrator_may_erase(storage: str) -> None:
    """PRV-1: Given Alice, When Bob asks to erase her he is refused; an administrator may."""
    lived_a_little(ALICE, SECRET)
    assert erasure_call("POST", ALICE, user=BOB).status == 403
    assert erasure_call("GET", ALICE, user=BOB).status == 403
    assert erasure_call("POST", ALICE, user=BOB, groups="[admins]").status == 202
    run_queue(storage)
    assert erasure_call("GET", ALICE, user=ALICE).body["requested_by"] == BOB


def test_prv1_an_erasure_killed_half_way_and_resumed_erases_everything(
    storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PRV-1: Given a run that dies after its first page of the sweep, When the message is delivered
    again, Then the job resumes from its recorded cursor and ends with nothing of Alice's left."""
    lived_a_little(ALICE, SECRET)
    lived_a_little(BOB, "bob says hi")
    before = others(ALICE)
    monkeypatch.setattr(owner_sweep, "SCAN_PAGE", 7)
    erasure_call("POST", ALICE, user=ALICE)

    def die(page: int) -> None:
        if page == 2:
            raise RuntimeError("the worker was killed")

    with pytest.raises(RuntimeError):
        erasure.run_erasure(ALICE, on_page=die)
    midway = erasure_call("GET", ALICE, user=ALICE).body
    assert midway["phase"] == "table"
    assert midway["counts"]["items"] > 0
    run_queue(storage)  # the message was never deleted: SQS delivers it again

    assert erasure_call("GET", ALICE, user=ALICE).body["status"] == "done"
    assert len(traces_of(ALICE, SECRET)) == 1
    assert others(ALICE) == before


def test_prv1_what_the_user_writes_during_the_erasure_is_erased_too(
    storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PRV-1: Given an erasure under way, When Alice posts (a new conversation) while its sweep runs,
    Then a later pass finds and erases it, and the job ends only after a pass that found nothing."""
    lived_a_little(ALICE, SECRET)
    monkeypatch.setattr(owner_sweep, "SCAN_PAGE", 5)
    erasure_call("POST", ALICE, user=ALICE)
    posted: list[str] = []

    def post_meanwhile(page: int) -> None:
        if page == 2 and not posted:
            answer = api.post(f"{SECRET} written during the erasure", user=ALICE)
            assert answer.status == 201
            posted.append(answer.body["conversation_id"])

    erasure.run_erasure(ALICE, on_page=post_meanwhile)
    run_queue(storage)

    receipt = erasure_call("GET", ALICE, user=ALICE).body
    assert posted
    assert receipt["status"] == "done"
    assert receipt["counts"]["passes"] >= 2
    assert len(traces_of(ALICE, SECRET)) == 1


def test_prv1_the_erasure_functions_make_only_the_calls_their_roles_grant(
    storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPS-1, PRV-1: Given an erasure asked for through the route and run by the worker's handler from an
    SQS batch, Then every DynamoDB, S3 and SQS action each made is one its route-table entry grants."""
    lived_a_little(ALICE, SECRET)
    made: dict[str, set[str]] = {"user_erasure": set(), "run_user_job": set()}
    current: list[str] = []
    original = botocore.client.BaseClient._make_api_call

    def record(self: Any, operation: str, params: Any) -> Any:
        service = self.meta.service_model.service_name
        if current and service in ("dynamodb", "s3", "sqs"):
            action = {"ListObjectsV2": "ListBucket", "DeleteObjects": "DeleteObject"}.get(
                operation, operation
            )
            made[current[-1]].add(f"{service}:{action}")
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    current.append("user_erasure")
    assert erasure_call("POST", ALICE, user=ALICE).status == 202
    current.clear()
    sqs = boto3.client("sqs", region_name="us-east-1")
    while got := sqs.receive_message(QueueUrl=storage).get("Messages"):
        sqs.delete_message(QueueUrl=storage, ReceiptHandle=got[0]["ReceiptHandle"])
        current.append("run_user_job")
        batch = {
            "Records": [
                {
                    "messageId": got[0]["MessageId"],
                    "body": got[0]["Body"],
                    "eventSource": "aws:sqs",
                    "receiptHandle": "r",
                    "attributes": {},
                    "messageAttributes": {},
                    "md5OfBody": "",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q",
                    "awsRegion": "us-east-1",
                }
            ]
        }
        answer = api.load("run_user_job").lambda_handler(batch, LambdaContext(function_name="run_user_job"))
        assert answer == {"batchItemFailures": []}
        current.clear()

    assert erasure_call("GET", ALICE, user=ALICE).body["status"] == "done"
    for folder, actions in made.items():
        granted = BY_FOLDER[folder].actions
        assert actions
        assert actions <= granted, f"{folder}: {sorted(actions - granted)} not granted"
    assert "dynamodb:Scan" in made["run_user_job"]
