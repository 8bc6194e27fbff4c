"""chat_local.streams: Lambda event filtering and the local DynamoDB-stream event source mapping."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_local.dynamodb import EmbeddedDynamoDB, TtlSweeper, dynamodb_client, ensure_table
from chat_local.lambda_runtime import FunctionRuntime
from chat_local.streams import IteratorRegistry, StreamPoller, matches_filter, passes_filters, streams_client
from chat_local.template import Template, load_template

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "local_app" / "template.yaml"

RECORD = {
    "eventName": "INSERT",
    "dynamodb": {
        "Keys": {"pk": {"S": "USER#a#CONV#1"}, "sk": {"S": "MSG#0001"}},
        "NewImage": {"type": {"S": "message"}, "tokens": {"N": "12"}, "tags": {"SS": ["x", "y"]}},
    },
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"eventName": ["INSERT"]}, True),
        ({"eventName": ["MODIFY", "REMOVE"]}, False),
        ({"dynamodb": {"NewImage": {"type": {"S": ["message"]}}}}, True),
        ({"dynamodb": {"NewImage": {"type": {"S": ["summary"]}}}}, False),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "USER#"}]}}}}, True),
        ({"dynamodb": {"Keys": {"sk": {"S": [{"suffix": "0001"}]}}}}, True),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"anything-but": {"prefix": "USER#"}}]}}}}, False),
        ({"eventName": [{"anything-but": ["REMOVE"]}]}, True),
        ({"eventName": [{"equals-ignore-case": "insert"}]}, True),
        ({"dynamodb": {"NewImage": {"tokens": {"N": [{"numeric": [">", 10, "<=", 12]}]}}}}, True),
        ({"dynamodb": {"NewImage": {"tokens": {"N": [{"numeric": [">", 12]}]}}}}, False),
        ({"dynamodb": {"NewImage": {"pinned": [{"exists": False}]}}}, True),
        ({"dynamodb": {"NewImage": {"pinned": [{"exists": True}]}}}, False),
        ({"dynamodb": {"OldImage": {"type": {"S": ["message"]}}}}, False),
        ({"dynamodb": {"NewImage": {"tags": {"SS": ["y"]}}}}, True),
        (
            {"$or": [{"eventName": ["REMOVE"]}, {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "MSG#"}]}}}}]},
            True,
        ),
    ],
)
def test_filter_patterns_follow_lambda_event_filtering(pattern: dict[str, Any], expected: bool) -> None:
    """FilterCriteria: literals, prefix/suffix, anything-but, numeric, exists, arrays, $or (Lambda rules)."""
    # When the pattern is matched against a stream record / Then
    assert matches_filter(pattern, RECORD) is expected


def test_several_filters_are_alternatives() -> None:
    """A record passes when any filter matches; no filters pass everything."""
    # When two filters are given, one matching / Then the record passes; and with none
    assert passes_filters([{"eventName": ["REMOVE"]}, {"eventName": ["INSERT"]}], RECORD)
    assert not passes_filters([{"eventName": ["REMOVE"]}], RECORD)
    assert passes_filters([], RECORD)


# ---------------------------------------------------------------------------------------------- polling


@pytest.fixture(scope="module")
def template() -> Template:
    return load_template(FIXTURE, region="us-east-1", table_name="streams-test")


@pytest.fixture(scope="module")
def store(template: Template) -> Iterator[tuple[Any, Any, str]]:
    """Embedded moto with the fixture's table; boto3 in handlers finds it through the environment."""
    with pytest.MonkeyPatch.context() as mp:
        embedded = EmbeddedDynamoDB().start()
        mp.setenv("AWS_ENDPOINT_URL_DYNAMODB", embedded.endpoint)
        mp.setenv("TABLE_NAME", "streams-test")
        client = dynamodb_client(embedded.endpoint, "us-east-1")
        spec = template.table_for_env()
        assert spec is not None
        status = ensure_table(client, spec)
        assert status.stream_arn
        yield client, streams_client(embedded.endpoint, "us-east-1"), status.stream_arn
        embedded.stop()


def _poller(template: Template, store: tuple[Any, Any, str], **changes: Any) -> StreamPoller:
    _client, streams, arn = store
    sweeper = changes.pop("sweeper", None)
    on_failure = changes.pop("on_failure", None)
    subscription = dataclasses.replace(template.streams[0], **changes)
    runtime = FunctionRuntime(subscription.function, region="us-east-1", max_concurrency=1)
    poller = StreamPoller(
        subscription,
        runtime,
        streams_client=streams,
        stream_arn=arn,
        region="us-east-1",
        registry=IteratorRegistry(prune_moto=True, account_id="123456789012", region="us-east-1"),
        was_ttl_removal=sweeper.was_swept if sweeper else (lambda _k: False),
        retry_delay_s=0.01,
        on_failure=on_failure,
    )
    poller.position_at_latest()
    return poller


