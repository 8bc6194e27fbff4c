"""MEM-13 with MEM-51: recall's scope "all" with semantic recall fuses BM25's hits of the caller's other
conversations with dense candidates from their sign-bit runs, in the calls BM25 alone makes, with the one
embedding of the current message the conversation's own recall uses too."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from chat_core.errors import StoreUnavailable
from chat_core.llm.embeddings import EMBEDDER, Embeddings, OfflineEmbeddings
from chat_core.runtime import current
from chat_core.store.recall import vector_items as store

from tests.integration.test_recall_semantic import WRITES, _calls, embedding_usage, recalled, seed, semantic
from tests.support import functions as api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

__all__ = ["semantic"]

QUESTION = "any tips on photography?"
#: Shares no indexed term with QUESTION, only stems ("photograph-"): BM25 never finds it.
TARGET = "she works as a photographer"
#: 140 messages after TARGET: its sign bits are sealed into a run (dense.SEAL is 128).
FILLER = [f"item {i} is done" for i in range(140)]
#: The other conversations' own policy (any: only their indexes are read).
OTHER = {"max_messages": 4}


def across_policy(semantic: bool) -> dict[str, Any]:
    return {"max_tokens": 2000, "recall": {"max_tokens": 600, "scope": "all", "semantic": semantic}}


def block(answer: api.Answer) -> str:
    """The across block's text ("" when the window sent none)."""
    assert answer.status == 200, answer.body
    found = [
        str(m["content"])
        for m in answer.body["messages"]
        if m["role"] == "system" and str(m["content"]).startswith("From the user's other conversations")
    ]
    return found[0] if found else ""


class _Counting:
    """The offline embeddings, counting the calls made."""

    def __init__(self) -> None:
        self.inner = OfflineEmbeddings()
        self.calls = 0

    def embed(self, texts: Any, *, model: str, time_budget_s: float | None = None) -> Embeddings:
        self.calls += 1
        return self.inner.embed(texts, model=model, time_budget_s=time_budget_s)


def test_mem13_semantic_scope_all_finds_a_message_sharing_no_word_and_never_a_deleted_one(
    semantic: None,
) -> None:
    # Given another conversation whose first message (sealed in a dense run) shares only stems with the
    # question, one deleted conversation and one deleted message that share them too
    other = seed([TARGET, *FILLER], OTHER)
    assert store.read_mark("alice", other).runs, "the sign bits were sealed into a run"
    gone = seed(["my brother is a photographer too", "ok"], OTHER)
    assert api.delete(gone).status in (200, 204)
    kept = seed(["a photographer friend of mine", "fine"], OTHER)
    first = api.detail(kept).body["messages"][0]
    assert api.delete_message(kept, first["message_id"]).status in (200, 204)
    cid = str(api.create().body["conversation_id"])
    # When the window of the question is built with scope "all", BM25 alone
    plain = block(api.window(cid, QUESTION, window_policy=across_policy(False)))
    # Then nothing of the other conversations is found
    assert plain == ""
    # When it is built with semantic recall
    answer = api.window(cid, QUESTION, window_policy=across_policy(True))
    # Then the message sharing no word reaches the block, never the deleted conversation's nor message's
    text = block(answer)
    assert TARGET in text
    assert "brother" not in text
    assert "friend of mine" not in text
    entries = answer.body["stats"]["recall"]["across"]["entries"]
    assert {e["conversation_id"] for e in entries} <= {other, kept}


def test_mem13_the_current_message_is_embedded_once_for_both_recalls(semantic: None) -> None:
    # Given another conversation about a photographer, and the current one holding an older message about
    # one too (left out of the 4 newest the window sends)
    seed([TARGET, *FILLER[:10]], OTHER)
    policy = {"max_messages": 4, "recall": {"max_tokens": 400, "scope": "all", "semantic": True}}
    cid = seed(["he is a keen photographer", *FILLER[10:20]], policy)
    counting = _Counting()
    current().provide(EMBEDDER, counting)
    before = embedding_usage()
    # When the window of the question is built
    answer = api.window(cid, QUESTION)
    # Then both recalls found their photographer
    assert TARGET in block(answer)
    assert 1 in recalled(answer)
    # And the question was embedded with one call, charged once
    assert counting.calls == 1
    after = embedding_usage()
    assert after is not None
    assert after.calls == (before.calls if before else 0) + 1


def test_mem13_a_store_failure_after_the_embedding_still_charges_it_once(
    semantic: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given another conversation, and the candidates' read failing once the question is embedded
    seed([TARGET, *FILLER[:10]], OTHER)
    cid = str(api.create().body["conversation_id"])

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("busy")

    monkeypatch.setattr(store, "messages_and_vectors", failing)
    before = embedding_usage()
    # When the window is built with semantic scope "all"
    answer = api.window(cid, QUESTION, window_policy=across_policy(True))
    # Then the request fails (to retry), and the embedding call it made is charged, once
    assert answer.status == 503, answer.body
    after = embedding_usage()
    assert after is not None
    assert after.calls == (before.calls if before else 0) + 1


def test_mem13_semantic_scope_all_makes_the_calls_lexical_scope_all_makes(
    semantic: None, dynamo_calls: Counter[str]
) -> None:
    # Given three other conversations, one with a sealed dense run, and the current one
    seed([TARGET, *FILLER], OTHER)
    seed(["the printer jams", "call IT"], OTHER)
    seed(["my sister is a photography teacher", "nice"], OTHER)
    cid = str(api.create().body["conversation_id"])
    # When the same window is built with scope "all", with and without semantic recall (caches cold)
    lexical = _calls(dynamo_calls, lambda: api.window(cid, QUESTION, window_policy=across_policy(False)))
    hybrid = _calls(dynamo_calls, lambda: api.window(cid, QUESTION, window_policy=across_policy(True)))

    def reads(calls: Counter[str]) -> int:
        return sum(n for name, n in calls.items() if name not in WRITES)

    # Then semantic recall reads exactly as often (the conversation's own tail comes with its dense mark:
    # a BatchGetItem for the GetItem); its only other call is the window route's charge of the query
    # embedding (one UpdateItem)
    assert reads(hybrid) == reads(lexical), (hybrid, lexical)
    assert sum(hybrid.values()) == sum(lexical.values()) + 1, (hybrid, lexical)
    assert hybrid["UpdateItem"] == lexical["UpdateItem"] + 1, (hybrid, lexical)
    # And it found what BM25 alone did not
    assert TARGET in block(api.window(cid, QUESTION, window_policy=across_policy(True)))
