"""SQS worker of world import jobs (DLG-6): runs or resumes one job per message.

A message is `{"owner", "world_id", "job_id"}`. A run that nears the function's time limit records its
progress and queues the job again; a run that fails is reported in `batchItemFailures`, so SQS delivers
it again and the job resumes from the last recorded line (every write of an import is idempotent).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue import jobs
from chat_core.observability import entry, logger, tracer

processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
_context: dict[str, LambdaContext] = {}


def _seconds_left() -> float:
    context = _context.get("now")
    return context.get_remaining_time_in_millis() / 1000 if context is not None else float("inf")


@tracer.capture_method
def record_handler(record: SQSRecord) -> dict[str, Any]:
    message = json.loads(record.body)
    owner, world_id, job_id = message["owner"], message["world_id"], message["job_id"]
    result = jobs.run_import(owner, world_id, job_id, time_left=_seconds_left)
    if result["status"] == "queued":
        jobs.queue_again(owner, world_id, job_id)
    logger.info("import run", job_id=job_id, status=result["status"], lines_done=result.get("lines_done"))
    return result


@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    _context["now"] = context
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