def _audited(client: Any, event_name: str = "INSERT") -> list[dict[str, Any]]:
    return client.query(
        TableName="streams-test",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": f"AUDIT#{event_name}"}},
    )["Items"]


def _drain(poller: StreamPoller) -> None:
    for _ in range(20):
        if not poller.poll_once():
            return


def test_records_written_before_the_mapping_starts_are_not_replayed(template: Template, store: Any) -> None:
    """Restored snapshot data is not delivered again: the mapping starts at the stream's latest record."""
    # Given an item written before the poller starts
    client = store[0]
    client.put_item(TableName="streams-test", Item={"pk": {"S": "OLD"}, "sk": {"S": "1"}})
    poller = _poller(template, store)
    # When the poller reads and a new item arrives
    client.put_item(TableName="streams-test", Item={"pk": {"S": "NEW"}, "sk": {"S": "1"}})
    _drain(poller)
    # Then only the new item was delivered
    keys = [i["sk"]["S"] for i in _audited(client)]
    assert any(k.startswith("NEW|1#") for k in keys)
    assert not any(k.startswith("OLD|1#") for k in keys)


def test_a_reported_item_failure_is_retried_from_that_record(template: Template, store: Any) -> None:
    """ReportBatchItemFailures: the failed record and what follows are delivered again, earlier ones not."""
    # Given three items, the middle one failing once in the function
    client = store[0]
    poller = _poller(template, store)
    for sk, extra in (("a", {}), ("b", {"fail_once": {"N": "1"}}), ("c", {})):
        client.put_item(TableName="streams-test", Item={"pk": {"S": "RETRY"}, "sk": {"S": sk}, **extra})
    # When the stream is processed
    _drain(poller)
    # Then all three were audited exactly once, after one failure
    keys = sorted(i["sk"]["S"].split("#")[0] for i in _audited(client) if i["sk"]["S"].startswith("RETRY"))
    assert keys == ["RETRY|a", "RETRY|b", "RETRY|c"]
    assert poller.stats.failures == 1
    assert poller.stats.dropped == 0


def test_a_failing_function_is_retried_then_the_batch_is_dropped(template: Template, store: Any) -> None:
    """MaximumRetryAttempts: after the retries the batch goes to OnFailure and the stream moves on."""
    # Given a subscription whose function always raises, with an on-failure destination
    boom = template.functions["BoomFunction"]
    sent: list[dict[str, Any]] = []
    poller = _poller(template, store, function=boom, maximum_retry_attempts=1, on_failure=sent.append)
    # When a record arrives
    store[0].put_item(TableName="streams-test", Item={"pk": {"S": "DOOMED"}, "sk": {"S": "1"}})
    _drain(poller)
    # Then it was tried twice (1 + 1 retry), dropped, and described to the OnFailure destination
    assert poller.stats.failures == 2
    assert poller.stats.dropped == 1
    (failure,) = sent
    assert failure["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert failure["requestContext"]["approximateInvokeCount"] == 2
    assert failure["responseContext"]["functionError"] == "Unhandled"
    assert failure["DDBStreamBatchInfo"]["batchSize"] == 1
    assert failure["DDBStreamBatchInfo"]["streamArn"] == store[2]


def test_filtered_records_never_reach_the_function(template: Template, store: Any) -> None:
    """FilterCriteria: the audit function's own AUDIT# writes are filtered out (no feedback loop)."""
    # Given a poller, and an audit item written directly
    poller = _poller(template, store)
    store[0].put_item(TableName="streams-test", Item={"pk": {"S": "AUDIT#MANUAL"}, "sk": {"S": "1"}})
    # When the stream is processed
    _drain(poller)
    # Then the record was filtered, not delivered
    assert poller.stats.filtered_out == 1
    assert poller.stats.records == 0


def test_ttl_removals_carry_the_dynamodb_service_identity(template: Template, store: Any) -> None:
    """TTL locally: a sweep's deletions reach stream functions as REMOVE records by dynamodb.amazonaws.com."""
    # Given an expired item and a poller that knows the sweeper
    client = store[0]
    client.put_item(
        TableName="streams-test",
        Item={"pk": {"S": "TTL"}, "sk": {"S": "1"}, "expires_at": {"N": str(int(time.time()) - 5)}},
    )
    sweeper = TtlSweeper(client, "streams-test", "expires_at")
    poller = _poller(template, store, sweeper=sweeper)
    # When the sweep deletes it and the stream is processed
    assert sweeper.sweep() == 1
    _drain(poller)
    # Then the function saw a REMOVE with the service identity
    removes = [i for i in _audited(client, "REMOVE") if i["sk"]["S"].startswith("TTL|1")]
    assert len(removes) == 1
    assert '"principalId": "dynamodb.amazonaws.com"' in removes[0]["record"]["S"]
