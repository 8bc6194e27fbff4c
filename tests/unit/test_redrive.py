"""OPS-6: `make redrive` starts SQS's message move back to the source queue, with parameters SQS's own
model accepts (botocore's Stubber checks each call against it), and only reads a stream's failures."""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.stub import Stubber

from scripts.redrive import redrive

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/chat-WorldImportDeadLetterQueue-x"
ARN = "arn:aws:sqs:us-east-1:123456789012:chat-WorldImportDeadLetterQueue-x"


def _clients(queue: str) -> tuple[Stubber, Stubber, Any, Any]:
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    cfn_stub, sqs_stub = Stubber(cloudformation), Stubber(sqs)
    detail = {
        "LogicalResourceId": queue,
        "PhysicalResourceId": URL,
        "ResourceType": "AWS::SQS::Queue",
        "LastUpdatedTimestamp": "2026-11-28T00:00:00Z",
        "ResourceStatus": "CREATE_COMPLETE",
    }
    cfn_stub.add_response(
        "describe_stack_resource",
        {"StackResourceDetail": detail},
        {"StackName": "chat", "LogicalResourceId": queue},
    )
    sqs_stub.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": ARN}},
        {"QueueUrl": URL, "AttributeNames": ["QueueArn"]},
    )
    return cfn_stub, sqs_stub, cloudformation, sqs


def test_a_queue_dead_letter_queue_is_moved_back_to_its_source() -> None:
    """OPS-6: the move names the dead-letter queue as its source and no destination (its source queue)."""
    # Given a stack whose import dead-letter queue holds messages
    cfn_stub, sqs_stub, cloudformation, sqs = _clients("WorldImportDeadLetterQueue")
    sqs_stub.add_response(
        "start_message_move_task",
        {"TaskHandle": "handle-1"},
        {"SourceArn": ARN, "MaxNumberOfMessagesPerSecond": 10},
    )
    # When it is redriven
    with cfn_stub, sqs_stub:
        lines = redrive(cloudformation, sqs, "chat", "WorldImportDeadLetterQueue")
        # Then one move task started, and the way to follow it is printed
        sqs_stub.assert_no_pending_responses()
    assert "task handle-1" in lines[0]
    assert ARN in lines[1]


def test_a_stream_dead_letter_queue_is_read_not_moved() -> None:
    """OPS-6: a stream's failures (batch positions) have no queue to go back to: they are printed."""
    # Given the summarizer's dead-letter queue with one failed batch
    cfn_stub, sqs_stub, cloudformation, sqs = _clients("SummarizeDeadLetterQueue")
    failure = {"DDBStreamBatchInfo": {"shardId": "shardId-1", "startSequenceNumber": "100"}}
    sqs_stub.add_response(
        "receive_message",
        {"Messages": [{"MessageId": "m1", "ReceiptHandle": "r1", "Body": json.dumps(failure)}]},
        {"QueueUrl": URL, "MaxNumberOfMessages": 10, "VisibilityTimeout": 30},
    )
    # When it is "redriven"
    with cfn_stub, sqs_stub:
        lines = redrive(cloudformation, sqs, "chat", "SummarizeDeadLetterQueue")
    # Then the batch's position is printed and nothing was moved (any other call would fail the stub)
    assert "shardId-1" in lines[0]
