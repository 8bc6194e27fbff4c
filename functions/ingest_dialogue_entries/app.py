"""SQS batch ingestion of dialogue entries (seed 004), with partial batch failure reporting.

Each message body is one JSON object: `{"owner", "world_id", "participants" | "dialogue_id",
"entry" | "entries"}`. A message that fails (bad JSON, invalid entry, storage error) is reported in
`batchItemFailures`; SQS redelivers only those, then moves them to the dead-letter queue. Entries
with an `entry_id` are stored once however often they are delivered. Invoked directly (no `Records`),
the function takes one such object and returns what it stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue import entries
from chat_core.errors import InvalidInput
from chat_core.http.ingest_message import IngestMessage, parse_ingest_message
from chat_core.observability import MetricUnit, entry, logger, metrics, tracer
from chat_core.store.keys import is_valid_owner

if TYPE_CHECKING:
    from chat_core.http.dialogue_schemas import IngestMessageIn

# A batch whose every record fails still answers with each of them in batchItemFailures (Powertools'
# default raises instead, which makes the whole batch an invocation error and alarms on bad input).
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def ingest(message: IngestMessage | IngestMessageIn) -> dict[str, Any]:
    """Store one message's entries; returns the dialogue id and what was created."""
    if not is_valid_owner(message.owner):
        raise InvalidInput("owner must be a non-blank identity without control characters", field="owner")
    added = entries.add_entries(
        message.owner, message.world_id, message.target(), message.entry_dicts(), present=message.present
    )
    created = sum(1 for a in added if a.created)
    metrics.add_metric(name="DialogueEntriesStored", unit=MetricUnit.Count, value=created)
    if created < len(added):
        metrics.add_metric(name="DialogueEntriesDuplicate", unit=MetricUnit.Count, value=len(added) - created)
    return {
        "world_id": message.world_id,
        "dialogue_id": added[0].entry.dialogue_id,
        "entries": [a.entry.to_dict() for a in added],
        "created": created,
        "duplicates": len(added) - created,
    }


@tracer.capture_method
def record_handler(record: SQSRecord) -> dict[str, Any]:
    try:
        # Checked by hand, exactly as IngestMessageIn would (PERF-1: no pydantic in this cold start).
        return ingest(parse_ingest_message(record.body))
    except Exception as exc:
        # Reported as a batch item failure by the processor; log why without the message content.
        logger.warning(
            "dialogue message rejected",
            message_id=record.message_id,
            error_type=type(exc).__name__,
            code=getattr(exc, "code", None),
            receive_count=record.attributes.approximate_receive_count,
        )
        raise


# A batch has no single correlation id; each rejected record is logged with its message id.
@entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" not in event:
        # A direct invocation (rare: one message, no queue) is validated by the model itself.
        from chat_core.http.dialogue_schemas import IngestMessageIn

        return ingest(IngestMessageIn.model_validate(event))
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
