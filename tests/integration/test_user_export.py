"""PRV-2: a user's export on the template's table, bucket and queue in moto: one archive, valid against
the versioned JSON Schema in schemas/, holding every branch of every conversation and the rest."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import quote

import boto3
import jsonschema
from chat_core.store import ledger
from chat_core.store.ledger import BudgetRecord

from tests.integration.test_user_erasure import BOB, BUCKET, lived_a_little, run_queue, storage  # noqa: F401
from tests.support import events
from tests.support import functions as api

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "user-export.v1.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text())


def export_call(method: str, target: str, export_id: str = "", *, user: str) -> api.Answer:
    suffix = f"/{export_id}" if export_id else ""
    event = events.http_event(
        method,
        f"/users/{quote(target, safe='')}/exports{suffix}",
        route="/users/{user_id}/exports" + ("/{export_id}" if export_id else ""),
        path_parameters={"user_id": target, **({"export_id": export_id} if export_id else {})},
        body={} if method == "POST" else events._NO_BODY,
        user=user,
    )
    return api.invoke("user_exports", event)


def test_prv2_an_export_holds_every_branch_and_matches_its_schema(storage: str) -> None:  # noqa: F811
    """PRV-2: Given Carol with a branched conversation, memory, a budget, usage and a world, and Bob,
    When Carol exports and the worker runs, Then the job's URL names one archive in S3 that the schema
    accepts, with both branches' messages (tokens and costs kept) and none of Bob's data."""
    carol = "carol"
    lived_a_little(carol, "carol writes")
    lived_a_little(BOB, "bob says hi")
    ledger.put_limits(
        BudgetRecord(owner=carol, limits={"daily_tokens": 5}, updated_at="2025-01-01T00:00:00Z")
    )

    asked = export_call("POST", carol, user=carol)
    assert asked.status == 202, asked.body
    assert export_call("POST", carol, user=BOB).status == 403
    run_queue(storage)
    done = export_call("GET", carol, asked.body["export_id"], user=carol)

    assert done.body["status"] == "done"
    assert "X-Amz-Expires" in done.body["url"]
    key = done.body["url"].split(f"{BUCKET}.s3.amazonaws.com/")[1].split("?")[0]
    raw = boto3.client("s3", region_name="us-east-1").get_object(Bucket=BUCKET, Key=key)["Body"].read()
    archive = json.loads(gzip.decompress(raw))
    jsonschema.validate(archive, SCHEMA)
    assert archive["user_id"] == carol
    assert "bob says hi" not in json.dumps(archive)
    [branched] = [c for c in archive["conversations"] if len(c["messages"]) > 4]
    contents = [m.get("content") for m in branched["messages"]]
    assert "carol writes one" in contents
    assert "carol writes edited" in contents  # the edit's branch beside the original
    replies = [m for m in branched["messages"] if m["role"] == "assistant"]
    assert all("usage" in m and m["model"] for m in replies)
    assert json.loads(archive["budget"]["limits"]) == {"daily_tokens": 5}  # stored as a JSON attribute
    assert archive["memory_items"]
    assert archive["usage"]
    assert archive["worlds"][0][0]["type"] == "world"
