"""MEM-27: `ChatHistoryStore`, LangGraph's `BaseStore`, on the local server over HTTP: LangGraph's own
store API (put / get / search / list_namespaces / delete, TTL, async), and a compiled graph whose nodes
read and write the store through their `Runtime` and `get_store()`."""

from __future__ import annotations

import asyncio
import operator
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from chat_history_client import InvalidRequest, _memory_calls
from chat_history_client.langgraph_store import ChatHistoryStore
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from tests.support.local_server import ServerProcess


def _store(server: ServerProcess, user: str = "alice") -> ChatHistoryStore:
    return ChatHistoryStore(base_url=server.url, user_id=user)


def test_the_store_api_round_trips(server: ServerProcess) -> None:
    """MEM-27: put, get, search (filter, query, paging), list_namespaces and delete, as LangGraph
    calls them."""
    store = _store(server)
    ns = ("users", "alice", "memories")
    # Given memories put through LangGraph's API
    store.put(ns, "food", {"text": "Likes sushi and ramen", "kind": "food", "stars": 5})
    store.put(ns, "city", {"text": "Lives in Lisbon", "kind": "place", "stars": 3})
    store.put(("users", "alice", "profile"), "name", {"text": "Alice"})
    # Then get answers an Item with its times
    item = store.get(ns, "food")
    assert item is not None
    assert item.namespace == ns
    assert item.key == "food"
    assert item.value["stars"] == 5
    assert item.created_at.tzinfo is not None
    assert item.updated_at >= item.created_at
    assert store.get(ns, "missing") is None
    # And a replace keeps created_at
    store.put(ns, "food", {"text": "Likes sushi", "kind": "food", "stars": 4})
    again = store.get(ns, "food")
    assert again is not None
    assert again.created_at == item.created_at
    assert again.value["stars"] == 4
    # Search: a filter, a query ranked by terms, paging
    assert [i.key for i in store.search(ns, filter={"kind": "food"})] == ["food"]
    assert [i.key for i in store.search(ns, filter={"stars": {"$lt": 4}})] == ["city"]
    found = store.search(("users", "alice"), query="sushi")
    assert [(i.key, i.score) for i in found] == [("food", 1.0)]
    assert len(store.search(("users",), limit=2)) == 2
    assert len(store.search(("users",), limit=2, offset=2)) == 1
    # list_namespaces: prefix, suffix, depth
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "alice", "memories"),
        ("users", "alice", "profile"),
    ]
    assert store.list_namespaces(suffix=("profile",)) == [("users", "alice", "profile")]
    assert store.list_namespaces(max_depth=2) == [("users", "alice")]
    # Delete
    store.delete(ns, "city")
    assert store.get(ns, "city") is None
    # Another user sees none of it
    assert _store(server, "bob").search(("users",)) == []
    store.close()


def test_batch_ops_and_ttl(server: ServerProcess) -> None:
    """MEM-27: one batch of every op kind answers in order; a TTL in minutes is kept (supports_ttl)."""
    store = _store(server, "carol")
    ns = ("batch",)
    results = store.batch(
        [
            PutOp(ns, "a", {"text": "first"}, ttl=30),
            PutOp(ns, "b", {"text": "second"}),
            GetOp(ns, "a"),
            SearchOp(ns, query="second"),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ns),)),
            PutOp(ns, "b", None),
            GetOp(ns, "b"),
        ]
    )
    assert results[0] is None
    assert results[1] is None
    assert results[2] is not None
    assert results[2].value == {"text": "first"}
    assert [i.key for i in results[3]] == ["b"]
    assert results[4] == [("batch",)]
    assert results[6] is None
    raw = store.client.send(_memory_calls.get_item(ns, "a", refresh_ttl=False))
    assert raw["ttl"] == 30
    assert raw["expires_at"] is not None
    store.close()


def test_the_async_api(server: ServerProcess) -> None:
    """MEM-27: aput, aget, asearch, alist_namespaces, adelete over the async client."""
    store = _store(server, "dave")

    async def scenario() -> None:
        await store.aput(("a", "b"), "k", {"text": "hello world"})
        item = await store.aget(("a", "b"), "k")
        assert item is not None
        assert item.value == {"text": "hello world"}
        assert [i.key for i in await store.asearch(("a",), query="WORLD")] == ["k"]
        assert await store.alist_namespaces() == [("a", "b")]
        await store.adelete(("a", "b"), "k")
        assert await store.aget(("a", "b"), "k") is None

    asyncio.run(scenario())
    store.close()


class State(TypedDict):
    user: str
    said: str
    recalled: Annotated[list[str], operator.add]


@dataclass
class Context:
    user_id: str


