"""The golden scenario, memory items (MEM-20..26): put, get, search, namespaces and delete by namespace
and key, with their typical errors (see test_golden_answers.py)."""

from __future__ import annotations

from tests.golden.recording import BOB, Recorder


def memory_items(rec: Recorder) -> None:
    rec.family = "memory_items"
    namespace = ["users", "alice", "memories"]
    rec.call(
        "PUT",
        "/memory/items",
        "a memory with a TTL",
        json_body={"namespace": namespace, "key": "food", "value": {"text": "Likes sushi"}, "ttl": 60},
    )
    rec.call(
        "PUT",
        "/memory/items",
        "a second memory, no TTL",
        json_body={"namespace": namespace, "key": "city", "value": {"text": "Lives in Lisbon", "n": 2}},
    )
    rec.call(
        "PUT",
        "/memory/items",
        "a value that is not an object: 422",
        json_body={"namespace": namespace, "key": "k", "value": [1]},
    )
    rec.call(
        "PUT",
        "/memory/items",
        "no identity: 401",
        user=None,
        json_body={"namespace": namespace, "key": "k", "value": {}},
    )
    params = {"namespace": "users.alice.memories", "key": "city"}
    rec.call("GET", "/memory/items", "read back", params=params)
    rec.call("GET", "/memory/items", "another user's: 404", params=params, user=BOB)
    rec.call("GET", "/memory/items", "an empty label: 400", params={"namespace": "users..x", "key": "k"})
    rec.call(
        "POST",
        "/memory/items/search",
        "a query under a prefix",
        json_body={"namespace_prefix": ["users", "alice"], "query": "sushi", "limit": 5},
    )
    rec.call(
        "POST",
        "/memory/items/search",
        "a filter, newest first",
        json_body={"namespace_prefix": ["users"], "filter": {"n": {"$gte": 2}}},
    )
    rec.call(
        "POST", "/memory/items/search", "an unknown operator: 400", json_body={"filter": {"n": {"$gtx": 1}}}
    )
    rec.call(
        "POST",
        "/memory/items/namespaces",
        "namespaces cut to a depth",
        json_body={"prefix": ["users"], "max_depth": 2},
    )
    rec.call("POST", "/memory/items/namespaces", "a limit of 0: 422", json_body={"limit": 0})
    rec.call("DELETE", "/memory/items", "delete", params=params)
    rec.call("DELETE", "/memory/items", "delete again: still 204", params=params)
    rec.call("GET", "/memory/items", "deleted: 404", params=params)
