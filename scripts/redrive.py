"""Move a dead-letter queue's messages back to the queue they came from (SQS StartMessageMoveTask), or list
a stream dead-letter queue's failures to replay (docs/operations.md).

    python scripts/redrive.py --stack chat-history --queue WorldImportDeadLetterQueue    # start the move
    python scripts/redrive.py --stack chat-history --queue SummarizeDeadLetterQueue      # print failures
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import boto3

#: Queues whose messages are stream failure records (shard and sequence numbers), not messages of a queue:
#: there is nothing to move them back to; the runbook replays them by direct invocation.
STREAM_FAILURES = ("SummarizeDeadLetterQueue", "PurgeDeadLetterQueue")


def redrive(cloudformation: Any, sqs: Any, stack: str, queue: str, rate: int = 10) -> list[str]:
    """Start moving `queue` (a logical id of `stack`) back to its source, or read a stream DLQ's failures;
    the lines to print."""
    url = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId=queue)[
        "StackResourceDetail"
    ]["PhysicalResourceId"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    if queue in STREAM_FAILURES:
        # Received, not deleted: each comes back after its visibility timeout until the replay is done.
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)
        return [json.dumps(json.loads(m["Body"]), indent=2) for m in answer.get("Messages", [])]
    # No DestinationArn: SQS moves each message back to the queue it was dead-lettered from.
    task = sqs.start_message_move_task(SourceArn=arn, MaxNumberOfMessagesPerSecond=rate)
    return [
        f"moving {queue} back to its source queue: task {task['TaskHandle']}",
        f"progress: aws sqs list-message-move-tasks --source-arn {arn}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", required=True, help="the stack's name")
    parser.add_argument("--queue", required=True, help="the dead-letter queue's logical id")
    parser.add_argument("--rate", type=int, default=10, help="messages per second to move (default 10)")
    args = parser.parse_args()
    lines = redrive(boto3.client("cloudformation"), boto3.client("sqs"), args.stack, args.queue, args.rate)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
