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
from chat_core.http.direct import owner_and_conversation
from chat_core.observability import entry


# A stream batch has no single correlation id; each conversation is logged with its id.
@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event:
        return summaries.process_stream(event["Records"], context=context)
    owner, conversation_id = owner_and_conversation(event)
    outcome = summaries.summarize_conversation(owner, conversation_id, context=context)
    return outcome.to_dict()
