"""PRV-1..3: what erasing, exporting and importing a user of 10,000 messages costs: DynamoDB and S3 calls,
request units, seconds (moto in-process: the seconds are this machine's CPU, not DynamoDB's latency). The
import rows import the export into a fresh user, and a ChatGPT export of as many messages (conversations
of 100, linear), each run by the worker once the file is uploaded.

    .venv/bin/python -m bench.user_data [--messages 10000] [--others 0]

Units are computed as DynamoDB bills them: a consistent Scan or Query page 1 RCU per 4 KB read (rounded
up per page), a delete 1 WCU per item (keys-only deletes of items up to 1 KB), a put 1 WCU per KB.
`--others N`: messages of another user in the same table, which the erasure's Scan reads too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections import Counter
from typing import Any

import boto3
import botocore.client
from moto import mock_aws

from bench.dynamodb_meter import MOTO_ENV

TABLE, BUCKET, PER_APPEND = "chat-history-bench-prv", "blobs-bench-prv", 30


def _chatgpt(messages: int) -> bytes:
    """A ChatGPT conversations.json of `messages` messages in linear conversations of 100."""
    conversations, n = [], 0
    while n < messages:
        size = min(100, messages - n)
        mapping: dict[str, Any] = {
            "root": {"id": "root", "parent": None, "children": ["m0"], "message": None}
        }
        for i in range(size):
            role = "user" if i % 2 == 0 else "assistant"
            mapping[f"m{i}"] = {
                "id": f"m{i}",
                "parent": "root" if i == 0 else f"m{i - 1}",
                "children": [f"m{i + 1}"] if i < size - 1 else [],
                "message": {
                    "author": {"role": role},
                    "create_time": 1.7e9 + i,
                    "content": {"content_type": "text", "parts": [f"message {i} " * 20]},
                    "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
                },
            }
        conversations.append(
            {"title": f"c{n}", "create_time": 1.7e9, "mapping": mapping, "current_node": f"m{size - 1}"}
        )
        n += size
    return json.dumps(conversations).encode()


def _fill(owner: str, messages: int) -> None:
    """`messages` messages in conversations of 100, appended 30 at a time (no model call)."""
    from tests.support import events
    from tests.support import functions as api

    left = messages
    while left > 0:
        cid = api.create(user=owner).body["conversation_id"]
        in_conversation = min(100, left)
        for start in range(0, in_conversation, PER_APPEND):
            batch = [
                {
                    "role": "user" if (start + i) % 2 == 0 else "assistant",
                    "content": f"message {start + i} " * 20,
                }
                for i in range(min(PER_APPEND, in_conversation - start))
            ]
            event = events.http_event(
                "POST",
                f"/conversations/{cid}/messages",
                route="/conversations/{conversation_id}/messages",
                path_parameters={"conversation_id": cid},
                body={"messages": batch},
                user=owner,
            )
            assert api.invoke("append_messages", event).status == 201
        left -= in_conversation


class Meter:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.rcu = 0.0
        self.wcu = 0.0
        self._original = botocore.client.BaseClient._make_api_call

    def __enter__(self) -> Meter:
        meter, original = self, self._original

        def metered(client: Any, operation: str, params: dict[str, Any]) -> Any:
            service = client.meta.service_model.service_name
            answer = original(client, operation, params)
            if service in ("dynamodb", "s3", "sqs"):
                meter.calls[f"{service}:{operation}"] += 1
            if service == "dynamodb":
                meter._units(operation, params, answer)
            return answer

        botocore.client.BaseClient._make_api_call = metered  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        botocore.client.BaseClient._make_api_call = self._original  # type: ignore[method-assign]

    def _units(self, operation: str, params: dict[str, Any], answer: dict[str, Any]) -> None:
        if operation in ("Scan", "Query"):
            # What the page read: the items it examined. moto answers projected items; the bench sizes
            # each examined item whole from the table afterwards would cost a second scan, so the page's
            # examined items are sized by the average item of the table (`item_bytes`).
            self.rcu += math.ceil(answer.get("ScannedCount", 0) * ITEM_BYTES / 4096) or 1
        elif operation in ("GetItem", "BatchGetItem"):
            self.rcu += 1 * max(
                1, len(answer.get("Responses", {}).get(TABLE, [])) if operation == "BatchGetItem" else 1
            )
        elif operation == "BatchWriteItem":
            self.wcu += sum(len(v) for v in params["RequestItems"].values())
        elif operation in ("PutItem", "UpdateItem", "DeleteItem"):
            self.wcu += math.ceil(len(json.dumps(params.get("Item", {}))) / 1024) or 1


ITEM_BYTES = 400


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=0)
    args = parser.parse_args()
    os.environ.update(MOTO_ENV, TABLE_NAME=TABLE, BLOB_BUCKET=BUCKET, ERASURE_SETTLE_SECONDS="0")
    with mock_aws():
        from tests.support.runtime import renew
        from tests.support.table import create_table

        create_table(TABLE)
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="prv")["QueueUrl"]
        os.environ["USER_DATA_QUEUE_URL"] = queue
        renew()
        _fill("alice", args.messages)
        if args.others:
            _fill("bob", args.others)
        # moto reports no table size: the average item is sized from a scan of the table, as DynamoDB
        # sizes it (close enough: the JSON of the typed item).
        pages = (
            boto3.client("dynamodb", region_name="us-east-1").get_paginator("scan").paginate(TableName=TABLE)
        )
        sizes = [len(json.dumps(item)) for page in pages for item in page["Items"]]
        global ITEM_BYTES
        ITEM_BYTES = max(1, sum(sizes) // max(1, len(sizes)))

        from chat_core.privacy import erasure, export, import_run, imports

        s3 = boto3.client("s3", region_name="us-east-1")

        def import_file(owner: str, data: bytes) -> dict[str, Any]:
            job = imports.request_import(owner, owner, admin=False)
            s3.put_object(
                Bucket=BUCKET, Key=f"{imports.blobs.user_prefix(owner)}imports/{job['import_id']}", Body=data
            )
            return imports.start_import(owner, owner, job["import_id"], admin=False)

        def archive() -> bytes:
            key = f"{imports.blobs.user_prefix('alice')}exports/"
            listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=key)["Contents"]
            return bytes(s3.get_object(Bucket=BUCKET, Key=listed[0]["Key"])["Body"].read())

        rows = []
        for name, step in (
            ("export", lambda: (export.request_export("alice", "alice", admin=False), "export")),
            ("import (the export)", lambda: (import_file("carol", archive()), "carol")),
            ("import (ChatGPT)", lambda: (import_file("dave", _chatgpt(args.messages)), "dave")),
            ("erasure", lambda: (erasure.request_erasure("alice", "alice", admin=False), "erasure")),
        ):
            job, kind = step()
            with Meter() as meter:
                began = time.perf_counter()
                if kind == "export":
                    export.run_export("alice", job["export_id"])
                elif kind == "erasure":
                    erasure.run_erasure("alice")
                else:
                    done = import_run.run_import(kind, job["import_id"])
                    assert done["status"] == "done", done
                seconds = time.perf_counter() - began
            rows.append(
                (
                    name,
                    dict(sorted(meter.calls.items())),
                    round(meter.rcu),
                    round(meter.wcu),
                    round(seconds, 1),
                )
            )
        print(f"user of {args.messages} messages, {args.others} others in the table, item ~{ITEM_BYTES} B")
        for name, calls, rcu, wcu, seconds in rows:
            print(f"| {name} | {sum(calls.values())} calls {calls} | {rcu} RCU | {wcu} WCU | {seconds} s |")


if __name__ == "__main__":
    main()
