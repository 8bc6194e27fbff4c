"""MEM-20..26: memory items by namespace and key (LangGraph's store over HTTP), through the real handler
on moto: put / get / delete, search under a prefix with a filter and a query, namespaces, TTL, owner
isolation, bad input, and the DynamoDB actions the function performs against its grants."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import botocore.client
import pytest
from chat_core.store import memory_items as store

from functions.routes import FUNCTIONS
from tests.support import events
from tests.support.functions import Answer, invoke

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def put(namespace: list[str], key: str, value: Any, *, user: str | None = "alice", **extra: Any) -> Answer:
    body = {"namespace": namespace, "key": key, "value": value, **extra}
    return invoke("memory_items", events.http_event("PUT", "/memory/items", body=body, user=user))


def get(namespace: str, key: str, *, user: str | None = "alice", **query: str) -> Answer:
    event = events.http_event(
        "GET", "/memory/items", query={"namespace": namespace, "key": key, **query}, user=user
    )
    return invoke("memory_items", event)


def delete(namespace: str, key: str, *, user: str | None = "alice") -> Answer:
    event = events.http_event(
        "DELETE", "/memory/items", query={"namespace": namespace, "key": key}, user=user
    )
    return invoke("memory_items", event)


def search(*, user: str | None = "alice", **body: Any) -> Answer:
    event = events.http_event("POST", "/memory/items/search", body=body, user=user)
    return invoke("memory_items", event)


def namespaces(*, user: str | None = "alice", **body: Any) -> Answer:
    event = events.http_event("POST", "/memory/items/namespaces", body=body, user=user)
    return invoke("memory_items", event)


def test_put_get_replace_delete(chat_service: None) -> None:
    """MEM-20: a memory is stored by namespace and key, read back, replaced keeping created_at, deleted."""
    # Given a memory put in alice's namespace
    first = put(["users", "alice"], "food", {"likes": "pizza", "n": 1.5, "tags": ["a", {"b": None}]})
    assert first.status == 200, first.body
    assert first.body["namespace"] == ["users", "alice"]
    assert first.body["created_at"] == first.body["updated_at"]
    assert first.body["ttl"] is None
    assert first.body["expires_at"] is None
    # When it is read
    read = get("users.alice", "food")
    # Then the value comes back exactly
    assert read.status == 200, read.body
    assert read.body["value"] == {"likes": "pizza", "n": 1.5, "tags": ["a", {"b": None}]}
    # When it is replaced
    again = put(["users", "alice"], "food", {"likes": "sushi"})
    # Then its created_at is kept and updated_at moves on
    assert again.body["created_at"] == first.body["created_at"]
    assert again.body["updated_at"] > first.body["updated_at"]
    assert get("users.alice", "food").body["value"] == {"likes": "sushi"}
    # When it is deleted, it is gone at once; deleting again is no error
    assert delete("users.alice", "food").status == 204
    gone = get("users.alice", "food")
    assert gone.status == 404
    assert gone.error_code == "memory_item_not_found"
    assert delete("users.alice", "food").status == 204


def test_keys_and_labels_with_separators_stay_apart(chat_service: None) -> None:
    """MEM-21: labels and keys holding '/', '|', '%' or spaces never reach another namespace's items."""
    # Given memories whose labels and keys hold the sort key's own separators
    assert put(["a/b", "c"], "k|1", {"v": 1}).status == 200
    assert put(["a", "b/c"], "k|1", {"v": 2}).status == 200
    assert put(["a%2Fb", "c"], "k 1/2", {"v": 3}).status == 200
    assert put(["ab"], "x", {"v": 4}).status == 200
    # Then each reads back as its own
    assert get("a/b.c", "k|1").body["value"] == {"v": 1}
    assert get("a.b/c", "k|1").body["value"] == {"v": 2}
    assert get("a%2Fb.c", "k 1/2").body["value"] == {"v": 3}
    # And a prefix catches its own namespaces only ("a" is not "ab", nor "a/b")
    found = search(namespace_prefix=["a"]).body["items"]
    assert [(i["namespace"], i["key"]) for i in found] == [(["a", "b/c"], "k|1")]
    listed = namespaces().body["namespaces"]
    assert listed == [["a", "b/c"], ["a%2Fb", "c"], ["a/b", "c"], ["ab"]]


