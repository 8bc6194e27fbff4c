"""The local store behaves like DynamoDB where the service relies on it (REL-2, REL-6)."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from chat_local import moto_fidelity
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

TABLE = "fidelity"


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }.items():
        monkeypatch.setenv(name, value)
    moto_fidelity.install()
    moto_fidelity.reset()
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        yield dynamodb


def _put(sk: str, value: str, *, new: bool = True) -> dict[str, Any]:
    put: dict[str, Any] = {"TableName": TABLE, "Item": {"pk": {"S": "p"}, "sk": {"S": sk}, "v": {"S": value}}}
    if new:
        put["ConditionExpression"] = "attribute_not_exists(pk)"
    return {"Put": put}


def _items(client: Any) -> dict[str, str]:
    found = client.query(
        TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}}
    )["Items"]
    return {item["sk"]["S"]: item["v"]["S"] for item in found}


def _stream_records(client: Any) -> int:
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    return len(streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"])


def test_a_cancelled_transaction_leaves_items_and_stream_as_they_were(client: Any) -> None:
    """A transaction whose last condition fails applies nothing: earlier writes in it are undone and
    their stream records withdrawn."""
    client.transact_write_items(TransactItems=[_put("a", "1")])
    with pytest.raises(ClientError) as raised:
        client.transact_write_items(
            TransactItems=[_put("a", "changed", new=False), _put("b", "2"), _put("a2", "x"), _put("b", "dup")]
        )
    assert raised.value.response["Error"]["Code"] in ("TransactionCanceledException", "ValidationException")
    client.transact_write_items(TransactItems=[_put("c", "3")])
    with pytest.raises(ClientError):
        client.transact_write_items(TransactItems=[_put("d", "4"), _put("c", "again")])
    assert _items(client) == {"a": "1", "c": "3"}
    assert _stream_records(client) == 2


def test_a_resent_transaction_with_its_token_succeeds_once(client: Any) -> None:
    """REL-2: the same ClientRequestToken and request again answers success and writes nothing more; the
    same token with another request is refused."""
    client.transact_write_items(TransactItems=[_put("a", "1")], ClientRequestToken="t1")
    client.transact_write_items(TransactItems=[_put("a", "1")], ClientRequestToken="t1")
    assert _items(client) == {"a": "1"}
    with pytest.raises(ClientError) as raised:
        client.transact_write_items(TransactItems=[_put("b", "2")], ClientRequestToken="t1")
    assert raised.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    with pytest.raises(ClientError):
        client.transact_write_items(TransactItems=[_put("a", "1")], ClientRequestToken="t2")


def test_records_every_reader_has_read_are_dropped_and_reading_goes_on(client: Any) -> None:
    """REL-6: the local stream keeps only what a reader still needs; sequence numbers and reading from any
    kept position are unchanged."""
    from moto.dynamodbstreams.models import dynamodbstreams_backends

    for n in range(5):
        client.transact_write_items(TransactItems=[_put(f"k{n}", str(n))])
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    first = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    page = streams.get_records(ShardIterator=first["ShardIterator"], Limit=3)
    read = [r["dynamodb"]["SequenceNumber"] for r in page["Records"]]
    backend = dynamodbstreams_backends["123456789012"]["us-east-1"]
    reader = backend.shard_iterators[page["NextShardIterator"]]
    # When everything before the reader's position is trimmed
    assert moto_fidelity.trim_read_records([reader]) == 3
    # Then the reader goes on with the two records left, and a new reader starts at them
    rest = streams.get_records(ShardIterator=page["NextShardIterator"])["Records"]
    assert len(rest) == 2
    assert int(rest[0]["dynamodb"]["SequenceNumber"]) == int(read[-1]) + 1
    again = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    assert [
        r["dynamodb"]["SequenceNumber"]
        for r in streams.get_records(ShardIterator=again["ShardIterator"])["Records"]
    ] == [r["dynamodb"]["SequenceNumber"] for r in rest]
    assert moto_fidelity.trim_read_records([reader]) == 0


def test_stream_records_are_answered_as_moto_itself_answers_them(client: Any) -> None:
    """LOC-2: GetRecords (fidelity 3: a record's members taken by their names) answers exactly what moto's
    own serializer answers, for inserts, changes and removals of items holding every attribute type."""
    from moto.core.serialize import JSONSerializer

    # Given items written, changed and removed, with every attribute type (binary and sets included)
    every_type = {
        "s": {"S": "text ✓"},
        "n": {"N": "-12.5"},
        "b": {"B": b"\x00\xffbytes"},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": [b"x", b"y"]},
        "m": {"M": {"inner": {"L": [{"S": "x"}, {"NULL": True}, {"BOOL": False}, {"M": {}}]}}},
        "l": {"L": []},
    }
    for n in range(4):
        client.put_item(TableName=TABLE, Item={"pk": {"S": "p"}, "sk": {"S": f"k{n}"}, "v": {"S": str(n)}})
    key = {"pk": {"S": "p"}}
    client.put_item(TableName=TABLE, Item={**key, "sk": {"S": "k1"}, "v": {"S": "1"}, **every_type})
    client.put_item(TableName=TABLE, Item={**key, "sk": {"S": "k2"}, "v": {"S": "2"}, "n": {"N": "1"}})
    client.delete_item(TableName=TABLE, Key={"pk": {"S": "p"}, "sk": {"S": "k1"}})
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]

    def read() -> tuple[str, list[dict[str, Any]]]:
        bodies: list[bytes] = []
        streams.meta.events.register("after-call.dynamodbstreams.GetRecords", _keep_body(bodies))
        try:
            start = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
            records = streams.get_records(ShardIterator=start["ShardIterator"])["Records"]
        finally:
            streams.meta.events.unregister("after-call.dynamodbstreams.GetRecords", _keep_body(bodies))
        return bodies[0].decode(), records

    # When the records are read with the local store's serializer, then with moto's own
    ours_body, ours = read()
    patched = JSONSerializer._serialize
    JSONSerializer._serialize = moto_fidelity._original_serialize  # type: ignore[method-assign]
    try:
        theirs_body, theirs = read()
    finally:
        JSONSerializer._serialize = patched  # type: ignore[method-assign]
    # Then the answers are the same: every record, every image, every timestamp
    assert [r["eventName"] for r in ours] == ["INSERT"] * 4 + ["MODIFY", "MODIFY", "REMOVE"]
    assert ours[4]["dynamodb"]["NewImage"]["b"] == {"B": b"\x00\xffbytes"}
    assert ours == theirs
    # (the bodies' records, members in their order; each answer's NextShardIterator is its own)
    assert json.dumps(json.loads(ours_body)["Records"]) == json.dumps(json.loads(theirs_body)["Records"])


class _keep_body:
    """A botocore event handler that keeps each answer's body; compared by value to unregister it."""

    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies

    def __call__(self, http_response: Any, **_: Any) -> None:
        self.bodies.append(http_response.content)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _keep_body) and other.bodies is self.bodies

    def __hash__(self) -> int:
        return id(self.bodies)


