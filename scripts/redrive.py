"""Move a dead-letter queue's messages back to the queue they came from (SQS StartMessageMoveTask), or list
a stream dead-letter queue's failures to replay (docs/operations.md).

    python scripts/redrive.py --stack chat-history --queue WorldImportDeadLetterQueue    # start the move
    python scripts/redrive.py --stack chat-history --queue SummarizeDeadLetterQueue      # print failures
"""

from __future__ import annotations

import argparse
import json

import boto3

#: Queues whose messages are stream failure records (shard and sequence numbers), not messages of a queue:
#: there is nothing to move them back to; the runbook replays them by direct invocation.
STREAM_FAILURES = ("SummarizeDeadLetterQueue", "PurgeDeadLetterQueue")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", required=True, help="the stack's name")
    parser.add_argument("--queue", required=True, help="the dead-letter queue's logical id")
    parser.add_argument("--rate", type=int, default=10, help="messages per second to move (default 10)")
    args = parser.parse_args()
    url = boto3.client("cloudformation").describe_stack_resource(
        StackName=args.stack, LogicalResourceId=args.queue
    )["StackResourceDetail"]["PhysicalResourceId"]
    sqs = boto3.client("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    if args.queue in STREAM_FAILURES:
        # Received, not deleted: each comes back after its visibility timeout until the replay is done.
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)
        for message in answer.get("Messages", []):
            print(json.dumps(json.loads(message["Body"]), indent=2))
        return 0
    # No DestinationArn: SQS moves each message back to the queue it was dead-lettered from.
    task = sqs.start_message_move_task(SourceArn=arn, MaxNumberOfMessagesPerSecond=args.rate)
    print(f"moving {args.queue} back to its source queue: task {task['TaskHandle']}")
    print(f"progress: aws sqs list-message-move-tasks --source-arn {arn}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
