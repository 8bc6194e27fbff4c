"""The memory routes as `Call`s (MEM-20..23, GET /memory/search, GET/DELETE /memory): the items by
namespace and key that `ChatHistoryStore` (LangGraph) sends, the search over the caller's conversations
(the MCP server's `search_memory` tool and the clients' `search_memory`), and the long-term facts. No I/O
here."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from chat_history_client._calls import Call
from chat_history_client.types import Page

#: Namespace labels are joined by "." in a query string (labels hold none, as LangGraph requires).
SEPARATOR = "."
#: The number JSON cannot write, as the service reads it in a filter (MongoDB's Extended JSON spelling).
NUMBER_DOUBLE = "$numberDouble"


def filter_json(value: Any) -> Any:
    """A search filter as JSON can carry it: infinities and NaN (which LangGraph's stores compare with)
    become {"$numberDouble": "Infinity" | "-Infinity" | "NaN"}, everything else as it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return {NUMBER_DOUBLE: "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    if isinstance(value, Mapping):
        return {key: filter_json(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [filter_json(inner) for inner in value]
    return value


def _body(body: Any) -> Any:
    return body


def _nothing(_: Any) -> None:
    return None


def put_item(namespace: Sequence[str], key: str, value: Mapping[str, Any], ttl: float | None) -> Call[Any]:
    body = {"namespace": list(namespace), "key": key, "value": dict(value), "ttl": ttl}
    return Call("PUT", "/memory/items", _body, json=body)


def get_item(namespace: Sequence[str], key: str, *, refresh_ttl: bool = True) -> Call[Any]:
    params = {"namespace": SEPARATOR.join(namespace), "key": key, "refresh_ttl": str(refresh_ttl).lower()}
    return Call("GET", "/memory/items", _body, params=params, missing_ok=True)


def delete_item(namespace: Sequence[str], key: str) -> Call[None]:
    params = {"namespace": SEPARATOR.join(namespace), "key": key}
    return Call("DELETE", "/memory/items", _nothing, params=params)


def search_items(
    namespace_prefix: Sequence[str],
    *,
    query: str | None,
    filter: dict[str, Any] | None,
    limit: int,
    offset: int,
    refresh_ttl: bool,
) -> Call[Any]:
    body: dict[str, Any] = {
        "namespace_prefix": list(namespace_prefix),
        "limit": limit,
        "offset": offset,
        "refresh_ttl": refresh_ttl,
    }
    if query is not None:
        body["query"] = query
    if filter:
        body["filter"] = filter_json(filter)
    return Call("POST", "/memory/items/search", _body, json=body)


def list_namespaces(
    *,
    prefix: Sequence[str] | None,
    suffix: Sequence[str] | None,
    max_depth: int | None,
    limit: int,
    offset: int,
) -> Call[Any]:
    body: dict[str, Any] = {"limit": limit, "offset": offset}
    if prefix:
        body["prefix"] = list(prefix)
    if suffix:
        body["suffix"] = list(suffix)
    if max_depth is not None:
        body["max_depth"] = max_depth
    return Call("POST", "/memory/items/namespaces", _body, json=body)


def search_memory(query: str, *, limit: int, conversation_id: str | None) -> Call[Any]:
    """GET /memory/search: the caller's messages (all their conversations, or one) relevant to `query`."""
    params: dict[str, Any] = {"q": query, "limit": limit}
    if conversation_id is not None:
        params["conversation_id"] = conversation_id
    return Call("GET", "/memory/search", _body, params=params)


def list_facts(
    *, limit: int, cursor: str | None, conversation_id: str | None, include_superseded: bool
) -> Call[Page[dict[str, Any]]]:
    """GET /memory: the caller's long-term facts (MEM-32), newest first, a page at a time."""
    params: dict[str, Any] = {"limit": limit, "include_superseded": str(include_superseded).lower()}
    if cursor is not None:
        params["cursor"] = cursor
    if conversation_id is not None:
        params["conversation_id"] = conversation_id

    def parse(body: Any) -> Page[dict[str, Any]]:
        return Page(list(body.get("facts") or []), body.get("next_cursor"))

    return Call("GET", "/memory", parse, params=params)


def delete_fact(fact_id: str) -> Call[None]:
    """DELETE /memory/{fact_id}: the fact and the versions it superseded, for good (MEM-33)."""
    return Call("DELETE", f"/memory/{quote(fact_id, safe='')}", _nothing)
