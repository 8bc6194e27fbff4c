"""Seed 001 summary compression on moto's DynamoDB stream, with the stand-in model (a real loopback server).

Turns are posted through the post_message handler; the table's stream is read with the dynamodbstreams
API, filtered by the summarizer's FilterCriteria from template.yaml and handed to its handler as the
Lambda event. The default window (WIN-2) holds the current message and 9 history messages, and the
default margin is 4: after turn 7 (14 messages) messages 1-5 no longer fit and get summarized.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from chat_core.chat.summaries import SUMMARY_INSTRUCTIONS
from chat_core.errors import InvalidInput, SummaryFailed
from chat_core.store import summary_item as summary_store
from chat_core.store.records import SummaryRecord

from tests.reliability.faults import injected
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew
from tests.support.stream_records import TableStream, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SUMMARIZER = "SummarizeConversationFunction"
TABLE = "chat-history-it"
INSTRUCTIONS_START = SUMMARY_INSTRUCTIONS[:40]


def question(turn: int) -> str:
    return f"question {turn}: what about topic-{turn}?"


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Hand a batch to the summarizer as its event source mapping would (filtered by the template)."""
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    result: dict[str, Any] = api.load("summarize_conversation").lambda_handler(event(records), context)
    return result


def summary_requests(standin: OpenAIStandin) -> list[dict[str, Any]]:
    """The completion requests the summarizer sent (recognised by its instructions)."""
    return [
        r.json
        for r in standin.completion_requests
        if r.json["messages"][0]["content"].startswith(INSTRUCTIONS_START)
    ]


def chat_requests(standin: OpenAIStandin) -> list[dict[str, Any]]:
    return [
        r.json
        for r in standin.completion_requests
        if not r.json["messages"][0]["content"].startswith(INSTRUCTIONS_START)
    ]


class Conversation:
    """A conversation posted turn by turn, its stream processed by the summarizer after each turn."""

    def __init__(self, stream: TableStream) -> None:
        self.stream = stream
        self.id: str | None = None
        self.turns = 0
        self.batches: list[list[dict[str, Any]]] = []

    def post(self, *, process: bool = True) -> list[dict[str, Any]]:
        """Post the next turn; returns the summarizer's batch for it (processed unless told not to)."""
        self.turns += 1
        answer = api.post(question(self.turns), self.id)
        assert answer.status == 201, answer.body
        self.id = answer.body["conversation_id"]
        batch = for_function(SUMMARIZER, self.stream.read())
        self.batches.append(batch)
        if process:
            summarize(batch)
        return batch

    def post_turns(self, count: int, *, process: bool = True) -> None:
        for _ in range(count):
            self.post(process=process)

    @property
    def summary(self) -> SummaryRecord | None:
        assert self.id is not None
        return summary_store.get_summary("alice", self.id)


@pytest.fixture
def conversation(standin_llm: OpenAIStandin) -> Conversation:
    return Conversation(TableStream(TABLE))


