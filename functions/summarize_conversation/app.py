"""Table stream -> the owners' usage of the day (COST-3), summary compression (seed 001) and the recall
index (MEM-5).

The event source mapping sends every INSERT of a user, assistant or tool message. Their prices are first
added to their owners' day items (each exactly once: `chat.usage_stream`; only a post's reply carries
one), then each conversation that ended a turn (the post's reply: an assistant message with a model) has
its running summary brought up to date, then each conversation that stored any message in the batch has
its recall index take the messages stored since its watermark (MEM-5: an appended message is searchable
without waiting for an answer) and, when configured, their embeddings (MEM-49), then (when
FACTS_EXTRACTION is on) each conversation that ended a turn has its long-term facts extracted (MEM-31).
Every step runs even when an earlier one failed; a batch in which any of them failed raises (the first
failure), so Lambda retries it (bisecting, bounded retries, then the on-failure queue); usage already
added is not added again, the stored summary stays as it was meanwhile, an index, a vector mark or a fact
mark already up to date is a no-op, and the posts never wait for any of this. The mapping's tumbling
window is there for the `shardId` Lambda then puts in each event (the usage's watermarks are per shard);
every answer carries the `state` such a mapping requires. Invoked directly with `{"owner": "...",
"conversation_id": "..."}` it brings that one conversation's summary up to date.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.chat import facts, summaries, usage_stream
from chat_core.chat.recall import embedding as recall_embedding
from chat_core.chat.recall import upkeep as recall_upkeep
from chat_core.errors import ChatError, SummaryFailed
from chat_core.http.direct import owner_and_conversation
from chat_core.observability import entry


# A stream batch has no single correlation id; each conversation is logged with its id.
@entry(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if "Records" in event:
        records = event["Records"]
        usage_stream.record_usage(records, event.get("shardId"))
        failure: ChatError | None = None
        try:
            answer = summaries.process_stream(records, context=context)
        except ChatError as exc:
            failure, answer = exc, {}
        # The index is kept even when a summary failed (the retry then finds it up to date).
        stored = recall_upkeep.stored_only(records, recall_upkeep.conversations_in(records))
        index = recall_upkeep.process_stream(stored)
        # MEM-49: semantic recall's vectors (nothing at all unless RECALL_EMBEDDINGS_MODEL is set).
        embedded = recall_embedding.process_stream(stored)
        unindexed = [*index["failures"], *embedded["failures"]]
        if unindexed:
            failure = failure or SummaryFailed(
                f"{len(unindexed)} conversation(s) not indexed for recall; the stream retries",
                failures=unindexed,
            )
        try:
            turns = recall_upkeep.stored_only(records, summaries.conversations_in(records))
            extracted = facts.process_stream(records, targets=turns, context=context)
        except facts.FactsFailed as exc:
            failure, extracted = failure or exc, None
        if failure is not None:
            raise failure
        answer["recall"] = {k: v for k, v in index.items() if k != "failures"}
        if embedded["conversations"]:
            answer["recall"]["vectors"] = embedded["vectors"]
        if extracted is not None:
            answer["facts"] = extracted
        return {**answer, "state": {}}
    owner, conversation_id = owner_and_conversation(event)
    outcome = summaries.summarize_conversation(owner, conversation_id, context=context)
    return outcome.to_dict()