def _page_through(
    client: Any, *, table: str = TABLE, sort_key: str = "sk", **query: Any
) -> tuple[list[str], list[int]]:
    """Every sort key (`sort_key`) a Query returns, page by page, and each page's ScannedCount."""
    keys: list[str] = []
    scanned: list[int] = []
    start: dict[str, Any] | None = None
    while True:
        page = client.query(TableName=table, **query, **({"ExclusiveStartKey": start} if start else {}))
        keys += [item[sort_key]["S"] for item in page["Items"]]
        scanned.append(page["ScannedCount"])
        start = page.get("LastEvaluatedKey")
        if not start:
            return keys, scanned


@pytest.mark.parametrize("forward", [True, False])
def test_a_query_answers_its_partition_alone_in_order_and_in_pages(client: Any, forward: bool) -> None:
    """LOC-2: a Query of one partition (fidelity 6: only that partition is read) answers what DynamoDB
    does: its items alone, in sort-key order either way, key conditions and filters applied, in pages."""
    # Given a small partition among bigger ones, its items written out of order
    for partition, count in (("big", 300), ("small", 12), ("other", 50)):
        for n in reversed(range(count)) if partition == "small" else range(count):
            item = {"pk": {"S": partition}, "sk": {"S": f"m#{n:03d}"}, "n": {"N": str(n)}}
            client.put_item(TableName=TABLE, Item=item)
    small = [f"m#{n:03d}" for n in range(12)]
    order = small if forward else small[::-1]
    # When it is queried whole, in pages of 5, by a key range, and with a filter
    whole, _ = _page_through(
        client,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "small"}},
        ScanIndexForward=forward,
    )
    paged, scanned = _page_through(
        client,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "small"}},
        ScanIndexForward=forward,
        Limit=5,
    )
    ranged, _ = _page_through(
        client,
        KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :b",
        ExpressionAttributeValues={":p": {"S": "small"}, ":a": {"S": "m#003"}, ":b": {"S": "m#007"}},
        ScanIndexForward=forward,
    )
    filtered, _ = _page_through(
        client,
        KeyConditionExpression="pk = :p",
        FilterExpression="n >= :n",
        ExpressionAttributeValues={":p": {"S": "small"}, ":n": {"N": "10"}},
        ScanIndexForward=forward,
    )
    absent, _ = _page_through(
        client, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "nobody"}}
    )
    # Then each answer is the small partition's, in order, and the pages add up to it
    assert whole == paged == order
    assert sum(scanned) == 12
    assert ranged == [k for k in order if "m#003" <= k <= "m#007"]
    assert filtered == [k for k in order if int(k[2:]) >= 10]
    assert absent == []
    # and asking for an absent partition created nothing
    assert client.scan(TableName=TABLE, Select="COUNT")["Count"] == 362


