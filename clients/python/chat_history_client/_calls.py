"""Each API operation as a `Call` (method, path, body, how to read the answer), and the policy both
clients share: headers, which answers are retried and how long to wait. No I/O here: the sync and the
async client send the same calls."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from chat_history_client.errors import APIError, TransportError, api_error
from chat_history_client.types import Conversation, Message, Page, PostResult

#: Most messages one append call takes (the API's limit); adapters send longer lists in batches.
APPEND_BATCH = 30
#: Longest wait honoured from a Retry-After header, seconds.
MAX_RETRY_AFTER = 30.0
#: Statuses retried (with the same Idempotency-Key, so a retried POST never runs twice).
_RETRIED_STATUS = {429, 503}
#: 409 answers that mean "try again shortly".
_RETRIED_CONFLICTS = {"conversation_busy", "request_in_progress"}


T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request: `parse` turns the JSON answer into the result; with `missing_ok` a 404 is None."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: Mapping[str, Any] | None = None
    missing_ok: bool = False
    idempotency_key: str | None = field(default=None)


def _id(value: str) -> str:
    return quote(value, safe="")


def _settings(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _page_of_messages(body: Any) -> Page[Message]:
    return Page([Message.from_api(m) for m in body.get("messages", [])], body.get("next_cursor"))


def _messages(key: str) -> Callable[[Any], list[Message]]:
    return lambda body: [Message.from_api(m) for m in body.get(key, [])]


def _nothing(_: Any) -> None:
    return None


def create_conversation(key: str | None, settings: Mapping[str, Any]) -> Call[Conversation]:
    body = _settings({**settings, "key": key})
    return Call("POST", "/conversations", Conversation.from_api, json=body)


def conversation_for_key(key: str, settings: Mapping[str, Any]) -> Call[Conversation]:
    return Call("PUT", f"/conversation-keys/{_id(key)}", Conversation.from_api, json=_settings(settings))


def find_conversation(key: str) -> Call[Conversation | None]:
    def parse(body: Any) -> Conversation | None:
        return Conversation.from_api(body) if body is not None else None

    return Call("GET", f"/conversation-keys/{_id(key)}", parse, params={"limit": 1}, missing_ok=True)


def get_conversation(conversation_id: str) -> Call[Conversation]:
    return Call("GET", f"/conversations/{_id(conversation_id)}", Conversation.from_api, params={"limit": 1})


def update_conversation(conversation_id: str, fields: Mapping[str, Any]) -> Call[Conversation]:
    return Call("PATCH", f"/conversations/{_id(conversation_id)}", Conversation.from_api, json=dict(fields))


def delete_conversation(conversation_id: str, *, missing_ok: bool) -> Call[None]:
    return Call("DELETE", f"/conversations/{_id(conversation_id)}", _nothing, missing_ok=missing_ok)


def list_conversations(limit: int, cursor: str | None) -> Call[Page[Conversation]]:
    def parse(body: Any) -> Page[Conversation]:
        return Page([Conversation.from_api(c) for c in body.get("items", [])], body.get("next_cursor"))

    return Call("GET", "/conversations", parse, params=_settings({"limit": limit, "cursor": cursor}))


def messages(conversation_id: str, limit: int, cursor: str | None) -> Call[Page[Message]]:
    params = _settings({"limit": limit, "cursor": cursor})
    return Call("GET", f"/conversations/{_id(conversation_id)}", _page_of_messages, params=params)


def post_message(content: Any, conversation_id: str | None, settings: Mapping[str, Any]) -> Call[PostResult]:
    body = _settings({**settings, "content": content, "conversation_id": conversation_id})
    return Call("POST", "/messages", PostResult.from_api, json=body)


def append_messages(conversation_id: str, items: list[dict[str, Any]]) -> Call[list[Message]]:
    path = f"/conversations/{_id(conversation_id)}/messages"
    return Call("POST", path, _messages("messages"), json={"messages": items})


def delete_message(conversation_id: str, message_id: str) -> Call[list[Message]]:
    path = f"/conversations/{_id(conversation_id)}/messages/{_id(message_id)}"
    return Call("DELETE", path, _messages("deleted"))


def edit_message(
    conversation_id: str, message_id: str, content: Any, settings: Mapping[str, Any]
) -> Call[PostResult]:
    path = f"/conversations/{_id(conversation_id)}/messages/{_id(message_id)}/edit"
    return Call("POST", path, PostResult.from_api, json=_settings({**settings, "content": content}))


def regenerate_message(
    conversation_id: str, message_id: str, settings: Mapping[str, Any]
) -> Call[PostResult]:
    path = f"/conversations/{_id(conversation_id)}/messages/{_id(message_id)}/regenerate"
    return Call("POST", path, PostResult.from_api, json=_settings(settings))


def set_active(conversation_id: str, message_id: str) -> Call[Conversation]:
    path = f"/conversations/{_id(conversation_id)}/active"
    return Call("PUT", path, Conversation.from_api, json={"message_id": message_id})


def tree(conversation_id: str, limit: int, cursor: str | None) -> Call[Page[Message]]:
    params = _settings({"limit": limit, "cursor": cursor})
    return Call("GET", f"/conversations/{_id(conversation_id)}/tree", _page_of_messages, params=params)


def usage(first: str | None, last: str | None, user: str | None) -> Call[dict[str, Any]]:
    params = _settings({"from": first, "to": last, "user": user})
    return Call("GET", "/usage", lambda body: body, params=params or None)


def set_budget(user: str, limits: Mapping[str, Any]) -> Call[dict[str, Any]]:
    return Call("PUT", f"/budgets/{_id(user)}", lambda body: body, json=dict(limits))


def window(conversation_id: str, content: Any, settings: Mapping[str, Any]) -> Call[dict[str, Any]]:
    path = f"/conversations/{_id(conversation_id)}/window"
    return Call("POST", path, lambda body: body, json=_settings({**settings, "content": content}))


class Policy:
    """Base URL, identity headers and the retry rules of one client."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None,
        user_id: str | None,
        max_retries: int,
        backoff: float,
    ) -> None:
        if token is None and user_id is None:
            raise ValueError("pass token= (a JWT, deployed) or user_id= (the local server's dev mode)")
        self.base_url = base_url.rstrip("/")
        self.headers = {"Accept": "application/json", "User-Agent": "chat-history-client/0.1.0"}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        if user_id is not None:
            self.headers["X-User-Id"] = user_id
        self.max_retries = max(0, int(max_retries))
        self.backoff = backoff

    def request(self, call: Call[Any]) -> dict[str, Any]:
        """The keyword arguments of httpx's `request` for `call` (a POST gets an Idempotency-Key, kept
        across its retries)."""
        headers = dict(self.headers)
        if call.method == "POST":
            headers["Idempotency-Key"] = call.idempotency_key or str(uuid.uuid4())
        return {
            "method": call.method,
            "url": self.base_url + call.path,
            "json": call.json,
            "params": dict(call.params) if call.params else None,
            "headers": headers,
        }

    def pause(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry `attempt` (0-based): Retry-After when the service sent one,
        else exponential backoff with jitter."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER)
        base = min(float(self.backoff) * 2.0**attempt, MAX_RETRY_AFTER)
        return base * (0.5 + random.random() / 2)  # noqa: S311

    def retry_after(self, response: httpx.Response, attempt: int) -> float | None:
        """How long to wait before sending again, or None when `response` is final."""
        if attempt >= self.max_retries or not _retried(response):
            return None
        return self.pause(attempt, _retry_after_header(response))

    def result(self, call: Call[T], response: httpx.Response) -> T:
        """The parsed result of a final answer, or the API's error raised."""
        if response.status_code == 404 and call.missing_ok:
            return call.parse(None)
        if response.status_code == 204:
            return call.parse(None)
        body = _json(response)
        if response.status_code >= 400:
            raise api_error(response.status_code, body, _retry_after_header(response))
        if body is None:
            raise TransportError(
                f"{call.method} {call.path}: the answer is not JSON ({response.status_code})"
            )
        return call.parse(body)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _retried(response: httpx.Response) -> bool:
    if response.status_code == 409:
        body = _json(response)
        code = (body.get("error") or {}).get("code") if isinstance(body, dict) else None
        return code in _RETRIED_CONFLICTS
    if response.status_code == 503:
        body = _json(response)
        code = (body.get("error") or {}).get("code") if isinstance(body, dict) else None
        return code != "reply_not_stored"  # that answer carries the reply: hand it to the caller
    if response.status_code == 429:
        body = _json(response)
        code = (body.get("error") or {}).get("code") if isinstance(body, dict) else None
        return code != "budget_exceeded"  # the budget resets hours away: say so at once
    return response.status_code in _RETRIED_STATUS


def _retry_after_header(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


__all__ = ["APPEND_BATCH", "APIError", "Call", "Policy"]
