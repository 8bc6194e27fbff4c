"""`ChatHistoryClient` and `AsyncChatHistoryClient`: the HTTP API over httpx, the same methods in both
(the async one's are awaited). Both may be shared by threads; the async one may be awaited from any event
loop, one after another or at once (its own connections live on a loop of their own, see `_background`).
Every POST carries an Idempotency-Key, kept across retries, so a retried
post never asks the model twice; 429, 503 and a busy conversation are retried honouring Retry-After."""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx

from chat_history_client import _background, _calls, _memory_calls, _user_data_calls
from chat_history_client._calls import Call, Policy, T
from chat_history_client.errors import TransportError
from chat_history_client.types import (
    Conversation,
    ErasureReceipt,
    Message,
    Page,
    PostResult,
    UserExport,
    UserImport,
)

DEFAULT_BASE_URL = "http://127.0.0.1:3000"


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CAs, or SSL_CERT_FILE / SSL_CERT_DIR where set), made once
    per process and those two variables: httpx loads the CA bundle for every client it makes (tens of ms of
    CPU), and an application may make a client per request or per LangChain history."""
    return httpx.create_ssl_context()


def _verify() -> ssl.SSLContext:
    return _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


class ChatHistoryClient:
    """The API, synchronously. Pass `token` (a JWT; deployed) or `user_id` (the local server's dev
    mode). Use as a context manager, or call `close()`. One client may serve many threads at once (it
    keeps no state of its own besides httpx's connection pool, which is thread-safe)."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        token: str | None = None,
        user_id: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.25,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._policy = Policy(
            base_url, token=token, user_id=user_id, max_retries=max_retries, backoff=backoff
        )
        self._http = http_client or httpx.Client(timeout=timeout, verify=_verify())

    def __enter__(self) -> ChatHistoryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[T]) -> T:
        """Send one call (retrying what may be retried) and return its parsed result."""
        policy = self._policy
        request = policy.request(call)
        attempt = 0
        while True:
            try:
                response = self._http.request(**request)
            except httpx.TransportError as exc:
                if attempt >= policy.max_retries:
                    raise TransportError(f"{call.method} {call.path}: {exc}") from exc
                time.sleep(policy.pause(attempt))
                attempt += 1
                continue
            wait = policy.retry_after(response, attempt)
            if wait is None:
                return policy.result(call, response)
            time.sleep(wait)
            attempt += 1

    # Conversations

    def create_conversation(self, *, key: str | None = None, **settings: Any) -> Conversation:
        """A new empty conversation; `key` (optional) names it for `conversation_for_key`."""
        return self.send(_calls.create_conversation(key, settings))

    def conversation_for_key(self, key: str, **settings: Any) -> Conversation:
        """The caller's conversation named `key`, created (with `settings`) when there is none."""
        return self.send(_calls.conversation_for_key(key, settings))

    def find_conversation(self, key: str) -> Conversation | None:
        """The caller's conversation named `key`, or None."""
        return self.send(_calls.find_conversation(key))

    def get_conversation(self, conversation_id: str) -> Conversation:
        return self.send(_calls.get_conversation(conversation_id))

    def update_conversation(self, conversation_id: str, **fields: Any) -> Conversation:
        return self.send(_calls.update_conversation(conversation_id, fields))

    def delete_conversation(self, conversation_id: str, *, missing_ok: bool = False) -> None:
        self.send(_calls.delete_conversation(conversation_id, missing_ok=missing_ok))

    def list_conversations(self, *, limit: int = 20, cursor: str | None = None) -> Page[Conversation]:
        return self.send(_calls.list_conversations(limit, cursor))

    def iter_conversations(self, *, page_size: int = 100) -> Iterator[Conversation]:
        """Every conversation, newest first, page by page."""
        cursor = None
        while True:
            page = self.list_conversations(limit=page_size, cursor=cursor)
            yield from page.items
            if not (cursor := page.next_cursor):
                return

    # Messages

    def messages(self, conversation_id: str, *, limit: int = 100, cursor: str | None = None) -> Page[Message]:
        """One page of the active path, oldest first."""
        return self.send(_calls.messages(conversation_id, limit, cursor))

    def iter_messages(self, conversation_id: str, *, page_size: int = 200) -> Iterator[Message]:
        """Every message of the active path, oldest first, page by page."""
        cursor = None
        while True:
            page = self.messages(conversation_id, limit=page_size, cursor=cursor)
            yield from page.items
            if not (cursor := page.next_cursor):
                return

    def post_message(self, content: Any, conversation_id: str | None = None, **settings: Any) -> PostResult:
        """Ask the model: the question and its answer are stored (a new conversation without an id)."""
        return self.send(_calls.post_message(content, conversation_id, settings))

    def append_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> list[Message]:
        """Store messages as given, without the model (at most 30 a call, written together)."""
        return self.send(_calls.append_messages(conversation_id, messages))

    def delete_message(self, conversation_id: str, message_id: str) -> list[Message]:
        """Take a message (and its tool calls' results) off the active path; what was removed."""
        return self.send(_calls.delete_message(conversation_id, message_id))

    def edit_message(
        self, conversation_id: str, message_id: str, content: Any, **settings: Any
    ) -> PostResult:
        return self.send(_calls.edit_message(conversation_id, message_id, content, settings))

    def regenerate_message(self, conversation_id: str, message_id: str, **settings: Any) -> PostResult:
        return self.send(_calls.regenerate_message(conversation_id, message_id, settings))

    def set_active(self, conversation_id: str, message_id: str) -> Conversation:
        return self.send(_calls.set_active(conversation_id, message_id))

    def tree(self, conversation_id: str, *, limit: int = 100, cursor: str | None = None) -> Page[Message]:
        return self.send(_calls.tree(conversation_id, limit, cursor))

    def window(self, conversation_id: str, content: Any, **settings: Any) -> dict[str, Any]:
        """What a post of `content` would send the model, message by message (nothing is written)."""
        return self.send(_calls.window(conversation_id, content, settings))

    def usage(
        self, *, first: str | None = None, last: str | None = None, user: str | None = None
    ) -> dict[str, Any]:
        """GET /usage: tokens and cost per UTC day (YYYY-MM-DD) and model, and the budget (COST-3)."""
        return self.send(_calls.usage(first, last, user))

    def set_budget(self, user: str, **limits: Any) -> dict[str, Any]:
        """PUT /budgets/{user}: `daily_tokens`, `daily_usd`, `monthly_tokens`, `monthly_usd` (None: no
        limit); administrators only (COST-4)."""
        return self.send(_calls.set_budget(user, limits))

    def search_memory(
        self, query: str, *, limit: int = 10, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        """GET /memory/search (MEM-11): the caller's messages relevant to `query`, best first, across their
        conversations or in one (`conversation_id`): each `{conversation_id, message_id, seq, role,
        snippet, score, created_at}`."""
        body = self.send(_memory_calls.search_memory(query, limit=limit, conversation_id=conversation_id))
        return list(body.get("results") or [])

    def memory_facts(
        self,
        *,
        limit: int = 20,
        cursor: str | None = None,
        conversation_id: str | None = None,
        include_superseded: bool = False,
    ) -> Page[dict[str, Any]]:
        """GET /memory (MEM-32): one page of the caller's long-term facts, newest first."""
        return self.send(
            _memory_calls.list_facts(
                limit=limit,
                cursor=cursor,
                conversation_id=conversation_id,
                include_superseded=include_superseded,
            )
        )

    def iter_memory_facts(
        self, *, page_size: int = 100, include_superseded: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Every fact of the caller, page after page."""
        cursor = None
        while True:
            page = self.memory_facts(limit=page_size, cursor=cursor, include_superseded=include_superseded)
            yield from page.items
            if not (cursor := page.next_cursor):
                return

    def delete_memory_fact(self, fact_id: str) -> None:
        """DELETE /memory/{fact_id} (MEM-33): the fact and the versions it superseded, for good."""
        self.send(_memory_calls.delete_fact(fact_id))

    # A user's data as a whole (PRV-1, PRV-2): `user_id` None is the caller (X-User-Id, or the JWT's sub)

    def export_user_data(
        self, user_id: str | None = None, *, wait: bool = True, timeout: float = 600.0
    ) -> UserExport:
        """POST /users/{user_id}/exports (PRV-2): a new export of everything the user owns; with `wait`,
        its state is read until it is done (JobNotDone after `timeout` seconds), with the archive's
        presigned `url`. `download_user_export` / `read_user_export` fetch the archive."""
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        job = self.send(_user_data_calls.request_export(owner))
        return self.wait_user_export(job, timeout=timeout) if wait else job

    def get_user_export(self, export_id: str, user_id: str | None = None) -> UserExport:
        """GET /users/{user_id}/exports/{export_id}: its state; once done, a fresh presigned URL."""
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        return self.send(_user_data_calls.get_export(owner, export_id))

    def wait_user_export(self, export: UserExport, *, timeout: float = 600.0) -> UserExport:
        waiting = _user_data_calls.Waiting(timeout, f"export {export.export_id}")
        while not export.done:
            time.sleep(waiting.next_pause(export))
            export = self.get_user_export(export.export_id, export.user_id)
        return export

    def download_user_export(self, export: UserExport, path: str | os.PathLike[str]) -> Path:
        """The archive (gzip JSON) of a done export written to `path`."""
        target = Path(path)
        target.write_bytes(self._archive_bytes(export))
        return target

    def read_user_export(self, export: UserExport) -> dict[str, Any]:
        """The archive of a done export, read: `{"format": "chat-history.user-export", "version": 1,
        "conversations": [...], ...}` (docs/schemas/user-export.v1.json)."""
        return _user_data_calls.read_archive(self._archive_bytes(export))

    def _archive_bytes(self, export: UserExport) -> bytes:
        if not export.url:
            raise ValueError(f"export {export.export_id} is {export.status!r}: no archive yet")
        try:
            # A presigned URL carries its own authority: no API headers go with it.
            response = self._http.get(export.url)
        except httpx.TransportError as exc:
            raise TransportError(f"GET the archive of export {export.export_id}: {exc}") from exc
        if response.status_code != 200:
            raise TransportError(f"the archive's URL answered {response.status_code} (expired? ask again)")
        return response.content

    def erase_user_data(
        self,
        user_id: str | None = None,
        *,
        confirm: str | None = None,
        wait: bool = True,
        timeout: float = 900.0,
    ) -> ErasureReceipt:
        """POST /users/{user_id}/erasure (PRV-1): erase everything the user owns, for good. `confirm`
        must be the user id typed again (ValueError otherwise, and nothing is sent). With `wait`, the job
        is read until done and its receipt returned (JobNotDone after `timeout` seconds; deployed, the
        last pass runs ERASURE_SETTLE_SECONDS after the first)."""
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        _user_data_calls.check_confirmation(owner, confirm)
        receipt = self.send(_user_data_calls.request_erasure(owner))
        if not wait:
            return receipt
        waiting = _user_data_calls.Waiting(timeout, f"the erasure of {owner}")
        while not receipt.done:
            time.sleep(waiting.next_pause(receipt))
            receipt = self.get_user_erasure(owner)
        return receipt

    def get_user_erasure(self, user_id: str | None = None) -> ErasureReceipt:
        """GET /users/{user_id}/erasure: the erasure's progress, or its receipt once done."""
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        return self.send(_user_data_calls.get_erasure(owner))

    def import_user_data(
        self,
        source: bytes | str | os.PathLike[str],
        user_id: str | None = None,
        *,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> UserImport:
        """POST /users/{user_id}/imports, the file PUT to its presigned URL, then .../start (PRV-3): our
        export archive or ChatGPT's export (its zip, or `conversations.json`), as bytes or a path. With
        `wait`, the job is read until it is done and returned with `conversation_ids`; a refused file
        raises ImportFailed (nothing of it was written), JobNotDone after `timeout` seconds."""
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        data = _user_data_calls.file_bytes(source)
        job = self.send(_user_data_calls.request_import(owner))
        try:
            response = self._http.request(**_user_data_calls.upload_request(job, data))
        except httpx.TransportError as exc:
            raise TransportError(f"PUT the file of import {job.import_id}: {exc}") from exc
        if response.status_code != 200:
            raise TransportError(f"the upload URL answered {response.status_code} (expired? start again)")
        job = self.send(_user_data_calls.start_import(owner, job.import_id))
        if not wait:
            return job
        waiting = _user_data_calls.Waiting(timeout, f"import {job.import_id}")
        while not job.done:
            time.sleep(waiting.next_pause(job))
            job = self.get_user_import(job.import_id, owner)
        return _user_data_calls.finished_import(job)

    def get_user_import(self, import_id: str, user_id: str | None = None) -> UserImport:
        """GET /users/{user_id}/imports/{import_id}: its status and progress."""
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        return self.send(_user_data_calls.get_import(owner, import_id))


#: The async client's own connections: at most this many calls in flight, each on a kept-alive connection.
_OWN_CONNECTIONS = 20
_OWN_LIMITS = httpx.Limits(max_connections=_OWN_CONNECTIONS, max_keepalive_connections=_OWN_CONNECTIONS)


class AsyncChatHistoryClient:
    """`ChatHistoryClient` for asyncio: the same methods, awaited; `iter_*` are async iterators. It may be
    awaited from any event loop on any thread: its own connections live on the client loop (see
    `_background`), never on a caller's loop that `asyncio.run` may close. A given `http_client` is used
    as given, in the caller's loop (its owner binds it to one)."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        token: str | None = None,
        user_id: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.25,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._policy = Policy(
            base_url, token=token, user_id=user_id, max_retries=max_retries, backoff=backoff
        )
        self._given = http_client
        self._timeout = timeout
        self._http: httpx.AsyncClient | None = None
        self._http_pid = 0
        self._slots: asyncio.Semaphore  # made with `_http`, by the process and loop that use it
        self._closed = False

    async def __aenter__(self) -> AsyncChatHistoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's connections (and a given `http_client`); later calls are refused."""
        self._closed = True
        if self._given is not None:
            await self._given.aclose()
        elif self._http is not None:
            await _background.run(self._close_own())

    def close(self) -> None:
        """`aclose()` without awaiting, from synchronous code or any thread (a given `http_client`, bound
        to its owner's loop, is left to its owner)."""
        self._closed = True
        if self._given is None and self._http is not None:
            _background.wait(self._close_own(), timeout=10.0)

    async def _close_own(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def _request(self, request: dict[str, Any]) -> httpx.Response:
        """One HTTP exchange: on a given `http_client` in the caller's loop (as its owner set it up), else
        on the client's own connections, on the client loop."""
        if self._given is not None:
            return await self._given.request(**request)
        return await _background.run(self._own_request(request))

    async def _own_request(self, request: dict[str, Any]) -> httpx.Response:
        # Runs on the client loop only, so the connection pool is made and used by one thread.
        if self._closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        if self._http is None or self._http_pid != os.getpid():  # a forked child makes its own
            self._http = httpx.AsyncClient(timeout=self._timeout, limits=_OWN_LIMITS, verify=_verify())
            self._slots = asyncio.Semaphore(_OWN_CONNECTIONS)
            self._http_pid = os.getpid()
        # Calls beyond the pool's connections wait here, in arrival order, and each then finds a kept-alive
        # connection free: httpx's own queue rescans every waiting request on each release (hundreds
        # gathered at once spent more CPU there than on their answers), and its default 100 connections
        # outnumber the 20 it keeps alive, so a burst reconnected most of them for every call.
        async with self._slots:
            return await self._http.request(**request)

    async def send(self, call: Call[T]) -> T:
        policy = self._policy
        request = policy.request(call)
        attempt = 0
        while True:
            try:
                response = await self._request(request)
            except httpx.TransportError as exc:
                if attempt >= policy.max_retries:
                    raise TransportError(f"{call.method} {call.path}: {exc}") from exc
                await asyncio.sleep(policy.pause(attempt))
                attempt += 1
                continue
            wait = policy.retry_after(response, attempt)
            if wait is None:
                return policy.result(call, response)
            await asyncio.sleep(wait)
            attempt += 1

    async def create_conversation(self, *, key: str | None = None, **settings: Any) -> Conversation:
        return await self.send(_calls.create_conversation(key, settings))

    async def conversation_for_key(self, key: str, **settings: Any) -> Conversation:
        return await self.send(_calls.conversation_for_key(key, settings))

    async def find_conversation(self, key: str) -> Conversation | None:
        return await self.send(_calls.find_conversation(key))

    async def get_conversation(self, conversation_id: str) -> Conversation:
        return await self.send(_calls.get_conversation(conversation_id))

    async def update_conversation(self, conversation_id: str, **fields: Any) -> Conversation:
        return await self.send(_calls.update_conversation(conversation_id, fields))

    async def delete_conversation(self, conversation_id: str, *, missing_ok: bool = False) -> None:
        await self.send(_calls.delete_conversation(conversation_id, missing_ok=missing_ok))

    async def list_conversations(self, *, limit: int = 20, cursor: str | None = None) -> Page[Conversation]:
        return await self.send(_calls.list_conversations(limit, cursor))

    async def iter_conversations(self, *, page_size: int = 100) -> AsyncIterator[Conversation]:
        cursor = None
        while True:
            page = await self.list_conversations(limit=page_size, cursor=cursor)
            for item in page.items:
                yield item
            if not (cursor := page.next_cursor):
                return

    async def messages(
        self, conversation_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[Message]:
        return await self.send(_calls.messages(conversation_id, limit, cursor))

    async def iter_messages(self, conversation_id: str, *, page_size: int = 200) -> AsyncIterator[Message]:
        cursor = None
        while True:
            page = await self.messages(conversation_id, limit=page_size, cursor=cursor)
            for item in page.items:
                yield item
            if not (cursor := page.next_cursor):
                return

    async def post_message(
        self, content: Any, conversation_id: str | None = None, **settings: Any
    ) -> PostResult:
        return await self.send(_calls.post_message(content, conversation_id, settings))

    async def append_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> list[Message]:
        return await self.send(_calls.append_messages(conversation_id, messages))

    async def delete_message(self, conversation_id: str, message_id: str) -> list[Message]:
        return await self.send(_calls.delete_message(conversation_id, message_id))

    async def edit_message(
        self, conversation_id: str, message_id: str, content: Any, **settings: Any
    ) -> PostResult:
        return await self.send(_calls.edit_message(conversation_id, message_id, content, settings))

    async def regenerate_message(self, conversation_id: str, message_id: str, **settings: Any) -> PostResult:
        return await self.send(_calls.regenerate_message(conversation_id, message_id, settings))

    async def set_active(self, conversation_id: str, message_id: str) -> Conversation:
        return await self.send(_calls.set_active(conversation_id, message_id))

    async def tree(
        self, conversation_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[Message]:
        return await self.send(_calls.tree(conversation_id, limit, cursor))

    async def window(self, conversation_id: str, content: Any, **settings: Any) -> dict[str, Any]:
        return await self.send(_calls.window(conversation_id, content, settings))

    async def usage(
        self, *, first: str | None = None, last: str | None = None, user: str | None = None
    ) -> dict[str, Any]:
        return await self.send(_calls.usage(first, last, user))

    async def set_budget(self, user: str, **limits: Any) -> dict[str, Any]:
        return await self.send(_calls.set_budget(user, limits))

    async def search_memory(
        self, query: str, *, limit: int = 10, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        call = _memory_calls.search_memory(query, limit=limit, conversation_id=conversation_id)
        body = await self.send(call)
        return list(body.get("results") or [])

    async def memory_facts(
        self,
        *,
        limit: int = 20,
        cursor: str | None = None,
        conversation_id: str | None = None,
        include_superseded: bool = False,
    ) -> Page[dict[str, Any]]:
        return await self.send(
            _memory_calls.list_facts(
                limit=limit,
                cursor=cursor,
                conversation_id=conversation_id,
                include_superseded=include_superseded,
            )
        )

    async def iter_memory_facts(
        self, *, page_size: int = 100, include_superseded: bool = False
    ) -> AsyncIterator[dict[str, Any]]:
        cursor = None
        while True:
            page = await self.memory_facts(
                limit=page_size, cursor=cursor, include_superseded=include_superseded
            )
            for item in page.items:
                yield item
            if not (cursor := page.next_cursor):
                return

    async def delete_memory_fact(self, fact_id: str) -> None:
        await self.send(_memory_calls.delete_fact(fact_id))

    async def export_user_data(
        self, user_id: str | None = None, *, wait: bool = True, timeout: float = 600.0
    ) -> UserExport:
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        job = await self.send(_user_data_calls.request_export(owner))
        return await self.wait_user_export(job, timeout=timeout) if wait else job

    async def get_user_export(self, export_id: str, user_id: str | None = None) -> UserExport:
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        return await self.send(_user_data_calls.get_export(owner, export_id))

    async def wait_user_export(self, export: UserExport, *, timeout: float = 600.0) -> UserExport:
        waiting = _user_data_calls.Waiting(timeout, f"export {export.export_id}")
        while not export.done:
            await asyncio.sleep(waiting.next_pause(export))
            export = await self.get_user_export(export.export_id, export.user_id)
        return export

    async def download_user_export(self, export: UserExport, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.write_bytes(await self._archive_bytes(export))
        return target

    async def read_user_export(self, export: UserExport) -> dict[str, Any]:
        return _user_data_calls.read_archive(await self._archive_bytes(export))

    async def _archive_bytes(self, export: UserExport) -> bytes:
        if not export.url:
            raise ValueError(f"export {export.export_id} is {export.status!r}: no archive yet")
        try:
            # A presigned URL carries its own authority: no API headers go with it.
            response = await self._request({"method": "GET", "url": export.url})
        except httpx.TransportError as exc:
            raise TransportError(f"GET the archive of export {export.export_id}: {exc}") from exc
        if response.status_code != 200:
            raise TransportError(f"the archive's URL answered {response.status_code} (expired? ask again)")
        return response.content

    async def erase_user_data(
        self,
        user_id: str | None = None,
        *,
        confirm: str | None = None,
        wait: bool = True,
        timeout: float = 900.0,
    ) -> ErasureReceipt:
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        _user_data_calls.check_confirmation(owner, confirm)
        receipt = await self.send(_user_data_calls.request_erasure(owner))
        if not wait:
            return receipt
        waiting = _user_data_calls.Waiting(timeout, f"the erasure of {owner}")
        while not receipt.done:
            await asyncio.sleep(waiting.next_pause(receipt))
            receipt = await self.get_user_erasure(owner)
        return receipt

    async def get_user_erasure(self, user_id: str | None = None) -> ErasureReceipt:
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        return await self.send(_user_data_calls.get_erasure(owner))

    async def import_user_data(
        self,
        source: bytes | str | os.PathLike[str],
        user_id: str | None = None,
        *,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> UserImport:
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        data = _user_data_calls.file_bytes(source)
        job = await self.send(_user_data_calls.request_import(owner))
        try:
            response = await self._request(_user_data_calls.upload_request(job, data))
        except httpx.TransportError as exc:
            raise TransportError(f"PUT the file of import {job.import_id}: {exc}") from exc
        if response.status_code != 200:
            raise TransportError(f"the upload URL answered {response.status_code} (expired? start again)")
        job = await self.send(_user_data_calls.start_import(owner, job.import_id))
        if not wait:
            return job
        waiting = _user_data_calls.Waiting(timeout, f"import {job.import_id}")
        while not job.done:
            await asyncio.sleep(waiting.next_pause(job))
            job = await self.get_user_import(job.import_id, owner)
        return _user_data_calls.finished_import(job)

    async def get_user_import(self, import_id: str, user_id: str | None = None) -> UserImport:
        owner = _user_data_calls.whose(user_id, self._policy.headers)
        return await self.send(_user_data_calls.get_import(owner, import_id))