def test_a_compiled_graph_reads_and_writes_the_store(server: ServerProcess) -> None:
    """MEM-27: nodes of a compiled graph remember through `runtime.store` and recall through
    `get_store()`; a second run of the graph finds what the first stored."""

    def remember(state: State, runtime: Runtime[Context]) -> dict[str, list[str]]:
        assert runtime.store is not None
        namespace = ("memories", runtime.context.user_id)
        runtime.store.put(
            namespace, f"m{len(runtime.store.search(namespace, limit=100))}", {"text": state["said"]}
        )
        return {"recalled": []}

    def recall(state: State) -> dict[str, list[str]]:
        store = get_store()
        found = store.search(("memories", state["user"]), query=state["said"], limit=5)
        return {"recalled": [str(item.value["text"]) for item in found]}

    builder = StateGraph(State, context_schema=Context)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    store = _store(server, "erin")
    graph = builder.compile(store=store)
    first = graph.invoke(
        {"user": "erin", "said": "My dog is called Rex", "recalled": []}, context=Context(user_id="erin")
    )
    assert first["recalled"] == ["My dog is called Rex"]
    second = graph.invoke(
        {"user": "erin", "said": "What is my dog called?", "recalled": []}, context=Context(user_id="erin")
    )
    assert "My dog is called Rex" in second["recalled"]
    # The memories are on the service, as erin's
    assert len(_store(server, "erin").search(("memories", "erin"))) == 2
    assert _store(server, "frank").search(("memories",)) == []
    store.close()


def test_bad_input_surfaces_as_the_clients_errors(server: ServerProcess) -> None:
    """MEM-26/27: LangGraph's own namespace checks first; the service's 4xx as the client's errors."""
    store = _store(server)
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidRequest):
        store.search(("a",), filter={"v": {"$regex": "x"}})
    with pytest.raises(InvalidRequest):
        store.put(("a",), "k", {"v": "x" * 70_000})
    store.close()


def test_a_label_matches_exactly_whatever_it_holds(server: ServerProcess) -> None:
    """MEM-27: a namespace label is matched exactly over HTTP, as LangGraph's InMemoryStore matches it: a
    trailing newline, spaces, a tab or another script make another namespace."""
    store = _store(server, f"labels-{uuid.uuid4().hex}")
    plain = ("users", "alice")
    variants = [("users", "alice\n"), ("users", "alice "), ("users", "\talice"), ("users", "アリス")]
    # Given a memory under the plain namespace and one under each variant, in both stores
    reference = InMemoryStore()
    for target in (store, reference):
        target.put(plain, "k", {"v": "plain"})
        for n, namespace in enumerate(variants):
            target.put(namespace, "k", {"v": n})
    # Then each is read back as its own
    for n, namespace in enumerate(variants):
        item = store.get(namespace, "k")
        assert item is not None
        assert item.value == {"v": n}
        assert item.namespace == namespace
    # And the plain label, as a prefix or a suffix, catches the plain namespace only, as in InMemoryStore
    for conditions in ({"suffix": ["alice"]}, {"prefix": ["users", "alice"]}, {"prefix": ["users"]}):
        found = set(store.list_namespaces(limit=100, **conditions))  # type: ignore[arg-type]
        assert found == set(reference.list_namespaces(limit=100, **conditions)), conditions  # type: ignore[arg-type]
    assert {i.namespace for i in store.search(plain)} == {plain}
    store.close()


def test_a_filter_with_infinity_or_nan_answers_as_langgraph_does(server: ServerProcess) -> None:
    """MEM-27: a filter comparing with infinity or NaN (numbers JSON cannot write) reaches the service and
    answers what LangGraph's InMemoryStore answers."""
    store = _store(server, f"filters-{uuid.uuid4().hex}")
    reference = InMemoryStore()
    for target in (store, reference):
        for key, price in (("a", 10), ("b", 20.5), ("c", -3)):
            target.put(("items",), key, {"price": price, "nested": {"price": price}})
    inf, nan = float("inf"), float("nan")
    filters: list[dict[str, Any]] = [
        {"price": {"$lt": inf}},
        {"price": {"$gt": -inf}},
        {"price": {"$gte": inf}},
        {"price": {"$lte": -inf}},
        {"price": {"$eq": nan}},
        {"price": {"$ne": nan}},
        {"price": {"$gt": nan}},
        {"price": nan},
        {"nested": {"price": {"$lt": inf}}},
    ]
    for condition in filters:
        ours = sorted(i.key for i in store.search(("items",), filter=condition))
        assert ours == sorted(i.key for i in reference.search(("items",), filter=condition)), condition
    # Then the three non-finite comparisons did select something, so they were evaluated, not dropped
    assert len(store.search(("items",), filter={"price": {"$lt": inf}})) == 3
    store.close()


def test_batch_checks_every_label_before_sending_any(server: ServerProcess) -> None:
    """MEM-27: ops given straight to `batch` / `abatch` have their labels checked first: a label with "."
    (which GET would join into ("a", "b")), an empty one or a non-string fails the whole batch, unsent."""
    store = _store(server, f"batch-{uuid.uuid4().hex}")
    store.put(("a", "b"), "k", {"original": True})
    for bad in (("a.b",), ("a", ""), ("a", 1)):
        for op in (
            GetOp(bad, "k"),  # type: ignore[arg-type]
            PutOp(bad, "k", {"changed": True}),  # type: ignore[arg-type]
            SearchOp(bad),  # type: ignore[arg-type]
            ListNamespacesOp((MatchCondition("suffix", bad),)),  # type: ignore[arg-type]
        ):
            with pytest.raises(InvalidNamespaceError):
                store.batch([PutOp(("valid",), "k", {}), op])
            with pytest.raises(InvalidNamespaceError):
                asyncio.run(store.abatch([PutOp(("valid",), "k", {}), op]))
    assert store.get(("valid",), "k") is None
    item = store.get(("a", "b"), "k")
    assert item is not None
    assert item.value == {"original": True}
    store.close()