def test_a_label_is_matched_exactly_whatever_it_holds(chat_service: None) -> None:
    """MEM-21/MEM-26: a namespace label is any text without "." or NUL (as LangGraph's), and it matches
    exactly: a newline, a tab, trailing or leading spaces and other scripts make another label."""
    plain = ["users", "alice"]
    variants = [
        ["users", "alice\n"],
        ["users", "alice "],
        ["users", " alice"],
        ["users", "al\tice"],
        ["users", "アリス"],
    ]
    # Given a memory under the plain label and one under each variant
    assert put(plain, "k", {"v": "plain"}).status == 200
    for n, labels in enumerate(variants):
        assert put(labels, "k", {"v": n}).status == 200, labels
    # Then each reads back as its own (GET joins the labels by "." in the query string)
    assert get("users.alice", "k").body["value"] == {"v": "plain"}
    for n, labels in enumerate(variants):
        assert get(".".join(labels), "k").body["value"] == {"v": n}, labels
    # And a prefix or a suffix of the plain label catches the plain namespace only
    exact = namespaces(prefix=plain).body["namespaces"]
    assert exact == [plain]
    assert namespaces(suffix=["alice"]).body["namespaces"] == [plain]
    assert [i["namespace"] for i in search(namespace_prefix=plain).body["items"]] == [plain]
    assert len(namespaces(prefix=["users"]).body["namespaces"]) == 1 + len(variants)
    # But "." and NUL stay refused
    assert put(["a\x00b"], "k", {}).status == 422
    assert get("a\x00b", "k").status == 400


def test_a_filter_compares_with_infinity_and_nan(chat_service: None) -> None:
    """MEM-22: the numbers JSON cannot write arrive as {"$numberDouble": ...} and compare as LangGraph's
    stores compare them: every number is below infinity and above minus infinity, NaN equals nothing."""
    for key, price in (("a", 10), ("b", 20), ("c", -5)):
        put(["items"], key, {"price": price})
    inf, minus_inf, nan = ({"$numberDouble": s} for s in ("Infinity", "-Infinity", "NaN"))

    def keys(condition: Any) -> list[str]:
        answer = search(namespace_prefix=["items"], filter={"price": condition})
        assert answer.status == 200, answer.body
        return sorted(i["key"] for i in answer.body["items"])

    assert keys({"$lt": inf}) == ["a", "b", "c"]
    assert keys({"$gt": minus_inf}) == ["a", "b", "c"]
    assert keys({"$gte": inf}) == []
    assert keys({"$eq": nan}) == []
    assert keys(nan) == []
    assert keys({"$ne": nan}) == ["a", "b", "c"]
    assert keys({"$gt": nan}) == []
    # A spelling that is not one of the three is refused
    refused = search(namespace_prefix=["items"], filter={"price": {"$lt": {"$numberDouble": "1e400"}}})
    assert refused.status == 400
    assert "$numberDouble" in refused.body["error"]["message"]


