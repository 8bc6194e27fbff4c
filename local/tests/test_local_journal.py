"""chat_local.journal: the embedded store's snapshot + write-ahead journal (LOC-3)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_local.dynamodb import EmbeddedDynamoDB, SnapshotError, TtlSweeper, ensure_table
from chat_local.journal import DurableTable, _frame, read_snapshot
from chat_local.s3 import BucketMirror, create_buckets, s3_client
from chat_local.template import LOCAL_ACCOUNT_ID, TableSpec, load_template

REPO = Path(__file__).resolve().parents[2]
REGION = "us-east-1"


_counter = iter(range(1_000_000))


def _table(client: Any) -> TableSpec:
    spec = load_template(
        REPO / "template.yaml", region=REGION, table_name=f"j{next(_counter)}"
    ).table_for_env()
    assert spec is not None
    ensure_table(client, spec)
    return spec


def _durable(store: EmbeddedDynamoDB, directory: Path, table: TableSpec) -> DurableTable:
    return DurableTable(
        directory, table.name, region=REGION, account_id=LOCAL_ACCOUNT_ID, lock=store.request_lock
    )


def _items(client: Any, table: TableSpec) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for page in client.get_paginator("scan").paginate(TableName=table.name, ConsistentRead=True):
        for item in page["Items"]:
            found[(item["pk"]["S"], item["sk"]["S"])] = item
    return found


@pytest.fixture
def journaled(
    store: EmbeddedDynamoDB, client: Any, tmp_path: Path
) -> Iterator[tuple[TableSpec, DurableTable]]:
    """A fresh table whose writes the store journals to tmp_path."""
    table = _table(client)
    durable = _durable(store, tmp_path, table)
    durable.load()
    store.durable = durable
    yield table, durable
    store.durable = None
    durable.close()


def test_every_kind_of_write_is_replayed_onto_a_fresh_table(
    store: EmbeddedDynamoDB, client: Any, tmp_path: Path, journaled: tuple[TableSpec, DurableTable]
) -> None:
    """LOC-3: PutItem, UpdateItem, DeleteItem, BatchWriteItem and TransactWriteItems are in the journal
    with what they left; a failed conditional write leaves nothing to replay."""
    table, _ = journaled
    name = table.name
    # Given every kind of write, binary and nested values included, and a refused one
    text = {"S": "中文 and emoji 🎉"}
    client.put_item(
        TableName=name, Item={"pk": {"S": "a"}, "sk": {"S": "1"}, "b": {"B": b"\x00\xff"}, "t": text}
    )
    client.update_item(
        TableName=name,
        Key={"pk": {"S": "a"}, "sk": {"S": "1"}},
        UpdateExpression="SET n = :n, m = :m",
        ExpressionAttributeValues={":n": {"N": "7"}, ":m": {"M": {"l": {"L": [{"S": "x"}, {"NULL": True}]}}}},
    )
    client.batch_write_item(
        RequestItems={
            name: [{"PutRequest": {"Item": {"pk": {"S": "b"}, "sk": {"S": str(i)}}}} for i in range(3)]
        }
    )
    client.delete_item(TableName=name, Key={"pk": {"S": "b"}, "sk": {"S": "0"}})
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": "c"}, "sk": {"S": "1"}, "v": {"S": "t"}}}},
            {"Delete": {"TableName": name, "Key": {"pk": {"S": "b"}, "sk": {"S": "1"}}}},
        ]
    )
    with pytest.raises(client.exceptions.ConditionalCheckFailedException):
        client.put_item(
            TableName=name,
            Item={"pk": {"S": "a"}, "sk": {"S": "1"}},
            ConditionExpression="attribute_not_exists(pk)",
        )
    expected = _items(client, table)
    # When the journal is loaded into another table
    other = _table(client)
    report = _durable(store, tmp_path, other).load()
    # Then it holds the same items
    assert _items(client, other) == expected
    assert report.items == 3
    assert report.torn == 0


def test_a_torn_last_record_is_ignored_with_a_log_line(
    store: EmbeddedDynamoDB,
    client: Any,
    tmp_path: Path,
    journaled: tuple[TableSpec, DurableTable],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """LOC-3: a kill in the middle of a journal write leaves a partial record: the start ignores it (that
    request was never answered), says so, and keeps everything before it; later writes go to a new file."""
    table, _ = journaled
    for i in range(3):
        client.put_item(TableName=table.name, Item={"pk": {"S": "t"}, "sk": {"S": str(i)}})
    journal = sorted((tmp_path / "journal").glob("*.log"))[-1]
    complete = journal.read_bytes()
    last = complete.splitlines(keepends=True)[-1]
    # Given a journal whose last record was cut short (and one that is complete but damaged)
    for tail in (last[: len(last) // 2], last[:-1], b"00000000" + last[8:]):
        journal.write_bytes(complete + tail)
        other = _table(client)
        caplog.clear()
        # When it is loaded
        with caplog.at_level(logging.WARNING, logger="chat_local.journal"):
            loaded = _durable(store, tmp_path, other)
            report = loaded.load()
        loaded.close()
        # Then the start succeeds with every complete record, and the torn one is named in the log
        assert report.torn == 1
        assert sorted(k[1] for k in _items(client, other)) == ["0", "1", "2"]
        assert "cut short" in caplog.text
        assert journal.name in caplog.text


def test_a_snapshot_taken_while_writes_go_on_plus_its_journal_is_the_table(
    store: EmbeddedDynamoDB, client: Any, tmp_path: Path, journaled: tuple[TableSpec, DurableTable]
) -> None:
    """LOC-3: the snapshot does not stop writes; whatever it copied, snapshot + journal give the table."""
    table, durable = journaled
    for i in range(300):
        client.put_item(
            TableName=table.name, Item={"pk": {"S": "s"}, "sk": {"S": f"{i:04}"}, "n": {"N": "0"}}
        )
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            client.update_item(
                TableName=table.name,
                Key={"pk": {"S": "s"}, "sk": {"S": f"{n % 300:04}"}},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
            client.delete_item(
                TableName=table.name, Key={"pk": {"S": "s"}, "sk": {"S": f"{(n * 7) % 300:04}"}}
            )
            client.put_item(TableName=table.name, Item={"pk": {"S": "s"}, "sk": {"S": f"new{n}"}})

    # Given writes going on while two snapshots are taken
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        durable.snapshot()
        durable.snapshot()
    finally:
        stop.set()
        thread.join()
    expected = _items(client, table)
    # Then the older journals are gone, and snapshot + journal load into exactly the table
    _, base = read_snapshot(tmp_path / "dynamodb.json")
    assert [int(p.stem) for p in (tmp_path / "journal").glob("*.log")] == [base]
    other = _table(client)
    _durable(store, tmp_path, other).load()
    assert _items(client, other) == expected


def test_a_snapshot_cut_short_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    """Nothing lost on failure: a snapshot without its end line stops the start."""
    path = tmp_path / "dynamodb.json"
    path.write_text('{"version": 2, "table": "t", "journal": 3}\n{"pk": {"S": "a"}}\n', encoding="utf-8")
    with pytest.raises(SnapshotError, match="incomplete"):
        read_snapshot(path)


def test_expired_items_are_found_in_process(
    client: Any, journaled: tuple[TableSpec, DurableTable], store: EmbeddedDynamoDB
) -> None:
    """The TTL sweep's candidates come from the store's items, not a Scan (which reads the whole table
    again for every page): the same items a `expires_at < now` filter finds."""
    table, durable = journaled
    for sk, ttl in (("old", {"N": "100"}), ("new", {"N": "300"}), ("text", {"S": "100"}), ("none", None)):
        item: dict[str, Any] = {"pk": {"S": "ttl"}, "sk": {"S": sk}}
        if ttl is not None:
            item["expires_at"] = ttl
        client.put_item(TableName=table.name, Item=item)
    sweeper = TtlSweeper(client, table.name, "expires_at", find_expired=durable.expired)
    assert durable.expired("expires_at", 200) == [{"pk": {"S": "ttl"}, "sk": {"S": "old"}}]
    assert sweeper.sweep(now=200) == 1
    assert sorted(k[1] for k in _items(client, table)) == ["new", "none", "text"]


def test_an_object_is_in_its_mirror_before_the_store_answers(store: EmbeddedDynamoDB, tmp_path: Path) -> None:
    """LOC-3: S3 objects (API-17 blobs) are written to the data directory before the put is answered,
    and removed before the delete is; a multi-object delete brings the whole bucket's mirror up to date."""
    s3 = s3_client(store.endpoint, REGION)
    create_buckets(s3, ["mirrored"], REGION)
    mirror = BucketMirror(s3, "mirrored", tmp_path / "mirrored")
    store.on_object_write = lambda bucket, key: mirror.sync(key) if bucket == "mirrored" else None
    try:
        s3.put_object(Bucket="mirrored", Key="c/1/part", Body=b"\x00data")
        assert (tmp_path / "mirrored" / "c" / "1" / "part").read_bytes() == b"\x00data"
        s3.put_object(Bucket="mirrored", Key="c/2", Body=b"two")
        s3.delete_object(Bucket="mirrored", Key="c/1/part")
        assert not (tmp_path / "mirrored" / "c" / "1" / "part").exists()
        s3.delete_objects(Bucket="mirrored", Delete={"Objects": [{"Key": "c/2"}]})
        assert not (tmp_path / "mirrored" / "c" / "2").exists()
    finally:
        store.on_object_write = None


