"""Memory items (MEM-20..29), LangGraph's store over HTTP: PUT /memory/items, GET and DELETE
/memory/items?namespace=&key=, POST /memory/items/search, POST /memory/items/namespaces."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat import memory_kv as memory_items
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.memory_schemas import MemoryNamespacesIn, MemoryPutIn, MemorySearchIn
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()

_NAMESPACE = "The namespace's labels joined by '.', e.g. users.alice"
_MAX_NAMESPACE_CHARS = (memory_items.MAX_LABEL_CHARS + 1) * memory_items.MAX_DEPTH


@app.put("/memory/items")
def put_item(body: MemoryPutIn) -> Response[Any]:
    item = memory_items.put_item(caller(app), body.namespace, body.key, body.value, body.ttl)
    return json_response(200, item)


@app.get("/memory/items")
def get_item(
    namespace: Annotated[str, Query(min_length=1, max_length=_MAX_NAMESPACE_CHARS, description=_NAMESPACE)],
    key: Annotated[str, Query(min_length=1, max_length=memory_items.MAX_KEY_CHARS)],
    refresh_ttl: Annotated[bool, Query(description="Push back the expiry of a memory with a TTL")] = True,
) -> Response[Any]:
    return json_response(200, memory_items.get_item(caller(app), namespace, key, refresh_ttl=refresh_ttl))


@app.delete("/memory/items")
def delete_item(
    namespace: Annotated[str, Query(min_length=1, max_length=_MAX_NAMESPACE_CHARS, description=_NAMESPACE)],
    key: Annotated[str, Query(min_length=1, max_length=memory_items.MAX_KEY_CHARS)],
) -> Response[Any]:
    memory_items.delete_item(caller(app), namespace, key)
    return json_response(204, None)


@app.post("/memory/items/search")
def search(body: MemorySearchIn) -> Response[Any]:
    answer = memory_items.search(
        caller(app),
        body.namespace_prefix,
        query=body.query,
        filter=body.filter,
        limit=body.limit,
        offset=body.offset,
        refresh_ttl=body.refresh_ttl,
    )
    return json_response(200, answer)


@app.post("/memory/items/namespaces")
def list_namespaces(body: MemoryNamespacesIn) -> Response[Any]:
    answer = memory_items.list_namespaces(
        caller(app),
        prefix=body.prefix,
        suffix=body.suffix,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return json_response(200, answer)


lambda_handler = http_entry(app)
