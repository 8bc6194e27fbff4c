"""chat_local.dynamodb: the embedded moto server, the table from the template, snapshots and TTL sweeps."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from chat_local.dynamodb import (
    EmbeddedDynamoDB,
    SnapshotError,
    Snapshotter,
    TtlSweeper,
    ensure_table,
    read_snapshot,
    restore_items,
    write_snapshot,
)
from chat_local.template import TableSpec, load_template

REPO = Path(__file__).resolve().parents[2]


_counter = iter(range(1_000_000))


@pytest.fixture
def table(client: Any) -> TableSpec:
    """A fresh table per test, created from the project's template."""
    name = f"t{next(_counter)}"
    spec = load_template(REPO / "template.yaml", region="us-east-1", table_name=name).table_for_env()
    assert spec is not None
    ensure_table(client, spec)
    return spec


def test_table_is_created_from_the_template_with_index_stream_and_ttl(client: Any, table: TableSpec) -> None:
    """LOC-1: the embedded table has the template's keys, GSI, stream and TTL."""
    # When the created table is described
    described = client.describe_table(TableName=table.name)["Table"]
    ttl = client.describe_time_to_live(TableName=table.name)["TimeToLiveDescription"]
    # Then it matches the template
    assert [k["AttributeName"] for k in described["KeySchema"]] == ["pk", "sk"]
    assert [g["IndexName"] for g in described["GlobalSecondaryIndexes"]] == ["gsi1"]
    assert described["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert described["LatestStreamArn"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}


def test_ensure_table_leaves_an_existing_table_alone(client: Any, table: TableSpec) -> None:
    """An external endpoint (DynamoDB Local) keeps its table: created only when missing."""
    # Given an item in the existing table
    client.put_item(TableName=table.name, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
    # When the table is ensured again
    status = ensure_table(client, table)
    # Then it was not recreated and the item is still there
    assert status.created is False
    assert status.warnings == []
    assert client.get_item(TableName=table.name, Key={"pk": {"S": "a"}, "sk": {"S": "b"}})["Item"]


def test_snapshot_round_trip_keeps_every_attribute_type(
    client: Any, table: TableSpec, tmp_path: Path
) -> None:
    """Persistence: snapshot then restore gives back the same items, binary and sets included."""
    # Given items with every attribute type
    item = {
        "pk": {"S": "USER#x"},
        "sk": {"S": "MSG#1"},
        "n": {"N": "42.5"},
        "b": {"B": b"\x00\xff"},
        "bs": {"BS": [b"\x01", b"\x02"]},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2"]},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"BOOL": True}, {"NULL": True}]}}},
        "text": {"S": "中文 and emoji 🎉"},
    }
    client.put_item(TableName=table.name, Item=item)
    path = tmp_path / "dynamodb.json"
    # When the table is snapshotted and restored into another table
    assert write_snapshot(client, table.name, path) == 1
    spec2 = load_template(
        REPO / "template.yaml", region="us-east-1", table_name=table.name + "r"
    ).table_for_env()
    assert spec2 is not None
    ensure_table(client, spec2)
    restore_items(client, spec2.name, read_snapshot(path))
    # Then the restored item equals the original
    restored = client.get_item(TableName=spec2.name, Key={"pk": item["pk"], "sk": item["sk"]})["Item"]
    assert restored["b"]["B"] == b"\x00\xff"
    assert sorted(restored["bs"]["BS"]) == [b"\x01", b"\x02"]
    assert restored["m"] == item["m"]
    assert restored["text"] == item["text"]
    assert restored["n"] == item["n"]
    # and the file is plain JSON with no temp file left behind
    assert json.loads(path.read_text(encoding="utf-8"))["count"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["dynamodb.json"]


def test_restore_handles_more_than_one_batch(client: Any, table: TableSpec) -> None:
    """BatchWriteItem takes 25 items: larger snapshots are split."""
    # Given 60 items
    items = [{"pk": {"S": "P"}, "sk": {"S": f"{i:03}"}} for i in range(60)]
    # When they are restored
    restore_items(client, table.name, items)
    # Then all are there
    count = client.query(
        TableName=table.name, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "P"}}
    )["Count"]
    assert count == 60


def test_a_corrupt_snapshot_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    """Nothing lost on failure: an unreadable snapshot stops the start instead of being overwritten."""
    # Given a broken snapshot file
    path = tmp_path / "dynamodb.json"
    path.write_text('{"version": 1, "items": [', encoding="utf-8")
    # When it is read / Then the error says what to do
    with pytest.raises(SnapshotError, match="Move it aside"):
        read_snapshot(path)
    # and a missing file is simply an empty start
    assert read_snapshot(tmp_path / "absent.json") == []


def test_snapshotter_writes_only_after_changes(
    store: EmbeddedDynamoDB, client: Any, table: TableSpec, tmp_path: Path
) -> None:
    """Snapshots are taken when something changed (writes seen by the embedded server), not on every tick."""
    # Given a snapshotter that has seen no change yet
    path = tmp_path / "dynamodb.json"
    snapshotter = Snapshotter(client, table.name, path, change_counter=lambda: store.write_count)
    # When nothing is written / Then nothing is saved
    client.get_item(TableName=table.name, Key={"pk": {"S": "x"}, "sk": {"S": "y"}})
    assert snapshotter.save_if_changed() is False
    assert not path.exists()
    # When an item is written / Then it is saved once
    client.put_item(TableName=table.name, Item={"pk": {"S": "x"}, "sk": {"S": "y"}})
    assert snapshotter.save_if_changed() is True
    assert snapshotter.save_if_changed() is False
    assert read_snapshot(path)[0]["pk"] == {"S": "x"}


def test_ttl_sweep_removes_expired_items_only_and_remembers_them(client: Any, table: TableSpec) -> None:
    """DynamoDB TTL locally: expired items are deleted, the rest kept; deletions are known as TTL removals."""
    # Given an expired item, a future one and one without TTL
    now = int(time.time())
    expired = {"pk": {"S": "T"}, "sk": {"S": "old"}}
    client.put_item(TableName=table.name, Item={**expired, "expires_at": {"N": str(now - 10)}})
    client.put_item(
        TableName=table.name,
        Item={"pk": {"S": "T"}, "sk": {"S": "new"}, "expires_at": {"N": str(now + 3600)}},
    )
    client.put_item(TableName=table.name, Item={"pk": {"S": "T"}, "sk": {"S": "none"}})
    sweeper = TtlSweeper(client, table.name, "expires_at")
    # When a sweep runs
    deleted = sweeper.sweep(now)
    # Then only the expired item is gone, and it is recognised as a TTL removal
    remaining = client.query(
        TableName=table.name, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "T"}}
    )["Items"]
    assert deleted == 1
    assert sorted(i["sk"]["S"] for i in remaining) == ["new", "none"]
    assert sweeper.was_swept(expired)
    assert not sweeper.was_swept({"pk": {"S": "T"}, "sk": {"S": "new"}})


def test_a_presigned_put_sent_as_form_data_stores_its_body(store: EmbeddedDynamoDB) -> None:
    """LOC-2: S3 stores a PUT's body whatever its Content-Type; `curl --data-binary` to a presigned URL
    (form data by default) stores the file locally as it does deployed, not an empty object."""
    import boto3
    import httpx

    # Given a bucket of the embedded store and a presigned PUT URL
    s3 = boto3.client(
        "s3",
        endpoint_url=store.endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    s3.create_bucket(Bucket="uploads")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "uploads", "Key": "f.json"})
    body = b'[{"title": "a=1&b=2"}]'
    # When the file is PUT with curl's default Content-Type
    answer = httpx.put(url, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    # Then the object holds the file byte for byte
    assert answer.status_code == 200
    assert s3.get_object(Bucket="uploads", Key="f.json")["Body"].read() == body
