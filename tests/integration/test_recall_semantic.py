"""MEM-49..52: semantic recall with the offline stand-in's embeddings: the vectors the stream's upkeep
writes and charges, what it never embeds, the hybrid window and its DynamoDB calls."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from chat_core.chat.recall import embedding as recall_embedding
from chat_core.chat.recall import upkeep as recall_upkeep
from chat_core.engine.recall import vectors
from chat_core.errors import ProviderFailed
from chat_core.llm.embeddings import EMBEDDER, OfflineEmbeddings
from chat_core.llm.offline import offline_vector
from chat_core.runtime import current
from chat_core.store import ledger
from chat_core.store.items import Conversation, Message
from chat_core.store.keys import conversation_pk, message_id_for
from chat_core.store.recall import dense_runs
from chat_core.store.recall import index as recall_index
from chat_core.store.recall import vector_items as store

from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.recall import SUMMARIZER, post, run_stream
from tests.support.runtime import install
from tests.support.stream_records import TableStream, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TABLE = "chat-history-it"
MODEL = "text-embedding-3-small"


@pytest.fixture
def semantic(chat_service: None) -> None:
    """The service with RECALL_EMBEDDINGS_MODEL set (the offline stand-in answers), its embeddings priced
    at $1 per 1M tokens so their charge shows."""
    settings = current().settings
    install(
        replace(
            settings,
            recall_embeddings_model=MODEL,
            prices='{"offline-embeddings": {"input": 1.0, "output": 0}}',
        )
    )


def stored_vectors(conversation_id: str, seqs: range) -> dict[int, bytes]:
    _, found = store.candidates_for(conversation_pk("alice", conversation_id), list(seqs), have=set(seqs))
    assert all(model == "offline-embeddings" for model, _ in found.values())
    return {seq: data for seq, (_, data) in found.items()}


def embedding_usage() -> ledger.UsageDayRecord | None:
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    return next((d for d in ledger.read_days("alice", day, day) if d.model == "offline-embeddings"), None)


def test_the_stream_embeds_each_message_once_and_charges_the_call(semantic: None) -> None:
    # Given a conversation of three turns
    stream = TableStream(TABLE)
    cid = post("my sister works as a photographer in Porto")
    post("the weather is nice today", cid)
    post("I booked a table for dinner", cid)
    # When the stream is processed, then delivered again
    first = run_stream(stream)
    again = api.load("summarize_conversation").lambda_handler(
        event(for_function(SUMMARIZER, stream.read())),
        LambdaContext(function_name="summarize_conversation", remaining_ms=120_000),
    )
    # Then the six messages have their int8 vectors, below the messages, once
    assert first["recall"]["vectors"] == 6
    assert again["recall"].get("vectors", 0) == 0
    found = stored_vectors(cid, range(1, 7))
    assert sorted(found) == [1, 2, 3, 4, 5, 6]
    assert store.read_mark("alice", cid).watermark == 6
    expected = offline_vector("my sister works as a photographer in Porto")
    assert vectors.cosine(vectors.dequantise(found[1]), expected) > 0.99
    assert len(found[1]) == 256 + 6
    # And the one embeddings call is charged to alice's usage of the day, priced
    usage = embedding_usage()
    assert usage is not None
    assert usage.calls == 1
    assert usage.prompt_tokens > 10
    assert usage.cost_micros > 0
    # And the post's own Query never meets the vector items (they sort below "MSG#")
    assert api.detail(cid).body["message_count"] == 6


def test_nothing_is_embedded_when_off(chat_service: None) -> None:
    stream = TableStream(TABLE)
    cid = post("my sister works as a photographer in Porto")
    result = run_stream(stream)
    assert "vectors" not in result["recall"]
    assert stored_vectors(cid, range(1, 3)) == {}
    assert embedding_usage() is None


def test_deleted_messages_and_deleted_conversations_are_never_embedded(semantic: None) -> None:
    # Given a conversation whose first message is deleted before the stream runs
    stream = TableStream(TABLE)
    cid = post("my sister works as a photographer in Porto")
    post("the weather is nice today", cid)
    first = api.detail(cid).body["messages"][0]
    assert api.delete_message(cid, first["message_id"]).status in (200, 204)
    # And a conversation deleted once answered (what `store: false` does)
    gone = post("a secret that must not be kept")
    assert api.delete(gone).status in (200, 204)
    # When the stream is processed
    run_stream(stream)
    # Then the deleted message has no vector, the deleted conversation none at all
    assert 1 not in stored_vectors(cid, range(1, 5))
    assert sorted(stored_vectors(cid, range(1, 5))) == [2, 3, 4]
    assert stored_vectors(gone, range(1, 3)) == {}
    assert store.read_mark("alice", gone).watermark == 0


def test_an_owner_over_budget_is_not_embedded_until_the_budget_allows(semantic: None) -> None:
    # Given alice has spent more tokens today than a budget of 1 token allows
    stream = TableStream(TABLE)
    cid = post("my sister works as a photographer in Porto")
    settings = current().settings
    install(replace(settings, budget_daily_tokens=1))
    # When the stream is processed
    result = run_stream(stream)
    # Then nothing is embedded, and the watermark waits (lexical recall still indexed the messages)
    assert result["recall"]["vectors"] == 0
    assert store.read_mark("alice", cid).watermark == 0
    assert recall_index.read_tail("alice", cid).n_docs == 2
    assert embedding_usage() is None
    # And once the budget allows, the next upkeep embeds them
    install(settings)
    assert recall_embedding.embed_conversation("alice", cid) == 2


# -- the hybrid window ---------------------------------------------------------------------------------

TARGET = "my sister works as a professional photographer in Porto, mostly at weddings"
DISTRACTORS = [
    f"my sister called about {topic}"
    for topic in (
        "football",
        "cinema",
        "shopping",
        "cleaning",
        "baking",
        "gaming",
        "reading",
        "cycling",
        "dinner",
        "the car",
        "her cat",
        "tuesday",
    )
]
NEUTRAL = ["the weather is fine", "ok", "thanks", "sounds good", "see you", "bye"]
QUESTION = "what does my sister photograph?"


def seed(texts: list[str], policy: dict[str, Any]) -> str:
    """A conversation of `texts` (written straight to the table, 12 tokens each), indexed and embedded."""
    created = api.create(window_policy=policy)
    cid = str(created.body["conversation_id"])
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    pk = Conversation.key("alice", cid)[0]
    with Message.batch_write() as batch:
        for seq, text in enumerate(texts, start=1):
            role = "user" if seq % 2 else "assistant"
            batch.save(
                Message(
                    pk,
                    f"MSG#{seq:010d}",
                    message_id=message_id_for(seq),
                    seq=seq,
                    role=role,
                    content=text,
                    created_at=now,
                    tokens=12,
                    **({"model": "gpt-4o-mini"} if role == "assistant" else {}),
                )
            )
    conversation = Conversation.get(*Conversation.key("alice", cid))
    count = len(texts)
    conversation.update(actions=[Conversation.next_seq.set(count + 1), Conversation.message_count.set(count)])
    recall_upkeep.update_index("alice", cid)
    while recall_embedding.embed_conversation("alice", cid):
        pass
    return cid


def recalled(answer: api.Answer) -> list[int]:
    assert answer.status == 200, answer.body
    return [e["seq"] for e in answer.body["inspect"]["entries"] if e["state"] == "recalled"]


def test_hybrid_recalls_a_paraphrase_bm25_ranks_low(semantic: None) -> None:
    # Given a message about the sister's photography, twelve others that name the sister, then small talk
    policy = {"max_messages": 4, "recall": {"max_tokens": 72}}
    cid = seed([TARGET, *DISTRACTORS, *NEUTRAL], policy)
    # When the window of "what does my sister photograph?" is built with BM25 alone
    lexical = recalled(api.window(cid, QUESTION))
    # Then the six best BM25 hits fill recall's share, and the photographer is not among them
    assert len(lexical) == 6
    assert 1 not in lexical
    # And with the semantic option it is recalled
    hybrid_policy = {"max_messages": 4, "recall": {"max_tokens": 72, "semantic": True}}
    assert 1 in recalled(api.window(cid, QUESTION, window_policy=hybrid_policy))


def test_a_message_sharing_no_word_is_found_among_the_messages_at_hand(semantic: None) -> None:
    # Given a short conversation whose recency window holds 2 messages: the post's Query read the older
    # ones (a token budget reads up to the policies' message cap), so they are at hand
    texts = ["she works as a photographer", "lovely", "the printer jams", "call IT", "ok", "bye"]
    cid = seed(texts, {"max_tokens": 60})
    policy = {"max_tokens": 60, "recall": {"max_tokens": 12, "semantic": True}}
    # When the question shares no indexed term with the message, only a stem ("photography")
    found = recalled(api.window(cid, "any tips on photography?", window_policy=policy))
    # Then the hybrid recalls it; BM25 alone finds nothing
    assert found == [1]
    plain = {"max_tokens": 60, "recall": {"max_tokens": 12}}
    assert recalled(api.window(cid, "any tips on photography?", window_policy=plain)) == []


def test_mem51_a_message_sharing_no_word_is_found_anywhere_in_the_conversation(semantic: None) -> None:
    # Given 300 messages, the first about a photographer, the rest small talk; the post reads the newest
    # 4 only (no token budget), so the first is neither a BM25 hit nor at hand
    cid = seed(
        ["she works as a photographer", *(f"item {i} is done" for i in range(299))], {"max_messages": 4}
    )
    mark = store.read_mark("alice", cid)
    assert mark.runs, "the sign bits were sealed into a run"
    # When the question shares no indexed term with it ("photography")
    plain = {"max_messages": 4, "recall": {"max_tokens": 12}}
    on = {"max_messages": 4, "recall": {"max_tokens": 12, "semantic": True}}
    # Then BM25 alone finds nothing, and dense candidates from the whole conversation find it
    assert recalled(api.window(cid, "any tips on photography?", window_policy=plain)) == []
    assert recalled(api.window(cid, "any tips on photography?", window_policy=on)) == [1]


def test_the_query_embedding_is_charged(semantic: None) -> None:
    cid = seed([TARGET, *DISTRACTORS, *NEUTRAL], {"max_messages": 4})
    before = embedding_usage()
    policy = {"max_messages": 4, "recall": {"max_tokens": 72, "semantic": True}}
    assert api.window(cid, QUESTION, window_policy=policy).status == 200
    after = embedding_usage()
    assert after is not None
    assert after.calls == (before.calls if before else 0) + 1


def test_a_posts_query_embedding_is_charged_with_its_reply_once(semantic: None) -> None:
    """MEM-50: a post writes no usage of its own for its query embedding: the reply carries the charge
    and the table's stream adds it to the owner's usage, once however often the record is delivered."""
    # Given an embedded conversation whose policy asks for semantic recall
    policy = {"max_messages": 4, "recall": {"max_tokens": 72, "semantic": True}}
    texts = [TARGET, *DISTRACTORS, *NEUTRAL]
    cid = seed(texts, policy)
    stream = TableStream(TABLE)
    before = embedding_usage()
    calls_before = before.calls if before else 0
    # When a question is posted
    answer = api.post(QUESTION, cid)
    assert answer.status == 201, answer.body
    # Then its reply carries the query embedding's charge
    reply = Message.get(*Message.key("alice", cid, len(texts) + 2))
    assert reply.message_id == answer.body["assistant_message"]["message_id"]
    assert [c["model"] for c in reply.charges] == ["offline-embeddings"]
    assert reply.charges[0]["prompt"] > 0
    # And the stream (here fed before each read of the usage) charged it to the owner's usage
    found = embedding_usage()
    assert found is not None
    assert found.calls == calls_before + 1
    # When the summarizer's function receives the turn's records, twice
    records = stream.read()
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    for _ in range(2):
        api.load("summarize_conversation").lambda_handler(event(for_function(SUMMARIZER, records)), context)
    # Then the owner's usage has the query embedding once, beside the upkeep's embedding of the new turn
    after = embedding_usage()
    assert after is not None
    assert after.calls == calls_before + 2
    assert store.read_mark("alice", cid).watermark == len(texts) + 2


def _calls(dynamo_calls: Counter[str], action: Any) -> Counter[str]:
    recall_index.clear_cache()
    dense_runs.clear_cache()
    dynamo_calls.clear()
    answer = action()
    assert answer.status in (200, 201), answer.body
    return Counter(dynamo_calls)


WRITES = {"UpdateItem", "PutItem", "TransactWriteItems", "BatchWriteItem", "DeleteItem"}


@pytest.mark.parametrize("count", [10, 1000])
def test_semantic_recall_reads_at_most_three_more_times(
    semantic: None, dynamo_calls: Counter[str], count: int
) -> None:
    # Given a conversation of `count` messages, indexed and embedded
    texts = [TARGET, *(DISTRACTORS * (count // len(DISTRACTORS) + 1))][:count]
    cid = seed(texts, {"max_tokens": 2000})
    on = {"max_tokens": 2000, "recall": {"max_tokens": 500, "semantic": True}}
    off = {"max_tokens": 2000}
    # When the same window is built with semantic recall and without recall
    with_recall = _calls(dynamo_calls, lambda: api.window(cid, QUESTION, window_policy=on))
    without = _calls(dynamo_calls, lambda: api.window(cid, QUESTION, window_policy=off))

    def reads(calls: Counter[str]) -> int:
        return sum(n for name, n in calls.items() if name not in WRITES)

    # Then it reads at most 3 more times, and writes once more (the window route charges its query
    # embedding itself: no reply carries it)
    assert reads(with_recall) - reads(without) <= 3, (with_recall, without)
    assert sum(with_recall.values()) - sum(without.values()) <= 4, (with_recall, without)
    # And a post makes at most 3 more calls in all (MEM-9): its reply carries the charge
    assert api.update(cid, window_policy=off).status == 200
    post_without = _calls(dynamo_calls, lambda: api.post(QUESTION, cid))
    assert api.update(cid, window_policy=on).status == 200
    post_with = _calls(dynamo_calls, lambda: api.post(QUESTION, cid))
    assert sum(post_with.values()) - sum(post_without.values()) <= 3, (post_with, post_without)
    assert post_with["UpdateItem"] == post_without["UpdateItem"], (post_with, post_without)


class _Failing:
    """An embeddings provider that is down."""

    def embed(self, texts: Any, *, model: str, time_budget_s: float | None = None) -> Any:
        raise ProviderFailed("the embeddings model answered HTTP 503", status_code=503, kind="http_error")


def test_a_failing_provider_falls_back_to_bm25_and_leaves_the_backlog(semantic: None) -> None:
    # Given an embedded conversation, then the provider goes down
    cid = seed([TARGET, *DISTRACTORS, *NEUTRAL], {"max_messages": 4})
    current().provide(EMBEDDER, _Failing())
    before = embedding_usage()
    # When a window asks for semantic recall
    hybrid_policy = {"max_messages": 4, "recall": {"max_tokens": 72, "semantic": True}}
    found = recalled(api.window(cid, QUESTION, window_policy=hybrid_policy))
    # Then it is BM25's recall, and nothing more is charged
    lexical_policy = {"max_messages": 4, "recall": {"max_tokens": 72}}
    assert found == recalled(api.window(cid, QUESTION, window_policy=lexical_policy))
    assert found
    assert embedding_usage() == before
    # And the stream's upkeep logs the failure, raises nothing and leaves its watermark for the next turn
    stream = TableStream(TABLE)
    post("one more question about the weather", cid)
    result = run_stream(stream)
    assert result["recall"]["vectors"] == 0
    assert store.read_mark("alice", cid).watermark == len(DISTRACTORS) + len(NEUTRAL) + 1


class _EchoingNames:
    """The offline stand-in's vectors under the model name asked for (a provider that answers with the
    name it was sent, as a passage and a query name of one model may both be), recording the names."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed(self, texts: Any, *, model: str, time_budget_s: float | None = None) -> Any:
        self.asked.append(model)
        found = OfflineEmbeddings(current().settings).embed(texts, model=model, time_budget_s=time_budget_s)
        return replace(found, model=model)


def test_mem55_the_current_message_is_embedded_with_the_query_model(semantic: None) -> None:
    """MEM-55: RECALL_EMBEDDINGS_QUERY_MODEL names the current message's model; the stored vectors,
    recorded under RECALL_EMBEDDINGS_MODEL, still count as the same model's."""
    # Given a passage and a query name of one model, and a provider answering with the name it was sent
    install(
        replace(
            current().settings,
            recall_embeddings_model="e5-passage",
            recall_embeddings_query_model="e5-query",
        )
    )
    names = _EchoingNames()
    current().provide(EMBEDDER, names)
    cid = seed([TARGET, *DISTRACTORS, *NEUTRAL], {"max_messages": 4})
    assert set(names.asked) == {"e5-passage"}
    # When the window of a question asks for semantic recall
    hybrid_policy = {"max_messages": 4, "recall": {"max_tokens": 72, "semantic": True}}
    found = recalled(api.window(cid, QUESTION, window_policy=hybrid_policy))
    # Then the question went as a query, and the paraphrase BM25 ranks low is recalled by its vector
    assert names.asked[-1] == "e5-query"
    assert 1 in found
