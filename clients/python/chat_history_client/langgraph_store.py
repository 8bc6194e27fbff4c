"""`ChatHistoryStore`: LangGraph's long-term memory store (`BaseStore`) kept by Chat History Service
(MEM-27; extra `[langgraph]`).

    from chat_history_client.langgraph_store import ChatHistoryStore

    store = ChatHistoryStore(base_url="http://127.0.0.1:3000", user_id="alice")   # or token=<JWT>
    store.put(("users", "alice", "memories"), "food", {"text": "Likes sushi"})
    store.search(("users", "alice"), query="sushi")
    graph = builder.compile(store=store)      # nodes reach it through their Runtime / get_store()

Every operation is one request to the memory item routes (PUT/GET/DELETE /memory/items, POST
/memory/items/search and /memory/items/namespaces), as the caller's identity: memories are per user,
whatever the namespace says. `query` is matched by terms (no embeddings): each result's `score` is the
share of the query's terms its value holds. TTLs are in minutes, as LangGraph counts them. A namespace
label is matched exactly, whatever it holds (a newline, trailing spaces, any script); a filter may
compare with infinity or NaN, as with LangGraph's own stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from chat_history_client import _memory_calls
from chat_history_client.client import DEFAULT_BASE_URL, AsyncChatHistoryClient, ChatHistoryClient


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _item(body: dict[str, Any]) -> Item:
    return Item(
        value=body["value"],
        key=body["key"],
        namespace=tuple(body["namespace"]),
        created_at=_time(body["created_at"]),
        updated_at=_time(body["updated_at"]),
    )


def _search_item(body: dict[str, Any]) -> SearchItem:
    return SearchItem(
        namespace=tuple(body["namespace"]),
        key=body["key"],
        value=body["value"],
        created_at=_time(body["created_at"]),
        updated_at=_time(body["updated_at"]),
        score=body.get("score"),
    )


def _check_labels(labels: Sequence[object]) -> None:
    """LangGraph's rule for a label (a non-empty string without "." or NUL), checked here too because ops
    given straight to `batch` skip BaseStore's own check, and GET / DELETE send a namespace as its labels
    joined by ".": ("a.b",) must not reach ("a", "b")."""
    for label in labels:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {tuple(labels)!r}: labels are non-empty strings "
                "without '.' or NUL"
            )


def _check_namespaces(ops: list[Op]) -> None:
    """Every op's labels, before any request is sent: a bad op fails its whole batch, and nothing of it
    is done."""
    for op in ops:
        if isinstance(op, GetOp | PutOp):
            _check_labels(op.namespace)
        elif isinstance(op, SearchOp):
            _check_labels(op.namespace_prefix)
        elif isinstance(op, ListNamespacesOp):
            for condition in op.match_conditions or ():
                _check_labels(condition.path)


def _conditions(op: ListNamespacesOp) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    prefix: tuple[str, ...] | None = None
    suffix: tuple[str, ...] | None = None
    for condition in op.match_conditions or ():
        if condition.match_type == "prefix" and prefix is None:
            prefix = tuple(condition.path)
        elif condition.match_type == "suffix" and suffix is None:
            suffix = tuple(condition.path)
        else:
            raise ValueError("the store takes at most one prefix and one suffix condition")
    return prefix, suffix


class ChatHistoryStore(BaseStore):
    """A LangGraph `BaseStore` over the service's memory item routes. Pass `client` (a
    `ChatHistoryClient`) or `base_url` with `token` / `user_id`; `async_client` serves `abatch` (one is
    made from the same settings when not given). `ttl` is LangGraph's TTLConfig (`default_ttl` minutes,
    `refresh_on_read`)."""

    supports_ttl = True

    def __init__(
        self,
        client: ChatHistoryClient | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        token: str | None = None,
        user_id: str | None = None,
        async_client: AsyncChatHistoryClient | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if client is None and async_client is None and token is None and user_id is None:
            raise ValueError("pass client=, or token= (a JWT, deployed) or user_id= (the local server)")
        self._base_url, self._token, self._user_id = base_url, token, user_id
        self._client = client
        self._async_client = async_client
        self._own: list[ChatHistoryClient | AsyncChatHistoryClient] = []
        self.ttl_config = ttl

    @property
    def client(self) -> ChatHistoryClient:
        if self._client is None:
            self._client = ChatHistoryClient(self._base_url, token=self._token, user_id=self._user_id)
            self._own.append(self._client)
        return self._client

    @property
    def async_client(self) -> AsyncChatHistoryClient:
        if self._async_client is None:
            self._async_client = AsyncChatHistoryClient(
                self._base_url, token=self._token, user_id=self._user_id
            )
            self._own.append(self._async_client)
        return self._async_client

    def close(self) -> None:
        """Close the clients this store made (a given client is left to its owner)."""
        for client in self._own:
            client.close()
        self._own.clear()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order, one request each; results in the same order. InvalidNamespaceError, and
        nothing sent, when a label of any of them is not one."""
        ops = list(ops)
        _check_namespaces(ops)
        results: list[Result] = []
        for op in ops:
            call, parse = self._call(op)
            results.append(parse(self.client.send(call)))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch`, awaited (on the async client's own connections)."""
        ops = list(ops)
        _check_namespaces(ops)
        results: list[Result] = []
        for op in ops:
            call, parse = self._call(op)
            results.append(parse(await self.async_client.send(call)))
        return results

    def _call(self, op: Op) -> tuple[Any, Any]:
        """The request for one operation, and how its answer becomes LangGraph's result."""
        if isinstance(op, GetOp):
            call = _memory_calls.get_item(op.namespace, op.key, refresh_ttl=op.refresh_ttl)
            return call, lambda body: _item(body) if body is not None else None
        if isinstance(op, PutOp):
            if op.value is None:
                return _memory_calls.delete_item(op.namespace, op.key), lambda _: None
            call = _memory_calls.put_item(op.namespace, op.key, op.value, op.ttl)
            return call, lambda _: None
        if isinstance(op, SearchOp):
            call = _memory_calls.search_items(
                op.namespace_prefix,
                query=op.query,
                filter=op.filter,
                limit=op.limit,
                offset=op.offset,
                refresh_ttl=op.refresh_ttl,
            )
            return call, lambda body: [_search_item(item) for item in body["items"]]
        if isinstance(op, ListNamespacesOp):
            prefix, suffix = _conditions(op)
            call = _memory_calls.list_namespaces(
                prefix=prefix, suffix=suffix, max_depth=op.max_depth, limit=op.limit, offset=op.offset
            )
            return call, lambda body: [tuple(namespace) for namespace in body["namespaces"]]
        raise TypeError(f"unknown store operation {type(op).__name__}")


__all__ = ["ChatHistoryStore"]
