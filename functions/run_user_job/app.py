"""SQS worker of a user's data jobs (PRV-1..3): runs or resumes one erasure, export or import per message.

A message is `{"kind", "owner"[, "job_id"]}`. A run that nears the function's time limit records its
progress and queues the job again (an erasure waiting for its last pass: with a delay); a run that fails
is reported in `batchItemFailures`, so SQS delivers it again and the job resumes from its recorded
progress (every write and delete of these jobs is idempotent).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.observability import entry, logger, tracer
from chat_core.privacy import runner

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
_context: dict[str, LambdaContext] = {}


def _seconds_left() -> float:
    context = _context.get("now")
    return context.get_remaining_time_in_millis() / 1000 if context is not None else float("inf")


@tracer.capture_method
def record_handler(record: SQSRecord) -> dict[str, Any]:
    message = json.loads(record.body)
    result = runner.run(message, time_left=_seconds_left)
    logger.info("user data job run", kind=message.get("kind"), status=result["status"])
    return result


@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    _context["now"] = context
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
