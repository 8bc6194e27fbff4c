"""MEM-21..23: the memory items' sort keys round-trip and keep namespaces apart; the filter, the query
score and the namespace conditions of a search or a listing (pure functions, no table)."""

from __future__ import annotations

import math

import pytest
from chat_core.engine import memory_match
from chat_core.store.memory_items import item_sk, namespace_prefix, parse_sk
from hypothesis import given
from hypothesis import strategies as st

labels = st.text(min_size=1, max_size=12).filter(lambda s: "." not in s)
namespaces = st.lists(labels, min_size=1, max_size=4).map(tuple)


@given(namespaces, st.text(min_size=1, max_size=20))
def test_a_sort_key_round_trips(namespace: tuple[str, ...], key: str) -> None:
    """MEM-21: namespace and key come back from the sort key exactly, whatever they hold."""
    assert parse_sk(item_sk(namespace, key)) == (namespace, key)


@given(namespaces, namespaces, st.text(min_size=1, max_size=8))
def test_a_prefix_catches_exactly_the_namespaces_under_it(
    prefix: tuple[str, ...], namespace: tuple[str, ...], key: str
) -> None:
    """MEM-21: begins_with(sk, prefix) holds exactly when the namespace starts with the prefix's labels."""
    caught = item_sk(namespace, key).startswith(namespace_prefix(prefix))
    assert caught == (namespace[: len(prefix)] == prefix)


def test_filters_compare_as_langgraph_does() -> None:
    """MEM-22: exact values, the $-operators, nested objects; incomparable types never match."""
    value = {"kind": "food", "stars": 4, "who": {"name": "Ada", "age": 36}}
    assert memory_match.matches_filter(value, {"kind": "food"})
    assert memory_match.matches_filter(value, {"stars": {"$gte": 4, "$lt": 5}})
    assert memory_match.matches_filter(value, {"who": {"name": "Ada"}})
    assert memory_match.matches_filter(value, {"kind": {"$ne": "work"}})
    assert not memory_match.matches_filter(value, {"stars": {"$gt": "3"}})
    assert not memory_match.matches_filter(value, {"missing": 1})
    assert memory_match.unknown_operators({"a": {"$regex": "x", "$eq": 1}}) == ["$regex"]


def test_the_query_score_is_the_share_of_terms_found() -> None:
    """MEM-22: case-insensitive terms; CJK characters one by one; strings anywhere in the value."""
    value = {"text": "Alice LIKES sushi", "tags": ["寿司", {"deep": "ramen"}]}
    assert memory_match.query_score(memory_match.terms("likes ramen"), value) == 1.0
    assert memory_match.query_score(memory_match.terms("sushi pizza"), value) == 0.5
    assert memory_match.query_score(memory_match.terms("寿司屋"), value) == 0.666667
    assert memory_match.query_score([], value) == 0.0


def test_namespace_conditions() -> None:
    """MEM-23: prefix and suffix with wildcards, max_depth, sorted distinct, paged."""
    stored = [
        ("users", "a", "v1"),
        ("users", "b", "v1"),
        ("users", "b", "v2"),
        ("docs",),
        ("users", "a", "v1"),
    ]
    assert memory_match.list_namespaces(stored, prefix=("users", "*", "v1")) == [
        ("users", "a", "v1"),
        ("users", "b", "v1"),
    ]
    assert memory_match.list_namespaces(stored, suffix=("*", "v2")) == [("users", "b", "v2")]
    assert memory_match.list_namespaces(stored, max_depth=1) == [("docs",), ("users",)]
    assert memory_match.list_namespaces(stored, limit=1, offset=1) == [("users", "a", "v1")]
    assert memory_match.literal_prefix(("users", "*", "v1")) == ("users",)


def test_a_filter_compares_with_infinity_and_nan_as_langgraph_does() -> None:
    """MEM-22: {"$numberDouble": ...} is read as the float JSON cannot write; NaN equals nothing and every
    number lies between minus infinity and infinity, as in LangGraph's stores."""
    decoded = memory_match.decode_numbers(
        {"a": {"$lt": {"$numberDouble": "Infinity"}}, "b": [{"$numberDouble": "-Infinity"}], "c": "NaN"}
    )
    assert decoded["a"] == {"$lt": math.inf}
    assert decoded["b"] == [-math.inf]
    assert decoded["c"] == "NaN"
    nan = memory_match.decode_numbers({"$numberDouble": "NaN"})
    assert math.isnan(nan)
    value = {"price": 10}
    assert memory_match.matches_filter(value, {"price": {"$lt": math.inf, "$gt": -math.inf}})
    assert not memory_match.matches_filter(value, {"price": {"$gt": math.inf}})
    assert not memory_match.matches_filter(value, {"price": {"$eq": nan}})
    assert not memory_match.matches_filter(value, {"price": nan})
    assert memory_match.matches_filter(value, {"price": {"$ne": nan}})
    with pytest.raises(ValueError, match="numberDouble"):
        memory_match.decode_numbers({"$numberDouble": "1e999"})