def _index_table(client: Any) -> str:
    name = "fidelity-index"
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "gsi1pk", "gsi1sk")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "gsi1",
                "KeySchema": [
                    {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def _index_page_through(client: Any, table: str, **query: Any) -> tuple[list[str], list[int]]:
    """Every listing-index sort key a Query of the gsi1 index returns, page by page, and ScannedCounts."""
    return _page_through(client, table=table, sort_key="gsi1sk", IndexName="gsi1", **query)


@pytest.mark.parametrize("forward", [True, False])
def test_an_index_query_answers_its_index_partition_alone_in_order_and_in_pages(
    client: Any, forward: bool
) -> None:
    """LOC-2: a Query of the global index (fidelity 8: only that index partition is read) answers what
    DynamoDB does, however the items got there or left: put, updated into or out of the partition,
    deleted, written by a batch or a transaction, or left alone by a cancelled transaction."""
    table = _index_table(client)

    def put(pk: str, n: int, owner: str | None, *, sort: bool = True) -> None:
        item = {"pk": {"S": pk}, "sk": {"S": "~META"}, "n": {"N": str(n)}}
        if owner is not None:
            item["gsi1pk"] = {"S": owner}
            if sort:
                item["gsi1sk"] = {"S": f"t{n:03d}"}
        client.put_item(TableName=table, Item=item)

    # A first Query builds the index; everything after keeps it up to date
    assert _index_page_through(client, table, **_owner("me"))[0] == []
    # Given items of several owners, written out of order, in many partitions of the table
    for n in reversed(range(20)):
        put(f"c{n}", n, "me")
    for n in range(20, 60):
        put(f"c{n}", n, "someone")
    put("no-sort", 99, "me", sort=False)  # not in the index: no sort key
    put("no-owner", 98, None)
    # and items moved into and out of the partition, deleted, batched, transacted, or refused
    client.update_item(
        TableName=table,
        Key={"pk": {"S": "c25"}, "sk": {"S": "~META"}},
        UpdateExpression="SET gsi1pk = :me",
        ExpressionAttributeValues={":me": {"S": "me"}},
    )
    client.update_item(
        TableName=table,
        Key={"pk": {"S": "c3"}, "sk": {"S": "~META"}},
        UpdateExpression="SET gsi1pk = :other",
        ExpressionAttributeValues={":other": {"S": "someone"}},
    )
    client.delete_item(TableName=table, Key={"pk": {"S": "c4"}, "sk": {"S": "~META"}})
    client.batch_write_item(
        RequestItems={
            table: [
                {"DeleteRequest": {"Key": {"pk": {"S": "c5"}, "sk": {"S": "~META"}}}},
                {"PutRequest": {"Item": {**_meta("b1"), "gsi1pk": {"S": "me"}, "gsi1sk": {"S": "t070"}}}},
            ]
        }
    )
    client.transact_write_items(
        TransactItems=[
            {
                "Put": {
                    "TableName": table,
                    "Item": {**_meta("x1"), "gsi1pk": {"S": "me"}, "gsi1sk": {"S": "t071"}},
                }
            }
        ]
    )
    with pytest.raises(client.exceptions.TransactionCanceledException):
        client.transact_write_items(
            TransactItems=[
                {"Delete": {"TableName": table, "Key": {"pk": {"S": "c6"}, "sk": {"S": "~META"}}}},
                {
                    "ConditionCheck": {
                        "TableName": table,
                        "Key": {"pk": {"S": "c7"}, "sk": {"S": "~META"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
    mine = sorted([f"t{n:03d}" for n in range(20) if n not in (3, 4, 5)] + ["t025", "t070", "t071"])
    order = mine if forward else mine[::-1]
    # When the partition is queried whole, in pages of 4, by a sort key range, with a filter, and absent
    whole, _ = _index_page_through(client, table, **_owner("me"), ScanIndexForward=forward)
    paged, scanned = _index_page_through(client, table, **_owner("me"), ScanIndexForward=forward, Limit=4)
    ranged, _ = _index_page_through(
        client,
        table,
        KeyConditionExpression="gsi1pk = :o AND gsi1sk BETWEEN :a AND :b",
        ExpressionAttributeValues={":o": {"S": "me"}, ":a": {"S": "t006"}, ":b": {"S": "t012"}},
        ScanIndexForward=forward,
    )
    filtered, _ = _index_page_through(
        client,
        table,
        KeyConditionExpression="gsi1pk = :o",
        FilterExpression="n >= :n",
        ExpressionAttributeValues={":o": {"S": "me"}, ":n": {"N": "15"}},
        ScanIndexForward=forward,
    )
    absent, _ = _index_page_through(client, table, **_owner("nobody"))
    counted = client.query(TableName=table, IndexName="gsi1", Select="COUNT", **_owner("me"))["Count"]
    # Then each answer is that index partition's, in order, and the pages and counts add up to it
    assert whole == paged == order
    assert sum(scanned) == len(mine) == counted
    assert ranged == [k for k in order if "t006" <= k <= "t012"]
    assert filtered == [k for k in order if int(k[1:]) >= 15]
    assert absent == []
    assert _index_page_through(client, table, **_owner("someone"))[0] == sorted(
        [f"t{n:03d}" for n in range(20, 60) if n != 25] + ["t003"]
    )
    # and they came from the index partitions kept beside the table (what the Query read)
    stored = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[table]
    _, by_owner, _ = stored.__dict__["_gsi_keys"]["gsi1"]
    assert {owner.value: len(keys) for owner, keys in by_owner.items()} == {
        "me": len(mine) + 1,
        "someone": 40,
    }


def _owner(owner: str) -> dict[str, Any]:
    return {"KeyConditionExpression": "gsi1pk = :o", "ExpressionAttributeValues": {":o": {"S": owner}}}


def _meta(pk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "~META"}, "n": {"N": "50"}}


def test_concurrent_updates_each_answer_the_item_as_they_found_it(client: Any) -> None:
    """LOC-2: an UpdateItem's ALL_OLD is the item just before that update, as DynamoDB answers it: eight
    threads taking slots at once (`leaf = next - 1 + 2, next = next + 2`, as a post reserving on a branched
    conversation) each see a distinct, whole state, never another update's half or a state already used."""
    client.put_item(
        TableName=TABLE, Item={"pk": {"S": "p"}, "sk": {"S": "c"}, "next": {"N": "1"}, "leaf": {"N": "0"}}
    )
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def take(times: int) -> None:
        for _ in range(times):
            old = client.update_item(
                TableName=TABLE,
                Key={"pk": {"S": "p"}, "sk": {"S": "c"}},
                UpdateExpression="SET leaf = #n + :one, #n = #n + :two",
                ExpressionAttributeNames={"#n": "next"},
                ExpressionAttributeValues={":one": {"N": "1"}, ":two": {"N": "2"}},
                ReturnValues="ALL_OLD",
            )["Attributes"]
            with lock:
                seen.append((int(old["next"]["N"]), int(old["leaf"]["N"])))

    threads = [threading.Thread(target=take, args=(40,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Every update started from its own state, and every state was whole: the leaf is the slot before next
    assert sorted(n for n, _ in seen) == list(range(1, 1 + 2 * 320, 2))
    assert all(leaf == n - 1 for n, leaf in seen)


#: Sort key conditions of the kinds the service's Queries use (and the rest DynamoDB takes).
_SORT_CONDITIONS = (
    ("sk = :a", 1),
    ("sk < :a", 1),
    ("sk <= :a", 1),
    ("sk > :a", 1),
    ("sk >= :a", 1),
    ("sk BETWEEN :a AND :b", 2),
    ("begins_with(sk, :a)", 1),
)
_SORT_KEYS = st.text(alphabet="abc#", min_size=1, max_size=3)
_PARTITIONS = itertools.count()


def _pages(client: Any, query: dict[str, Any]) -> list[tuple[list[str], int, int, Any]]:
    """Every page of a Query: its sort keys, Count, ScannedCount and LastEvaluatedKey."""
    pages: list[tuple[list[str], int, int, Any]] = []
    start = None
    while len(pages) < 60:
        page = client.query(TableName=TABLE, **query, **({"ExclusiveStartKey": start} if start else {}))
        start = page.get("LastEvaluatedKey")
        pages.append(([i["sk"]["S"] for i in page["Items"]], page["Count"], page["ScannedCount"], start))
        if not start:
            break
    return pages


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# A page that ends on its Limit-th match with only unmatched items after it, each way.
@example(
    keys={"a", "b", "c"},
    condition=("sk < :a", 1),
    bounds=["b", "c"],
    limit=1,
    forward=True,
    with_filter=False,
)
@example(
    keys={"a", "b", "c"},
    condition=("sk > :a", 1),
    bounds=["a", "c"],
    limit=2,
    forward=False,
    with_filter=False,
)
@given(
    keys=st.sets(_SORT_KEYS, max_size=10),
    condition=st.sampled_from(_SORT_CONDITIONS),
    bounds=st.lists(_SORT_KEYS, min_size=2, max_size=2),
    limit=st.one_of(st.none(), st.integers(1, 4)),
    forward=st.booleans(),
    with_filter=st.booleans(),
)
def test_a_sort_key_condition_pages_as_moto_pages_the_whole_partition(
    client: Any,
    keys: set[str],
    condition: tuple[str, int],
    bounds: list[str],
    limit: int | None,
    forward: bool,
    with_filter: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LOC-2: a Query with a sort key condition (fidelity 11: only the items it holds and their two
    neighbours are passed to moto) answers the pages, counts and LastEvaluatedKeys of moto's own Query."""
    # Given a partition of its own of short sort keys, written out of order, beside other partitions
    partition = f"p{next(_PARTITIONS)}"
    for n, sk in enumerate(sorted(keys, reverse=True)):
        client.put_item(TableName=TABLE, Item={"pk": {"S": partition}, "sk": {"S": sk}, "n": {"N": str(n)}})
    expression, arity = condition
    low, high = sorted(bounds)
    values = {":p": {"S": partition}, ":a": {"S": low}, **({":b": {"S": high}} if arity == 2 else {})}
    query: dict[str, Any] = {
        "KeyConditionExpression": f"pk = :p AND {expression}",
        "ExpressionAttributeValues": values,
        "ScanIndexForward": forward,
        **({"Limit": limit} if limit else {}),
    }
    if with_filter:
        query["FilterExpression"] = "n <> :n"
        values[":n"] = {"N": "1"}
    # When it is paged through as it is answered here, and as moto answers with the whole partition
    ours = _pages(client, query)
    with monkeypatch.context() as whole_partition:
        whole_partition.setattr(moto_fidelity, "_sort_key_condition", lambda *_: None)
        theirs = _pages(client, query)
    # Then the pages are the same, LastEvaluatedKeys included
    assert ours == theirs