def test_seed001_summary_of_the_span_that_no_longer_fits(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """Seed 001 "摘要压缩": once history outgrows the window by the margin, the model summarizes the
    dropped span (messages 1-5) and the summary is stored with the range it covers."""
    # Given six turns: 12 messages, 3 beyond the 9 the window holds (under the margin of 4)
    conversation.post_turns(6)
    assert summary_requests(standin_llm) == []
    assert conversation.summary is None
    # When the seventh turn ends (14 messages: 5 beyond the window)
    batch = conversation.post()
    # Then of its two records (the question's INSERT, for the recall index, and the reply's) the reply's
    # made one summary request of messages 1-5
    assert [r["dynamodb"]["NewImage"]["role"]["S"] for r in batch] == ["user", "assistant"]
    [sent] = summary_requests(standin_llm)
    prompt = sent["messages"][1]["content"]
    assert "Previous summary: none yet." in prompt
    assert "New messages (1\u20135):" in prompt
    for seq, turn in ((1, 1), (3, 2), (5, 3)):
        assert f"[{seq}] user: {question(turn)}" in prompt
    assert "[2] assistant: Stand-in reply" in prompt
    assert "[6]" not in prompt
    assert question(4) not in prompt
    # and the summary is stored with its range, model and count
    stored = conversation.summary
    assert stored is not None
    assert (int(stored.from_seq), int(stored.to_seq), int(stored.rounds)) == (1, 5, 1)
    assert stored.text.startswith("Stand-in reply: you said")
    assert stored.model == "gpt-4o-mini"  # the conversation's model, as the stand-in reported it
    assert int(stored.tokens) > 0
    assert stored.created_at.endswith("Z")


def test_seed001_window_route_and_next_post_carry_the_summary(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """Seed 001 + WIN-3: the window carries the summary as a system-side message after the system prompt,
    then only messages newer than its range; the stats show it; the next post sends it to the model."""
    # Given a conversation whose messages 1-5 were summarized
    conversation.post_turns(7)
    stored = conversation.summary
    assert stored is not None
    expected = {
        "role": "system",
        "content": f"Summary of earlier conversation (messages 1\u20135):\n{stored.text}",
    }
    # When the window is built for a prospective message
    window = api.window(str(conversation.id), "and now?")
    # Then it starts with the summary, continues with messages 6.. and ends with the prospective message
    assert window.status == 200, window.body
    messages = window.body["messages"]
    assert messages[0] == expected
    assert messages[1]["role"] == "assistant"  # seq 6, the reply of turn 3
    assert messages[2] == {"role": "user", "content": question(4)}
    assert messages[-1] == {"role": "user", "content": "and now?"}
    assert {"role": "user", "content": question(3)} not in messages  # seq 5 is in the summary only
    summary_stats = window.body["stats"]["summary"]
    assert summary_stats["from_seq"] == 1
    assert summary_stats["to_seq"] == 5
    assert summary_stats["included"] is True
    assert summary_stats["tokens"] == int(stored.tokens)
    # And when the next turn is posted, the model receives the same summary first
    conversation.post(process=False)
    assert chat_requests(standin_llm)[-1]["messages"][0] == expected


def test_seed001_second_summary_is_incremental(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """Seed 001: the next summary folds only the newly dropped messages (6-9) into the previous summary;
    it never re-summarizes from scratch."""
    # Given the first summary (messages 1-5)
    conversation.post_turns(7)
    first = conversation.summary
    assert first is not None
    # When two more turns end (18 messages; 6-9 fall out of the window)
    conversation.post_turns(2)
    # Then a second request was sent: the previous summary plus messages 6-9 only
    requests = summary_requests(standin_llm)
    assert len(requests) == 2
    prompt = requests[1]["messages"][1]["content"]
    assert f"Previous summary (messages 1\u20135):\n{first.text}" in prompt
    assert "New messages (6\u20139):" in prompt
    assert f"[7] user: {question(4)}" in prompt
    assert f"[9] user: {question(5)}" in prompt
    assert "[6] assistant:" in prompt
    assert "[8] assistant:" in prompt
    assert f"[5] user: {question(3)}" not in prompt
    assert "[10]" not in prompt
    # and the stored summary now covers 1-9 in its second round
    second = conversation.summary
    assert second is not None
    assert (int(second.from_seq), int(second.to_seq), int(second.rounds)) == (1, 9, 2)
    assert int(second.messages_covered) == 9


def test_failed_summary_keeps_the_previous_one_and_raises_for_a_retry(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """Seed 001: a failed summary (model 500) leaves the previous summary in place and raises, so the
    stream retries the batch; the retry, once the model is back, brings it up to date."""
    # Given a summary of 1-5 and two more turns whose records are not processed yet
    conversation.post_turns(7)
    before = conversation.summary
    assert before is not None
    conversation.post_turns(2, process=False)
    pending = [record for batch in conversation.batches[-2:] for record in batch]
    # When the summarizer gets them while the model answers 500
    standin_llm.set_mode("error500")
    with pytest.raises(SummaryFailed) as failed:
        summarize(pending)
    # Then it raised for the retry and the stored summary is exactly the previous one
    assert "could not be summarized" in str(failed.value)
    after_failure = conversation.summary
    assert after_failure is not None
    assert (int(after_failure.to_seq), after_failure.created_at) == (5, before.created_at)
    # And when the stream retries the batch with the model back, the summary advances to 1-9
    standin_llm.set_mode("ok")
    result = summarize(pending)
    assert result["summarized"] == 1
    retried = conversation.summary
    assert retried is not None
    assert int(retried.to_seq) == 9


def test_replayed_records_do_not_summarize_twice_or_regress(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """Idempotent: replaying stream records (an older turn's or the latest) calls no model and leaves the
    stored summary as it is, never back to an older range."""
    # Given two summary rounds (1-5, then 1-9)
    conversation.post_turns(9)
    current = conversation.summary
    assert current is not None
    assert int(current.to_seq) == 9
    sent_before = len(summary_requests(standin_llm))
    # When the batch of turn 7 (which produced 1-5) and the one of turn 9 are delivered again
    summarize(conversation.batches[6])
    result = summarize(conversation.batches[8])
    # Then nothing was asked of the model and the summary is unchanged
    assert len(summary_requests(standin_llm)) == sent_before
    assert result["outcomes"][0]["status"] == "not_needed"
    replayed = conversation.summary
    assert replayed is not None
    assert (int(replayed.to_seq), int(replayed.rounds), replayed.created_at) == (9, 2, current.created_at)


def test_a_run_that_lost_the_race_never_overwrites_a_newer_summary(
    conversation: Conversation,
) -> None:
    """Idempotent: the summary is written only if it still covers the range the run started from."""
    # Given a stored summary of 1-9
    conversation.post_turns(9)
    current = conversation.summary
    assert current is not None
    # When a run that started from the 1-5 summary tries to store its result
    stale = SummaryRecord(
        conversation_id=str(conversation.id),
        from_seq=1,
        to_seq=7,
        text="stale",
        model="m",
        created_at="2000-01-01T00:00:00.000000Z",
    )
    # Then it is refused and the newer summary stays
    with pytest.raises(summary_store.SummarySuperseded):
        summary_store.save_summary(stale, previous_to_seq=5, owner="alice")
    kept = conversation.summary
    assert kept is not None
    assert int(kept.to_seq) == 9
    assert kept.text == current.text


def test_deleted_conversation_gets_no_summary(conversation: Conversation, standin_llm: OpenAIStandin) -> None:
    """Retention: a conversation deleted before its records are processed is not summarized."""
    # Given seven turns not yet processed, then a soft delete
    conversation.post_turns(7, process=False)
    assert api.delete(str(conversation.id)).status == 204
    # When the summarizer gets the records
    result = summarize(conversation.batches[-1])
    # Then no model call was made and no summary stored
    assert result["outcomes"][0]["status"] == "no_conversation"
    assert summary_requests(standin_llm) == []
    assert conversation.summary is None


def test_post_stays_one_query_and_two_transact_writes_with_a_summary(
    conversation: Conversation, dynamo_calls: Counter[str]
) -> None:
    """API-4 / DES-1: with a summary stored, a post is still 1 Query + 2 TransactWrites and the window
    route 1 Query (the summary item sorts first in the same descending Query)."""
    # Given a conversation with a summary
    conversation.post_turns(7)
    assert conversation.summary is not None
    dynamo_calls.clear()
    # When one more turn is posted
    conversation.post(process=False)
    at_post = Counter(dynamo_calls)
    dynamo_calls.clear()
    window = api.window(str(conversation.id), "peek")
    # Then the post made one Query and two TransactWriteItems, the window one Query
    assert at_post == Counter({"Query": 1, "TransactWriteItems": 2})
    assert window.status == 200
    assert window.body["stats"]["summary"]["included"] is True
    assert dynamo_calls == Counter({"Query": 1})


def test_summary_input_and_length_are_capped(
    conversation: Conversation, standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 001: the text sent for summarizing stays within SUMMARY_INPUT_MAX_TOKENS (long spans go in
    several incremental steps, oldest first), each summary call caps its output (max_completion_tokens,
    twice SUMMARY_MAX_TOKENS) and the stored summary stays within SUMMARY_MAX_TOKENS."""
    from chat_core.engine import tokens

    # Given tight caps and long messages
    monkeypatch.setenv("SUMMARY_INPUT_MAX_TOKENS", "500")
    monkeypatch.setenv("SUMMARY_MAX_TOKENS", "32")
    renew()
    filler = " ".join(f"word{i}" for i in range(90))
    for turn in range(1, 9):
        answer = api.post(f"question {turn}: {filler}", conversation.id)
        assert answer.status == 201
        conversation.id = answer.body["conversation_id"]
    batch = for_function(SUMMARIZER, conversation.stream.read())
    # When the summarizer runs over the whole backlog at once
    summarize(batch)
    # Then every request fit the input budget, the steps were contiguous, and the summary fits its cap
    requests = summary_requests(standin_llm)
    assert len(requests) >= 2
    for sent in requests:
        sent_tokens = sum(tokens.count_tokens(m["content"], "gpt-4o-mini") for m in sent["messages"])
        assert sent_tokens <= 500
        # and each asked the model for a bounded answer, not only for brevity
        assert sent["max_completion_tokens"] == 64
    # while the conversation's own turns sent no output cap of the service's choosing
    assert all("max_completion_tokens" not in sent for sent in chat_requests(standin_llm))
    stored = conversation.summary
    assert stored is not None
    assert int(stored.rounds) == len(requests)
    assert tokens.count_tokens(stored.text, "gpt-4o-mini") <= 32
    assert stored.text.endswith("\u2026")


def test_direct_invocation_summarizes_one_conversation(conversation: Conversation) -> None:
    """AGT-1: the summarizer also takes a plain JSON payload (no stream envelope)."""
    # Given seven turns whose records were never delivered
    conversation.post_turns(7, process=False)
    handler = api.load("summarize_conversation").lambda_handler
    # When it is invoked with {"owner", "conversation_id"}
    result = handler({"owner": "alice", "conversation_id": conversation.id}, LambdaContext())
    # Then that conversation's summary is brought up to date
    assert result["status"] == "summarized"
    assert (result["from_seq"], result["to_seq"]) == (1, 5)
    # and a payload of the wrong shape is a clear input error
    with pytest.raises(InvalidInput, match="owner"):
        handler({"conversation_id": conversation.id}, LambdaContext())


def test_sample_stream_event_passes_the_filter_and_runs(chat_service: None) -> None:
    """AGT-1: events/summarize_conversation*.json (`sam local invoke -e`) are what the function
    takes: the stream sample passes the template's filter; both run on an empty table without error."""
    import json
    from pathlib import Path

    events_dir = Path(__file__).resolve().parents[2] / "events"
    stream_event = json.loads((events_dir / "summarize_conversation.json").read_text(encoding="utf-8"))
    direct = json.loads((events_dir / "summarize_conversation_direct.json").read_text(encoding="utf-8"))
    # Given the sample stream event / Then its record is one the event source mapping delivers
    assert for_function(SUMMARIZER, stream_event["Records"]) == stream_event["Records"]
    # When both samples are invoked on an empty table
    handler = api.load("summarize_conversation").lambda_handler
    from_stream = handler(stream_event, LambdaContext())
    from_direct = handler(direct, LambdaContext())
    # Then the conversation is found missing, and nothing fails
    assert from_stream["conversations"] == 1
    assert from_stream["outcomes"][0]["status"] == "no_conversation"
    assert from_direct["status"] == "no_conversation"


def test_the_summarizer_never_writes_to_the_conversation_item(
    conversation: Conversation, standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-3: background work cannot cancel a post: no write of the summarizer (transaction, put, update,
    condition check) names the conversation item every post updates, and the summary is still stored."""
    # Given seven turns whose last record the summarizer has yet to process
    conversation.post_turns(6)
    batch = conversation.post(process=False)
    # When it runs while every write naming a conversation item would conflict
    with injected(monkeypatch) as faults:
        for operation in ("TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem"):
            faults.fail(operation, "TransactionCanceled:TransactionConflict", when='"~META"')
        summarize(batch)
    # Then none was attempted, and the summary is stored
    assert dict(faults.injected) == {}
    assert conversation.summary is not None


def test_a_summary_covers_only_the_active_branch(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """API-18 + seed 001: after an edit, the summary of the old branch is not sent, and the next summary
    is made of the new branch's messages only (nothing of the branch left behind)."""
    # Given seven turns, summarized through message 5
    conversation.post_turns(7)
    assert conversation.summary is not None
    assert int(conversation.summary.to_seq) == 5
    assert conversation.id is not None
    detail = api.detail(conversation.id).body["messages"]
    # When the second question is edited (the new branch starts after message 2)
    edited = api.edit(conversation.id, detail[2]["message_id"], "edited question two")
    assert edited.status == 201, edited.body
    summarize(for_function(SUMMARIZER, conversation.stream.read()))
    # Then the edit's window carried no summary (it stands for the old branch)
    sent = [str(m["content"]) for m in chat_requests(standin_llm)[-1]["messages"]]
    assert not any("Summary of earlier conversation" in text for text in sent)
    assert not any(question(2) in text or question(3) in text for text in sent)
    # When the new branch grows past the window
    requests_before = len(summary_requests(standin_llm))
    for turn in range(8, 14):
        answer = api.post(question(turn), conversation.id)
        assert answer.status == 201
        summarize(for_function(SUMMARIZER, conversation.stream.read()))
    # Then a new summary was made, from scratch, of the active path only
    made = summary_requests(standin_llm)[requests_before:]
    assert made
    prompt = made[0]["messages"][1]["content"]
    assert "Previous summary: none yet." in prompt
    assert "edited question two" in prompt
    assert question(2) not in prompt
    assert question(3) not in prompt
    # And it is the one the next window carries
    window = api.window(conversation.id, "next").body
    assert window["stats"]["summary"] is not None


def test_a_summary_is_costed_and_charged_to_its_owner(
    conversation: Conversation, standin_llm: OpenAIStandin
) -> None:
    """COST-2/COST-3: the summarizer's model call is priced on the summary item (this round and all
    rounds so far) and counted in the owner's usage of the day with the replies."""
    # Given a conversation long enough to be summarized once
    conversation.post_turns(7)
    stored = conversation.summary
    assert stored is not None
    # Then the summary's cost is its call's usage at gpt-4o-mini's prices ($0.15 in, $0.60 out)
    [sent] = summary_requests(standin_llm)
    exact = Decimal(int(stored.input_tokens)) * Decimal("0.15") + Decimal(
        int(stored.output_tokens)
    ) * Decimal("0.6")
    assert stored.cost_micros == int(exact + Decimal("0.5"))
    assert stored.cost_micros > 0
    assert int(stored.cost_total_micros) == stored.cost_micros
    assert sent["model"] == "gpt-4o-mini"
    # And the day's usage holds the 7 replies and the summary: 8 calls, their costs together
    assert conversation.id is not None
    replies = [m for m in api.detail(conversation.id).body["messages"] if m["role"] == "assistant"]
    totals = api.usage().body["totals"]
    assert totals["calls"] == 8
    assert totals["cost"]["micros"] == sum(m["cost"]["micros"] for m in replies) + stored.cost_micros
