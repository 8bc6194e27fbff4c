"""The table's DynamoDB stream in moto, read as Lambda would deliver it to the template's stream functions.

`TableStream(table)` reads new records with the real dynamodbstreams API (GetShardIterator/GetRecords),
turns them into the Lambda record shape, and applies a function's FilterCriteria from template.yaml, so a
test hands a handler exactly what its event source mapping would. moto never expires TTL items: a test
deletes the item itself and marks that REMOVE record with the TTL service identity (`as_ttl_removal`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from chat_local.streams import lambda_record, passes_filters

from tests.support import aws_clients
from tests.support.table import template

REGION = "us-east-1"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def stream_filters(function: str) -> list[dict[str, Any]]:
    """The FilterCriteria patterns of `function`'s DynamoDB event in template.yaml (parsed JSON)."""
    resource = template()["Resources"][function]
    patterns: list[dict[str, Any]] = []
    for event in resource["Properties"]["Events"].values():
        if event["Type"] != "DynamoDB":
            continue
        for item in event["Properties"].get("FilterCriteria", {}).get("Filters", []):
            pattern = item["Pattern"]
            patterns.append(json.loads(pattern) if isinstance(pattern, str) else dict(pattern))
    return patterns


class TableStream:
    """Every record of the table's stream from now on, in order, each read once by `read()`."""

    def __init__(self, table: str) -> None:
        self.client = aws_clients.client("dynamodbstreams", REGION)
        dynamodb = aws_clients.client("dynamodb", REGION)
        self.arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        shards = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        self._iterators: dict[str, str | None] = {}
        for shard in shards:
            # LATEST would start after records not yet written; start at the newest existing one instead.
            answer = self.client.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )
            self._iterators[shard["ShardId"]] = answer["ShardIterator"]
        self.read()  # whatever happened before (table creation, fixtures) is not this test's business

    def read(self) -> list[dict[str, Any]]:
        """The records written since the last read, in the Lambda event's record shape."""
        return [record for records in self.read_shards().values() for record in records]

    def read_shards(self) -> dict[str, list[dict[str, Any]]]:
        """The same, by the shard they were read from (what a tumbling-window event names)."""
        found: dict[str, list[dict[str, Any]]] = {}
        for shard_id, iterator in list(self._iterators.items()):
            while iterator is not None:
                answer = self.client.get_records(ShardIterator=iterator, Limit=1000)
                raw = answer.get("Records", [])
                found.setdefault(shard_id, []).extend(
                    lambda_record(r, stream_arn=self.arn, region=REGION, ttl_removal=False) for r in raw
                )
                iterator = answer.get("NextShardIterator")
                self._iterators[shard_id] = iterator
                if not raw:
                    break
        return found


def for_function(function: str, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The records `function`'s event source mapping would deliver (its template FilterCriteria)."""
    filters = stream_filters(function)
    return [dict(r) for r in records if passes_filters(filters, r)]


def as_ttl_removal(record: Mapping[str, Any]) -> dict[str, Any]:
    """A REMOVE record as DynamoDB's TTL process writes it: the service is the identity."""
    changed = copy.deepcopy(dict(record))
    changed["userIdentity"] = dict(TTL_IDENTITY)
    return changed


def event(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The Lambda event of one batch; from a mapping with a tumbling window (the summarizer's), the
    shard it was read from too (moto's stream has one shard)."""
    batch = [dict(r) for r in records]
    arn = next((r.get("eventSourceARN") for r in batch if r.get("eventSourceARN")), None)
    if arn is None:
        return {"Records": batch}
    client = aws_clients.client("dynamodbstreams", REGION)
    shards = client.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    return {"Records": batch, "shardId": shards[-1]["ShardId"], "state": {}, "isFinalInvokeForWindow": False}
