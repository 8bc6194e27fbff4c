"""PRV-1..3: what erasing, exporting and importing a user of 10,000 messages costs: DynamoDB and S3 calls,
request units, seconds (moto in-process: the seconds are this machine's CPU, not DynamoDB's latency). The
import rows import the export into a fresh user, and a ChatGPT export of as many messages (conversations
of 100, linear), each run by the worker once the file is uploaded.

    .venv/bin/python -m bench.user_data [--messages 10000] [--others 3000]

Units are computed as DynamoDB bills them: a consistent Scan or Query page 1 RCU per 4 KB read (rounded
up per page), a delete 1 WCU per item (keys-only deletes of items up to 1 KB), a put 1 WCU per KB.
`--others N`: messages of three other users in the same table, which the erasure's Scan reads too. The
user's messages are in conversations of 100 (one appended through the handler, the others its items
written again under new ids). `make bench` runs it at 10,000 (bench/bench_user_data.py).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import time
from collections import Counter
from typing import Any

import boto3
import botocore.client
from moto import mock_aws

from bench.dynamodb_meter import MOTO_ENV, moto_fixes

TABLE, BUCKET, PER_APPEND, PER_CONVERSATION = "chat-history-bench-prv", "blobs-bench-prv", 30, 100
USER = "bench-heavy-user"
#: Other users' messages, spread over OTHER_USERS users: the erasure's Scan reads the whole table.
OTHERS, OTHER_USERS = 3_000, 3


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


def _first_conversation(owner: str) -> str:
    """One conversation of PER_CONVERSATION messages through the append handler (30 per call, no model
    call): the items a real append writes (messages, turn-log events, the conversation and its listing
    copy), to be cloned."""
    from tests.support import functions as api

    cid = str(api.create(user=owner).body["conversation_id"])
    for start in range(0, PER_CONVERSATION, PER_APPEND):
        batch = [
            {"role": "user" if (start + i) % 2 == 0 else "assistant", "content": f"message {start + i} " * 20}
            for i in range(min(PER_APPEND, PER_CONVERSATION - start))
        ]
        assert api.append(cid, batch, user=owner).status == 201
    return cid


def _fill(owner: str, messages: int, template: list[dict[str, Any]], template_owner: str, cid: str) -> None:
    """`messages` messages of `owner` in conversations of PER_CONVERSATION: the template conversation's
    items written again under a new conversation id (and owner) with BatchWriteItem. Appending through
    the handler slows as the table grows (moto), and a user of 10,000 messages never finished filling;
    a heavy user's data is many conversations like this one anyway."""
    client: Any = boto3.client("dynamodb", region_name="us-east-1")
    conversations = math.ceil(messages / PER_CONVERSATION)
    for n in range(conversations):
        new_cid = f"{cid[:16]}{n:010d}"
        if owner == template_owner and n == 0:
            continue  # the template itself
        text = json.dumps(template).replace(cid, new_cid).replace(f"USER#{template_owner}", f"USER#{owner}")
        items = json.loads(text)
        for start in range(0, len(items), 25):
            requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
            client.batch_write_item(RequestItems={TABLE: requests})


