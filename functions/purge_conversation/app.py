"""Table stream -> retention purge: when TTL removes a soft-deleted conversation item, delete its partition.

The event source mapping sends only REMOVE records made by DynamoDB's TTL process (`userIdentity`
"dynamodb.amazonaws.com") of conversation items; each is checked again here before anything is deleted.
The conversation's messages, events and summary go in batches of 25; purging is idempotent, so Lambda's
retries (bisecting, bounded, then the on-failure queue) are safe. Invoked directly with
`{"owner": "...", "conversation_id": "..."}` it purges one conversation that is already past its
retention (e.g. to finish a purge that went to the dead-letter queue); a live one is refused.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import retention
from chat_core.errors import InvalidInput
from chat_core.observability import entry
from pydantic import BaseModel, ConfigDict, ValidationError


class PurgeIn(BaseModel):
    """A direct invocation: the expired conversation to purge."""

    # Built on first use (PERF-1): stream batches, the usual invocation, never validate it.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    owner: str
    conversation_id: str


def parse_direct(event: dict[str, Any]) -> PurgeIn:
    try:
        return PurgeIn.model_validate(event)
    except ValidationError as exc:
        raise InvalidInput(
            'expected {"owner": "...", "conversation_id": "..."} or a DynamoDB stream event',
            problems=exc.errors(include_url=False, include_context=False, include_input=False),
        ) from exc


# A stream batch has no single correlation id; each purge is logged with its conversation id.
@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event:
        return retention.process_stream(event["Records"])
    request = parse_direct(event)
    return retention.purge_expired(request.owner, request.conversation_id).to_dict()
