"""The template's SQS queues in the embedded moto server, delivered to SQS-triggered functions like an ESM."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from chat_local.lambda_runtime import FunctionRuntime, HandlerUnavailable, Throttled
from chat_local.streams import WriteSignal, passes_filters, sleep_until_written
from chat_local.template import QueueSpec, QueueSubscription

log = logging.getLogger("chat_local.sqs")

#: Locally a failed message comes back after this many seconds per receive (capped), not after the
#: queue's VisibilityTimeout (minutes): retries and the move to the dead-letter queue happen while
#: you watch. The receive count and maxReceiveCount work as in SQS.
LOCAL_RETRY_STEP_S = 1
LOCAL_RETRY_CAP_S = 10
_PENDING = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


def sqs_client(endpoint: str, region: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=endpoint, region_name=region, config=Config(retries={"max_attempts": 3})
    )


def create_queues(client: Any, queues: Mapping[str, QueueSpec]) -> dict[str, str]:
    """Create every queue, then attach redrive policies (their targets exist by then): logical id -> URL."""
    urls: dict[str, str] = {}
    for logical_id, queue in queues.items():
        attributes = {k: v for k, v in queue.attributes.items() if k != "RedrivePolicy"}
        urls[logical_id] = client.create_queue(QueueName=queue.name, Attributes=attributes)["QueueUrl"]
    for logical_id, queue in queues.items():
        if "RedrivePolicy" in queue.attributes:
            client.set_queue_attributes(
                QueueUrl=urls[logical_id], Attributes={"RedrivePolicy": queue.attributes["RedrivePolicy"]}
            )
    return urls


def lambda_sqs_record(message: Mapping[str, Any], *, queue_arn: str, region: str) -> dict[str, Any]:
    """A ReceiveMessage message -> the record shape Lambda puts in an SQS event."""
    attributes = {k: str(v) for k, v in (message.get("Attributes") or {}).items()}
    message_attributes = {}
    for name, value in (message.get("MessageAttributes") or {}).items():
        message_attributes[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": value.get("BinaryValue"),
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": value.get("BinaryListValues", []),
            "dataType": value.get("DataType"),
        }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def _filterable(record: Mapping[str, Any]) -> dict[str, Any]:
    # Lambda matches `body` patterns against the parsed JSON body when the body is JSON.
    view = dict(record)
    with contextlib.suppress(TypeError, ValueError):
        view["body"] = json.loads(record["body"])
    return view


@dataclass
class QueueStats:
    batches: int = 0
    messages: int = 0
    filtered_out: int = 0
    failures: int = 0


class QueuePoller:
    """One SQS event source mapping: long-polls the queue, invokes, deletes what succeeded."""

    def __init__(
        self,
        subscription: QueueSubscription,
        queue: QueueSpec,
        runtime: FunctionRuntime,
        *,
        client: Any,
        queue_url: str,
        region: str,
        on_invocation: Callable[[str, int, str, float], None] | None = None,
        wait_s: int = 1,
        writes: WriteSignal | None = None,
    ) -> None:
        self.subscription = subscription
        self.queue = queue
        self.runtime = runtime
        self.client = client
        self.queue_url = queue_url
        self.region = region
        self.on_invocation = on_invocation
        self.wait_s = wait_s
        #: With the embedded store's signal, an empty queue is not long-polled: the poller sleeps until a
        #: request that may add a message is answered (or IDLE_POLL_S). Without it, it long-polls always.
        self.writes = writes
        self.stats = QueueStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> int:
        """Receive one batch and deliver it. Returns the number of messages received."""
        answer = self.client.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=max(1, min(10, self.subscription.batch_size)),
            WaitTimeSeconds=self.wait_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages = answer.get("Messages", [])
        if not messages:
            return 0
        records = [lambda_sqs_record(m, queue_arn=self.queue.arn, region=self.region) for m in messages]
        kept = [r for r in records if passes_filters(self.subscription.filters, _filterable(r))]
        filtered = [r for r in records if r not in kept]
        self.stats.filtered_out += len(filtered)
        failed_ids = self._invoke(kept) if kept else set()
        done = [r for r in records if r["messageId"] not in failed_ids]  # filtered-out ones are deleted too
        if done:
            self.client.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(done)],
            )
        for record in records:
            if record["messageId"] in failed_ids:
                count = int(record["attributes"].get("ApproximateReceiveCount", "1"))
                delay = min(LOCAL_RETRY_CAP_S, LOCAL_RETRY_STEP_S * count, self.queue.visibility_timeout_s)
                try:
                    self.client.change_message_visibility(
                        QueueUrl=self.queue_url,
                        ReceiptHandle=record["receiptHandle"],
                        VisibilityTimeout=delay,
                    )
                except ClientError as exc:
                    log.warning("%s: could not shorten visibility: %s", self.subscription.name, exc)
        return len(messages)

    def _invoke(self, records: list[dict[str, Any]]) -> set[str]:
        """Invoke with the batch; returns the message ids to leave on the queue (to be retried)."""
        every = {r["messageId"] for r in records}
        try:
            invocation = self.runtime.invoke({"Records": records})
        except (HandlerUnavailable, Throttled) as exc:
            log.error("%s: %s", self.subscription.name, exc)
            return every
        self.stats.batches += 1
        self.stats.messages += len(records)
        if invocation.error is not None:
            self.stats.failures += len(records)
            log.error(
                "%s: handler raised %s: %s",
                self.subscription.name,
                type(invocation.error).__name__,
                invocation.error,
            )
            self._report(len(records), "error (all retried)", invocation.duration_ms)
            return every
        failed: set[str] = set()
        result = invocation.result
        if self.subscription.report_batch_item_failures and isinstance(result, Mapping):
            failed = {str(f.get("itemIdentifier")) for f in result.get("batchItemFailures") or []} & every
        self.stats.failures += len(failed)
        status = "ok" if not failed else f"partial ({len(failed)} retried)"
        self._report(len(records), status, invocation.duration_ms)
        return failed

    def _report(self, count: int, status: str, duration_ms: float) -> None:
        if self.on_invocation is not None:
            self.on_invocation(self.subscription.name, count, status, duration_ms)

    def _run(self) -> None:
        while not self._stop.is_set():
            # Counted before the receive: a message sent while it waits wakes the next sleep at once.
            seen = self.writes.count() if self.writes is not None else 0
            try:
                if self.poll_once() or self.writes is None or not self._holds_nothing():
                    continue
            except (BotoCoreError, ClientError) as exc:
                log.error("%s: reading the queue failed: %s", self.subscription.name, exc)
                self._stop.wait(2.0)
                continue
            sleep_until_written(self.writes, seen, self._stop)

    def _holds_nothing(self) -> bool:
        """No message is visible, in flight (a retry waiting out its visibility) or delayed: only a new
        request (a send) can give this queue something to deliver."""
        counts = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=_PENDING)
        return not any(int(v) for v in counts.get("Attributes", {}).values())

    def start(self) -> QueuePoller:
        self._thread = threading.Thread(target=self._run, name=f"sqs:{self.subscription.name}", daemon=True)
        self._thread.start()
        return self

    def signal_stop(self) -> None:
        """Ask the thread to stop after what it is doing (see `stop`)."""
        self._stop.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, timeout_s))