def test_a_crash_on_either_side_of_the_snapshot_rename_loses_nothing(
    store: EmbeddedDynamoDB, client: Any, tmp_path: Path, journaled: tuple[TableSpec, DurableTable]
) -> None:
    """LOC-3: killed while a snapshot is written (before its rename), the start uses the old snapshot and
    every journal since; killed after the rename but before the old journals were deleted, it uses the
    new snapshot and its own journals alone."""
    table, durable = journaled
    client.put_item(TableName=table.name, Item={"pk": {"S": "r"}, "sk": {"S": "1"}, "v": {"S": "first"}})
    durable.snapshot()
    client.put_item(TableName=table.name, Item={"pk": {"S": "r"}, "sk": {"S": "1"}, "v": {"S": "second"}})
    client.put_item(TableName=table.name, Item={"pk": {"S": "r"}, "sk": {"S": "2"}})
    expected = _items(client, table)
    snapshot = tmp_path / "dynamodb.json"
    kept = {p.name: p.read_bytes() for p in (tmp_path / "journal").glob("*.log")}
    old_snapshot = snapshot.read_bytes()
    # Given a crash before the rename: a new journal was started, a half-written temp file is left
    durable.snapshot()
    snapshot.write_bytes(old_snapshot)
    for name, data in kept.items():
        (tmp_path / "journal" / name).write_bytes(data)
    (tmp_path / ".dynamodb.json.99.tmp").write_text('{"version": 2, "journal": 9}\n{"pk"', encoding="utf-8")
    other = _table(client)
    _durable(store, tmp_path, other).load()
    # Then the old snapshot and every journal give the table
    assert _items(client, other) == expected
    # Given a crash after the rename, an older journal still there (one that would undo a later write)
    durable.snapshot()
    _, base = read_snapshot(snapshot)
    stale = {"pk": {"S": "r"}, "sk": {"S": "1"}, "v": {"S": "stale"}}
    stale_record = _frame({"w": [[{"pk": stale["pk"], "sk": stale["sk"]}, stale]]})
    (tmp_path / "journal" / f"{base - 1:08d}.log").write_bytes(stale_record)
    other = _table(client)
    _durable(store, tmp_path, other).load()
    # Then it is not replayed (and is gone)
    assert _items(client, other) == expected
    assert not (tmp_path / "journal" / f"{base - 1:08d}.log").exists()
