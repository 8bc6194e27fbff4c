"""Table stream -> summary compression (seed 001): keeps each long conversation's running summary current.

The event source mapping sends only INSERTs of assistant messages (one record per turn). A batch in which
a summary failed raises, so Lambda retries it (bisecting, bounded retries, then the on-failure queue);
the stored summary stays as it was meanwhile and the posts never wait for any of this. Invoked directly
with `{"owner": "...", "conversation_id": "..."}` it brings that one conversation's summary up to date.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import summaries
from chat_core.errors import InvalidInput
from chat_core.observability import entry
from chat_core.store.keys import is_valid_id, is_valid_owner
from pydantic import BaseModel, ConfigDict, ValidationError


class SummarizeIn(BaseModel):
    """A direct invocation: the conversation to summarize."""

    # Built on first use (PERF-1): stream batches, the usual invocation, never validate it.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    owner: str
    conversation_id: str


def parse_direct(event: dict[str, Any]) -> SummarizeIn:
    try:
        request = SummarizeIn.model_validate(event)
    except ValidationError as exc:
        raise InvalidInput(
            'expected {"owner": "...", "conversation_id": "..."} or a DynamoDB stream event',
            problems=exc.errors(include_url=False, include_context=False, include_input=False),
        ) from exc
    if not is_valid_owner(request.owner):
        raise InvalidInput("owner must be a non-blank identity without control characters", field="owner")
    if not is_valid_id(request.conversation_id):
        raise InvalidInput("conversation_id is not a valid id", field="conversation_id")
    return request


# A stream batch has no single correlation id; each conversation is logged with its id.
@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event:
        return summaries.process_stream(event["Records"], context=context)
    request = parse_direct(event)
    outcome = summaries.summarize_conversation(request.owner, request.conversation_id, context=context)
    return outcome.to_dict()