def test_search_filter_query_and_paging(chat_service: None) -> None:
    """MEM-22: search under a prefix; a filter (exact and $-operators), a query ranked by term match."""
    ns = ["users", "alice", "memories"]
    put(ns, "1", {"text": "Alice likes sushi and ramen", "kind": "food", "stars": 5})
    put(ns, "2", {"text": "Alice works in Lisbon", "kind": "work", "stars": 3})
    put(ns, "3", {"text": "Ramen is her favourite", "kind": "food", "stars": 4})
    put(["users", "alice", "other"], "4", {"text": "sushi again", "kind": "food", "stars": 1})
    put(["users", "bob"], "5", {"text": "sushi", "kind": "food"})
    put(ns, "6", {"text": "我喜欢寿司", "kind": "food", "stars": 2})
    # Without a query: everything under the prefix, newest first
    every = search(namespace_prefix=["users", "alice"], limit=10).body
    assert [i["key"] for i in every["items"]] == ["6", "4", "3", "2", "1"]
    assert every["truncated"] is False
    assert all(i["score"] is None for i in every["items"])
    # A filter with an operator
    food = search(namespace_prefix=ns, filter={"kind": "food", "stars": {"$gte": 4}}).body["items"]
    assert sorted(i["key"] for i in food) == ["1", "3"]
    # A query: only the values sharing a term, best share first (then newest), case-insensitive
    ranked = search(namespace_prefix=["users", "alice"], query="SUSHI ramen").body["items"]
    assert [i["key"] for i in ranked] == ["1", "4", "3"]
    assert [i["score"] for i in ranked] == [1.0, 0.5, 0.5]
    # Chinese without spaces matches character by character
    assert [i["key"] for i in search(namespace_prefix=ns, query="寿司").body["items"]] == ["6"]
    # Paging
    page = search(namespace_prefix=["users"], limit=2, offset=1).body["items"]
    assert [i["key"] for i in page] == ["5", "4"]


def test_namespaces_prefix_suffix_depth(chat_service: None) -> None:
    """MEM-23: list the namespaces in use, by prefix and suffix ('*' any label), cut to max_depth."""
    for ns in (["users", "alice", "v1"], ["users", "bob", "v1"], ["users", "bob", "v2"], ["docs", "x"]):
        assert put(ns, "k", {"v": 1}).status == 200
    assert namespaces().body["namespaces"] == [
        ["docs", "x"],
        ["users", "alice", "v1"],
        ["users", "bob", "v1"],
        ["users", "bob", "v2"],
    ]
    assert namespaces(prefix=["users"], max_depth=2).body["namespaces"] == [
        ["users", "alice"],
        ["users", "bob"],
    ]
    assert namespaces(suffix=["v1"]).body["namespaces"] == [["users", "alice", "v1"], ["users", "bob", "v1"]]
    assert namespaces(prefix=["*", "bob"]).body["namespaces"] == [
        ["users", "bob", "v1"],
        ["users", "bob", "v2"],
    ]
    assert namespaces(limit=1, offset=1).body["namespaces"] == [["users", "alice", "v1"]]


