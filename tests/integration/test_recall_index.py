"""MEM-4/5: the recall index kept on the table's stream (summarizer's handler), through the handlers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import botocore.client
import pytest
from chat_core.chat.commands import PostMessage
from chat_core.chat.post import post_message
from chat_core.chat.recall import upkeep as recall_upkeep
from chat_core.engine import recall
from chat_core.llm.provider import get_provider
from chat_core.store.items import Message
from chat_core.store.keys import message_sk
from chat_core.store.recall import index as recall_index

from tests.support import events as http_events
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.recall import SUMMARIZER, post, run_stream
from tests.support.stream_records import TableStream, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TABLE = "chat-history-it"


def search(conversation_id: str, text: str) -> list[int]:
    tail = recall_index.read_tail("alice", conversation_id)
    pk = recall_index.conversation_pk("alice", conversation_id)
    segments = {
        sid: seg for (_, sid), seg in recall_index.read_segments((pk, r.id) for r in tail.segments).items()
    }
    if tail.pending:
        segments["~"] = recall.Segment(tail.pending)
    hits = recall.score(
        recall.query_terms(text), segments, n_docs=tail.n_docs, total_length=tail.total_length
    )
    return [h.doc.seq for h in hits]


def test_the_stream_indexes_every_turn_once_and_redelivery_is_a_no_op(chat_service: None) -> None:
    # Given a conversation of 20 turns, its stream processed after each
    stream = TableStream(TABLE)
    cid = post("my cat is called Mochi")
    run_stream(stream)
    for turn in range(19):
        cid = post(f"question {turn} about the weather", cid)
        batch = for_function(SUMMARIZER, stream.read())
        context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
        api.load("summarize_conversation").lambda_handler(event(batch), context)
        # When a batch is delivered twice
        again = api.load("summarize_conversation").lambda_handler(event(batch), context)
        # Then the second delivery adds nothing
        assert again["recall"]["documents"] == 0
    tail = recall_index.read_tail("alice", cid)
    # Then all 40 messages are indexed, in sealed segments merged by level, below the watermark
    assert tail.n_docs == 40
    assert tail.watermark == 40
    assert sorted(r.level for r in tail.segments) == [0, 1]
    # And the first user message is found by its words
    assert search(cid, "what is my cat called?")[0] == 1


def long_conversation(stream: TableStream, turns: int, *, policy: dict[str, Any] | None = None) -> str:
    fields = {"window_policy": policy} if policy else {}
    created = api.create(**fields)
    assert created.status == 201, created.body
    cid = str(created.body["conversation_id"])
    post("my cat is called Mochi and she likes tuna", cid)
    for turn in range(turns - 1):
        post(f"question {turn} about the weather in town", cid)
    run_stream(stream)
    return cid


def test_the_window_recalls_an_old_message_and_marks_it(chat_service: None) -> None:
    # Given 15 turns, the first naming the cat, under the default limits with recall on
    stream = TableStream(TABLE)
    cid = long_conversation(stream, 15, policy={"recall": True})
    # When the window of a question about the cat is built
    answer = api.window(cid, "what is my cat called?")
    assert answer.status == 200, answer.body
    sent = [m["content"] for m in answer.body["messages"]]
    # Then the first message is sent before the recency window, marked recalled with its score
    assert any("Mochi" in str(c) for c in sent)
    entries = {e["seq"]: e for e in answer.body["inspect"]["entries"]}
    assert entries[1]["state"] == "recalled"
    assert entries[1]["score"] > 0
    assert answer.body["stats"]["recall"]["messages"] >= 1
    # And without recall nothing is recalled
    plain = api.window(cid, "what is my cat called?", window_policy={"max_messages": 10})
    assert "recall" not in plain.body["stats"]
    assert all(e["state"] != "recalled" for e in plain.body["inspect"]["entries"])


def test_recalled_messages_left_unprocessed_by_dynamodb_are_asked_again(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEM-4: recalled messages a BatchGetItem leaves unprocessed (throttling) are asked again, not lost."""
    # Given the cat's conversation, and a DynamoDB that answers none of the first BatchGetItem's keys
    stream = TableStream(TABLE)
    cid = long_conversation(stream, 15, policy={"recall": True})
    recall_index.clear_cache()
    original: Callable[..., Any] = botocore.client.BaseClient._make_api_call
    asked: list[int] = []

    def throttled_once(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if operation != "BatchGetItem":
            return original(self, operation, params)
        ((table, request),) = params["RequestItems"].items()
        if not all(key["sk"]["S"].startswith("MSG#") for key in request["Keys"]):
            return original(self, operation, params)  # the index's segments
        asked.append(len(request["Keys"]))
        if len(asked) > 1:
            return original(self, operation, params)
        return {"Responses": {table: []}, "UnprocessedKeys": {table: request}}

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", throttled_once)
    # When the window of a question about the cat is built
    answer = api.window(cid, "what is my cat called?")
    # Then the keys were asked again and the first message is still recalled
    assert answer.status == 200, answer.body
    assert len(asked) == 2
    assert asked[0] == asked[1] >= 1
    entries = {e["seq"]: e for e in answer.body["inspect"]["entries"]}
    assert entries[1]["state"] == "recalled"


def test_a_deleted_message_is_never_recalled(chat_service: None) -> None:
    stream = TableStream(TABLE)
    cid = long_conversation(stream, 15, policy={"recall": True})
    first = api.detail(cid).body["messages"][0]
    assert "Mochi" in first["content"]
    assert api.delete_message(cid, first["message_id"]).status in (200, 204)
    answer = api.window(cid, "what is my cat called?")
    assert answer.status == 200, answer.body
    assert all(e["seq"] != 1 for e in answer.body["inspect"]["entries"])


def memory_search(user: str | None = "alice", **query: str) -> api.Answer:
    return api.invoke(
        "search_memory", http_events.http_event("GET", "/memory/search", query=query or None, user=user)
    )


def test_search_finds_the_callers_messages_only(chat_service: None) -> None:
    # Given alice's two conversations and bob's, indexed
    stream = TableStream(TABLE)
    first = post("I booked a flight to Lisbon for May")
    post("the weather is nice", first)
    second = post("我喜欢北京烤鸭")
    bob = post("Lisbon is where bob lives", None, user="bob")
    run_stream(stream)
    # When alice searches
    found = memory_search(q="flight Lisbon")
    assert found.status == 200, found.body
    results = found.body["results"]
    # Then her message comes first, with its ids, snippet and score; bob's never appears
    assert results[0]["conversation_id"] == first
    assert results[0]["seq"] == 1
    assert "Lisbon" in results[0]["snippet"]
    assert results[0]["score"] > 0
    assert all(r["conversation_id"] != bob for r in results)
    # And Chinese is found by its bigrams, in one conversation when asked
    chinese = memory_search(q="北京烤鸭", conversation_id=second).body["results"]
    assert [r["conversation_id"] for r in chinese][:1] == [second]
    # And bob's conversation cannot be searched by alice
    assert memory_search(q="Lisbon", conversation_id=bob).status == 404


@pytest.mark.parametrize(
    "query",
    [{"q": ""}, {"q": "x" * 1001}, {"q": "x", "limit": "0"}, {"q": "x", "limit": "51"}, {}],
)
def test_search_refuses_bad_parameters(chat_service: None, query: dict[str, str]) -> None:
    answer = memory_search(**query)
    assert 400 <= answer.status < 500
    assert answer.body["error"]["code"]


def test_deleted_messages_and_conversations_never_appear(chat_service: None) -> None:
    stream = TableStream(TABLE)
    kept = post("the wifi password is hunter2")
    gone = post("the wifi password is swordfish")
    run_stream(stream)

    def users() -> list[dict[str, Any]]:
        return [r for r in memory_search(q="wifi password").body["results"] if r["role"] == "user"]

    assert len(users()) == 2
    # When one conversation is deleted, then it is gone from search at once
    assert api.delete(gone).status in (200, 204)
    assert [r["conversation_id"] for r in users()] == [kept]
    # And so is a deleted message
    message_id = users()[0]["message_id"]
    assert api.delete_message(kept, message_id).status in (200, 204)
    assert users() == []


def test_recall_never_reaches_another_branch(chat_service: None) -> None:
    # Given a conversation whose first message named the cat, then edited into another branch
    stream = TableStream(TABLE)
    cid = long_conversation(stream, 3, policy={"recall": True})
    first = api.detail(cid).body["messages"][0]
    edited = api.edit(cid, first["message_id"], "my dog is called Rex and he likes bones")
    assert edited.status == 201, edited.body
    for turn in range(12):
        post(f"question {turn} about the weather in town", cid)
    run_stream(stream)
    # When the new branch asks about its pets
    answer = api.window(cid, "what is my cat or my dog called?")
    assert answer.status == 200, answer.body
    entries = answer.body["inspect"]["entries"]
    recalled = [e for e in entries if e.get("recalled")]
    # Then the branch's own first message is recalled, the other branch's never
    assert any("Rex" in e["preview"] for e in recalled)
    assert not any("Mochi" in str(m["content"]) for m in answer.body["messages"])


def test_a_deleted_conversation_is_not_indexed(chat_service: None) -> None:
    # Given a turn whose conversation is deleted before the stream reaches it (as `store: false` does)
    stream = TableStream(TABLE)
    cid = post("a secret plan")
    assert api.delete(cid).status in (200, 204)
    # When the stream is processed
    run_stream(stream)
    # Then nothing of it is indexed
    assert recall_index.read_tail("alice", cid).n_docs == 0


def test_an_index_failure_raises_for_a_retry_that_indexes(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chat_core.chat.recall import upkeep as recall_upkeep
    from chat_core.errors import StoreUnavailable, SummaryFailed

    # Given a turn, and an index that cannot be written
    stream = TableStream(TABLE)
    cid = post("hello there")
    batch = for_function(SUMMARIZER, stream.read())

    def broken(owner: str, conversation_id: str) -> int:
        raise StoreUnavailable("busy")

    monkeypatch.setattr(recall_upkeep, "update_index", broken)
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    # When the batch is processed, then it raises so Lambda retries it
    with pytest.raises(SummaryFailed):
        api.load("summarize_conversation").lambda_handler(event(batch), context)
    # And the retry indexes the turn
    monkeypatch.undo()
    again = api.load("summarize_conversation").lambda_handler(event(batch), context)
    assert again["recall"]["documents"] == 2
    assert recall_index.read_tail("alice", cid).n_docs == 2


def test_mem13_scope_all_brings_the_callers_other_conversations_and_nobody_elses(chat_service: None) -> None:
    # Given alice said where her bike is in one conversation, bob said something alike in his, and alice
    # then talks in a new conversation with recall's scope "all"
    stream = TableStream(TABLE)
    post("my red bike is locked at the harbour station")
    bob = api.post("my blue bike is parked behind the bakery", user="bob")
    assert bob.status == 201, bob.body
    gone = post("my old bike was stolen from the garden shed")
    run_stream(stream)
    assert api.delete(gone).status in (200, 204)
    policy = {"max_tokens": 2000, "recall": {"max_tokens": 600, "scope": "all"}}
    created = api.create(window_policy=policy)
    cid = str(created.body["conversation_id"])
    # When the window of a question about the bike is built
    answer = api.window(cid, "where is my bike?")
    assert answer.status == 200, answer.body
    system = [str(m["content"]) for m in answer.body["messages"] if m["role"] == "system"]
    # Then one labelled block carries alice's own line, never bob's nor a deleted conversation's
    block = [c for c in system if c.startswith("From the user's other conversations")]
    assert len(block) == 1
    assert "harbour station" in block[0]
    assert "bakery" not in block[0]
    assert "garden shed" not in block[0]
    across = answer.body["stats"]["recall"]["across"]
    assert across["tokens"] <= 300
    assert [e["conversation_id"] for e in across["entries"]] != [cid]
    # And the inspector shows the block as a row of its own (WIN-6)
    [row] = [e for e in answer.body["inspect"]["entries"] if e.get("block")]
    assert row["reason"] == "across"
    assert row["block"] == {"kind": "across", "items": len(across["entries"])}
    assert row["tokens"] == across["tokens"]
    # And with the default scope nothing of the other conversations is sent
    own = api.window(
        cid, "where is my bike?", window_policy={"max_tokens": 2000, "recall": {"max_tokens": 600}}
    )
    assert all("harbour" not in str(m["content"]) for m in own.body["messages"])


def received(answer: api.Answer) -> int:
    """How many messages the offline model says it received (its reply names the count)."""
    text = str(answer.body["reply"]["content"] if "reply" in answer.body else answer.body)
    return int(text.split("I received ")[1].split(" message")[0])


def test_mem6_recall_per_post_and_on_chat_completions_leaves_the_conversations_policy(
    chat_service: None,
) -> None:
    # Given 15 turns under the default policy (no recall), the first naming the cat
    stream = TableStream(TABLE)
    cid = long_conversation(stream, 15)
    # When one post asks for recall and the next does not
    with_recall = api.post("what is my cat called?", cid, recall=True)
    without = api.post("what is my cat called?", cid)
    assert with_recall.status == 201, with_recall.body
    assert without.status == 201, without.body
    # Then only the first sent the model more than the recency window, and the policy is unchanged
    assert received(with_recall) > received(without)
    assert api.detail(cid).body.get("window_policy") is None
    # And a Chat Completions turn on the conversation takes `recall` too (extra_body)
    event = http_events.http_event(
        "POST",
        "/v1/chat/completions",
        route="/v1/chat/completions",
        body={
            "model": "gpt-4o-mini",
            "conversation": cid,
            "messages": [{"role": "user", "content": "what is my cat called?"}],
            "recall": {"max_tokens": 500},
        },
    )
    completion = api.invoke("chat_completions", event)
    assert completion.status == 200, completion.body
    text = completion.body["choices"][0]["message"]["content"]
    assert int(text.split("I received ")[1].split(" message")[0]) > received(without)
    refused = api.post("hello", cid, recall={"max_tokens": 0})
    assert refused.status == 422


def test_mem5_a_store_false_turn_read_before_its_deletion_is_never_indexed(chat_service: None) -> None:
    # Given a turn whose answer is marked as a store: false response (RSP-9), as its stream record shows it
    stream = TableStream(TABLE)
    cid = post("my secret is the blue door")
    records = stream.read()
    for record in records:
        image = record["dynamodb"].get("NewImage") or {}
        if image.get("role", {}).get("S") == "assistant":
            image["settings"] = {"S": '{"store":false}'}
    # When the summarizer's handler gets that batch before the request's deletion of the partition
    batch = for_function(SUMMARIZER, records)
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    api.load("summarize_conversation").lambda_handler(event(batch), context)
    # Then it writes no index item into the conversation
    tail = recall_index.read_tail("alice", cid)
    assert tail.n_docs == 0
    assert search(cid, "what is my secret?") == []


def _message_at(cid: str, seq: int, source: int, content: str) -> None:
    """A message written into slot `seq` as a writer that took it would (a copy of message `source`)."""
    pk = recall_index.conversation_pk("alice", cid)
    item = Message.get(pk, message_sk(source), consistent_read=True)
    fields = {**item.attribute_values, "seq": seq, "content": content, "message_id": f"m{seq:025d}"}
    Message(pk, message_sk(seq), **{k: v for k, v in fields.items() if k not in ("pk", "sk", "cls")}).save()


def test_mem5_an_append_beside_an_empty_reply_slot_is_indexed_at_once_and_the_slot_when_filled(
    chat_service: None,
) -> None:
    """MEM-5: a message stored above a slot still empty (a post's reply the model is still writing) is
    indexed without waiting for it; the slot's message is indexed when it comes, and given up after
    HOLE_PATIENCE when it never does."""
    # Given a conversation of one appended message, then a message in slot 3 while slot 2 is empty
    stream = TableStream(TABLE)
    cid = str(api.create().body["conversation_id"])
    appended = api.append(cid, [{"role": "user", "content": "the lighthouse key"}])
    assert appended.status == 201, appended.body
    _message_at(cid, 3, 1, "my boat is moored at pier nine")
    # When the stream delivers them
    run_stream(stream)
    # Then both are searchable at once, and slot 2 is kept as a hole
    assert search(cid, "pier nine") == [3]
    assert search(cid, "lighthouse") == [1]
    assert [seq for seq, _ in recall_index.read_tail("alice", cid).holes] == [2]
    # When the slot's message comes
    _message_at(cid, 2, 1, "the reply about the harbour")
    run_stream(stream)
    # Then it is indexed and the hole is gone
    assert search(cid, "harbour") == [2]
    assert recall_index.read_tail("alice", cid).holes == ()
    # And a hole whose message never comes is given up after HOLE_PATIENCE
    _message_at(cid, 5, 1, "fifth")
    seen = time.time()
    assert recall_upkeep.update_index("alice", cid, now=seen) == 1
    _message_at(cid, 6, 1, "sixth")
    recall_upkeep.update_index("alice", cid, now=seen + recall_upkeep.HOLE_PATIENCE + 1)
    assert recall_index.read_tail("alice", cid).holes == ()


class _StreamFirst:
    """The offline model, which first lets the table's stream deliver what was stored so far: the turn's
    question reaches the upkeep while its conversation is still there (before a store: false deletion)."""

    def __init__(self, stream: TableStream) -> None:
        self.stream = stream
        self.delivered: list[dict[str, Any]] = []

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        self.delivered.append(run_stream(self.stream))
        return get_provider().complete(messages, **kwargs)


def test_mem5_a_store_false_question_delivered_before_the_answer_is_never_indexed(chat_service: None) -> None:
    """MEM-5, RSP-9: the question of a `store: false` response reaches the stream before its answer
    does and before its conversation is deleted; its conversation says it is not kept, so nothing of it
    is indexed."""
    # Given a store: false response whose model answers only once the stream delivered its question
    stream = TableStream(TABLE)
    provider = _StreamFirst(stream)
    command = PostMessage(
        conversation_id=None,
        text="my secret is the blue door",
        parts=None,
        model=None,
        answer_settings={"store": False},
        kept=False,
    )
    # When it is posted (the request's own deletion of the partition left out)
    outcome = post_message("alice", command, provider=provider)
    cid = str(outcome.body["conversation_id"])
    # Then the upkeep ran on the question and wrote no index item
    assert provider.delivered
    assert provider.delivered[0]["recall"]["conversations"] == 1
    assert recall_index.read_tail("alice", cid).n_docs == 0
    run_stream(stream)
    assert recall_index.read_tail("alice", cid).n_docs == 0