def fill_table(messages: int, others: int) -> None:
    """The bench user's `messages` and `others` messages of OTHER_USERS other users."""
    cid = _first_conversation(USER)
    pages = boto3.client("dynamodb", region_name="us-east-1").get_paginator("scan").paginate(TableName=TABLE)
    template = [item for page in pages for item in page["Items"]]
    _fill(USER, messages, template, USER, cid)
    for n in range(OTHER_USERS if others else 0):
        _fill(f"bench-other-user-{n}", others // OTHER_USERS, template, USER, cid)


class Meter:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.rcu = 0.0
        self.wcu = 0.0
        #: Seconds inside the AWS calls (botocore and moto): the rest of a job's time is our code.
        self.in_calls = 0.0
        self._original = botocore.client.BaseClient._make_api_call

    def __enter__(self) -> Meter:
        meter, original = self, self._original

        def metered(client: Any, operation: str, params: dict[str, Any]) -> Any:
            service = client.meta.service_model.service_name
            began = time.perf_counter()
            answer = original(client, operation, params)
            meter.in_calls += time.perf_counter() - began
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


def measure(messages: int, others: int) -> dict[str, Any]:
    """Fill a fresh moto table, then export and erase the bench user, metering each job's run."""
    saved = {name: os.environ.get(name) for name in [*MOTO_ENV, *_ENV, "USER_DATA_QUEUE_URL"]}
    os.environ.update(MOTO_ENV, **_ENV)
    try:
        # The bench's moto fixes (a TransactWriteItems no longer copies the whole table, responses are
        # serialized at the cost of their bytes): as the local server runs it.
        with mock_aws(), moto_fixes():
            return _measure(messages, others)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        from tests.support.runtime import drop

        drop()


_ENV = {"TABLE_NAME": TABLE, "BLOB_BUCKET": BUCKET, "ERASURE_SETTLE_SECONDS": "0"}


def _measure(messages: int, others: int) -> dict[str, Any]:
    from tests.support.runtime import renew
    from tests.support.table import create_table

    create_table(TABLE)
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="prv")["QueueUrl"]
    os.environ["USER_DATA_QUEUE_URL"] = queue
    renew()
    began = time.perf_counter()
    fill_table(messages, others)
    filled = time.perf_counter() - began
    # moto reports no table size: the average item is sized from a scan of the table, as DynamoDB
    # sizes it (close enough: the JSON of the typed item).
    pages = boto3.client("dynamodb", region_name="us-east-1").get_paginator("scan").paginate(TableName=TABLE)
    sizes = [len(json.dumps(item)) for page in pages for item in page["Items"]]
    global ITEM_BYTES
    ITEM_BYTES = max(1, sum(sizes) // max(1, len(sizes)))

    from chat_core.privacy import erasure, export, import_run, imports

    s3 = boto3.client("s3", region_name="us-east-1")

    def uploaded(owner: str, data: bytes) -> str:
        job = imports.request_import(owner, owner, admin=False)
        key = f"{imports.blobs.user_prefix(owner)}imports/{job['import_id']}"
        s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        imports.start_import(owner, owner, job["import_id"], admin=False)
        return str(job["import_id"])

    def archive() -> bytes:
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{imports.blobs.user_prefix(USER)}exports/")
        return bytes(s3.get_object(Bucket=BUCKET, Key=listed["Contents"][0]["Key"])["Body"].read())

    rows = []
    for name in ("export", "import (the export)", "import (ChatGPT)", "erasure"):
        if name == "export":
            job_id = export.request_export(USER, USER, admin=False)["export_id"]
            run = functools.partial(export.run_export, USER, job_id)
        elif name == "erasure":
            erasure.request_erasure(USER, USER, admin=False)
            run = functools.partial(erasure.run_erasure, USER)
        else:
            owner = "bench-import-archive" if name == "import (the export)" else "bench-import-chatgpt"
            data = archive() if owner == "bench-import-archive" else _chatgpt(messages)
            import_id = uploaded(owner, data)
            run = functools.partial(import_run.run_import, owner, import_id)
        with Meter() as meter:
            began = time.perf_counter()
            result = run()
            seconds = time.perf_counter() - began
        assert result["status"] == "done", result
        rows.append(
            {
                "job": name,
                "calls": dict(sorted(meter.calls.items())),
                "rcu": round(meter.rcu),
                "wcu": round(meter.wcu),
                "seconds": round(seconds, 1),
                "in_calls": round(meter.in_calls, 1),
                "counts": result.get("counts"),
            }
        )
    return {
        "messages": messages,
        "others": others,
        "table_items": len(sizes),
        "item_bytes": ITEM_BYTES,
        "fill_seconds": round(filled, 1),
        "jobs": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=OTHERS, help="other users' messages in the table")
    args = parser.parse_args()
    found = measure(args.messages, args.others)
    print(
        f"user of {found['messages']} messages, {found['others']} of {OTHER_USERS} others in the table "
        f"({found['table_items']} items, ~{found['item_bytes']} B each; filled in {found['fill_seconds']} s)"
    )
    for row in found["jobs"]:
        calls = row["calls"]
        print(
            f"| {row['job']} | {sum(calls.values())} calls {calls} | {row['rcu']} RCU | {row['wcu']} WCU "
            f"| {row['seconds']} s ({row['in_calls']} s in botocore and moto) | {row['counts']} |"
        )


if __name__ == "__main__":
    main()