def test_ttl_expires_and_refreshes(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEM-24: a memory with a TTL (minutes) carries the table's TTL attribute, is absent once expired
    (before DynamoDB purges it), and a read pushes its expiry back."""
    # Given a memory with a 10-minute TTL
    stored = put(["s"], "k", {"v": 1}, ttl=10)
    assert stored.body["ttl"] == 10
    expires = store.get("alice", ("s",), "k")
    assert expires is not None
    assert expires.expires_at is not None
    assert abs(expires.expires_at - (time.time() + 600)) < 5
    # When time passes 5 minutes and it is read, its expiry moves to 10 minutes from then
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 300)
    assert get("s", "k").status == 200
    refreshed = store.get("alice", ("s",), "k")
    assert refreshed is not None
    assert refreshed.expires_at is not None
    assert refreshed.expires_at >= expires.expires_at + 290
    # When read without refresh after its expiry, it is gone everywhere
    monkeypatch.setattr(time, "time", lambda: real() + 300 + 700)
    assert get("s", "k", refresh_ttl="false").status == 404
    assert search(namespace_prefix=["s"]).body["items"] == []
    assert namespaces().body["namespaces"] == []
    # And putting it again starts it anew (a new created_at), without a TTL now
    anew = put(["s"], "k", {"v": 2})
    assert anew.body["created_at"] > stored.body["created_at"]
    assert anew.body["expires_at"] is None


def test_owners_are_isolated(chat_service: None) -> None:
    """MEM-25: each caller sees only their own memories, whatever the namespace says; no identity 401."""
    put(["users", "alice"], "secret", {"pin": "1234"})
    assert get("users.alice", "secret", user="bob").status == 404
    assert search(user="bob").body["items"] == []
    assert namespaces(user="bob").body["namespaces"] == []
    assert delete("users.alice", "secret", user="bob").status == 204
    assert get("users.alice", "secret").status == 200
    # An owner whose id holds '#' cannot reach another owner's partition
    put(["n"], "k", {"v": "alice#"}, user="alice#MEMKV")
    assert search(user="alice").body["items"][0]["value"] == {"pin": "1234"}
    assert len(search(user="alice").body["items"]) == 1
    for answer in (
        put(["n"], "k", {}, user=None),
        get("n", "k", user=None),
        delete("n", "k", user=None),
        search(user=None),
        namespaces(user=None),
    ):
        assert answer.status == 401


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"namespace": [], "key": "k", "value": {}}, 422),
        ({"namespace": ["a.b"], "key": "k", "value": {}}, 422),
        ({"namespace": ["a"], "key": "", "value": {}}, 422),
        ({"namespace": ["a"], "key": "k", "value": [1]}, 422),
        ({"namespace": ["a"], "key": "k", "value": "text"}, 422),
        ({"namespace": ["a"], "key": "k", "value": {}, "ttl": 0}, 422),
        ({"namespace": ["a"], "key": "k", "value": {}, "extra": 1}, 422),
        ({"namespace": ["a"] * 11, "key": "k", "value": {}}, 422),
        ({"namespace": ["a" * 129], "key": "k", "value": {}}, 422),
        ({"namespace": ["a"], "key": "k", "value": {"big": "x" * 70_000}}, 413),
        ({"namespace": ["é" * 128] * 4, "key": "k" * 500, "value": {}}, 400),
    ],
)
def test_bad_input_is_a_clear_4xx(chat_service: None, body: dict[str, Any], status: int) -> None:
    """MEM-26: bad namespaces, keys, values and TTLs are refused before any write."""
    answer = invoke("memory_items", events.http_event("PUT", "/memory/items", body=body))
    assert answer.status == status, answer.body
    assert answer.body["error"]["message"]
    assert search().body["items"] == []


def test_bad_search_and_lookup_input(chat_service: None) -> None:
    """MEM-26: a search's limit, offset, query and filter operators, a lookup's namespace are checked."""
    assert search(limit=0).status == 422
    assert search(limit=101).status == 422
    assert search(offset=-1).status == 422
    assert search(query="").status == 422
    assert search(query="x" * 1001).status == 422
    refused = search(filter={"stars": {"$gtx": 1}})
    assert refused.status == 400
    assert "$gtx" in refused.body["error"]["message"]
    assert search(query="!!!").status == 400
    assert get("a..b", "k").status == 400
    assert get("a", "k\x01").status == 400
    assert namespaces(max_depth=0).status == 422


def test_the_function_uses_only_what_it_is_granted(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPS-1: every DynamoDB action the memory routes perform is in the function's grants."""
    calls: dict[str, int] = defaultdict(int)
    original = botocore.client.BaseClient._make_api_call

    def record(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if self.meta.service_model.service_name == "dynamodb":
            calls[operation] += 1
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    put(["a"], "k", {"v": "x"}, ttl=5)
    get("a", "k")
    search(namespace_prefix=["a"], query="x")
    namespaces(prefix=["a"])
    delete("a", "k")
    granted = next(f for f in FUNCTIONS if f.folder == "memory_items").granted("dynamodb")
    assert set(calls) <= granted, sorted(set(calls) - granted)
    assert set(calls) == {"UpdateItem", "GetItem", "Query", "DeleteItem"}
