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
from chat_core.http.direct import owner_and_conversation
from chat_core.observability import entry


# A stream batch has no single correlation id; each purge is logged with its conversation id.
@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event:
        return retention.process_stream(event["Records"])
    owner, conversation_id = owner_and_conversation(event)
    return retention.purge_expired(owner, conversation_id).to_dict()
