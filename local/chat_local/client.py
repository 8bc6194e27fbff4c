"""HTTP client of the Chat History API (API-8) for the `chat` CLI: httpx, plain errors, no tracebacks."""

from __future__ import annotations

import base64
import json as json_module
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

DEFAULT_API = "http://127.0.0.1:3000"


class ApiError(Exception):
    """The API answered with an error status; `message` is the server's error.message."""

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body

    def __str__(self) -> str:
        return f"error {self.status} ({self.code}): {self.message}"


class ServerUnreachable(Exception):
    """Nothing answered at the API URL (connection refused, DNS, timeout)."""

    def __init__(self, api: str, reason: str) -> None:
        super().__init__(reason)
        self.api = api
        self.reason = reason

    def __str__(self) -> str:
        hint = "start the local server with `make run` in another terminal"
        if not _is_local(self.api):
            hint = "check the --api URL and your network"
        return f"cannot reach the Chat History API at {self.api} ({self.reason}); {hint}"


def _is_local(url: str) -> bool:
    host = httpx.URL(url).host
    return host in ("127.0.0.1", "localhost", "::1")


def _jwt_subject(token: str) -> str | None:
    """The token's `sub`, read and not verified (the service verifies it)."""
    try:
        payload = token.split(".")[1]
        claims = json_module.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) else None


def _error_from(response: httpx.Response) -> ApiError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    code, message = "http_error", (response.text.strip()[:300] or response.reason_phrase)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            code = str(error.get("code") or code)
            message = str(error.get("message") or message)
        elif isinstance(body.get("message"), str):
            message = body["message"]
        # A 502 from POST /messages has the success shape: the model failed, the turn was stored.
        assistant = body.get("assistant_message")
        if isinstance(assistant, Mapping) and isinstance(assistant.get("error"), Mapping):
            code = "provider_failed"
            message = str(assistant["error"].get("message") or message)
    return ApiError(response.status_code, code, message, body)


class ChatApi:
    """One method per route of API-8. Identity: X-User-Id (local dev server) or a Bearer JWT."""

    def __init__(
        self,
        base_url: str = DEFAULT_API,
        *,
        user: str | None = None,
        token: str | None = None,
        timeout_s: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: Whose data /export and /erase act on: the X-User-Id, or the JWT's subject.
        self.user = user or (_jwt_subject(token) if token else None)
        headers = {"Accept": "application/json", "User-Agent": "chat-cli"}
        if user:
            headers["X-User-Id"] = user
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=5.0),
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        try:
            response = self._http.request(method, path, json=json, params=params, headers=headers)
        except httpx.TimeoutException as exc:
            raise ServerUnreachable(self.base_url, f"no answer: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            reason = str(exc) or type(exc).__name__
            if "refused" in reason.lower() or isinstance(exc, httpx.ConnectError):
                reason = "connection refused" if "refused" in reason.lower() else reason
            raise ServerUnreachable(self.base_url, reason) from exc
        if response.status_code >= 400:
            raise _error_from(response)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ApiError(
                response.status_code, "bad_response", "the API answered with a body that is not JSON"
            ) from exc

    # -- routes -----------------------------------------------------------------------------------

    def create_conversation(
        self, *, title: str | None = None, system_prompt: str | None = None, model: str | None = None
    ) -> dict[str, Any]:
        body = {
            k: v for k, v in {"title": title, "system_prompt": system_prompt, "model": model}.items() if v
        }
        return dict(self.request("POST", "/conversations", json=body))

    def post_message(
        self,
        conversation_id: str | None,
        content: str,
        *,
        model: str | None = None,
        idempotency_key: str | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"content": content}
        if conversation_id:
            body["conversation_id"] = conversation_id
        if model:
            body["model"] = model
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        if on_delta is None:
            return dict(self.request("POST", "/messages", json=body, headers=headers or None))
        return self._post_streamed(body, {**headers, "Accept": "text/event-stream"}, on_delta)

    def _post_streamed(
        self, body: dict[str, Any], headers: Mapping[str, str], on_delta: Callable[[str], None]
    ) -> dict[str, Any]:
        """POST /messages asking for a stream (API-14): each piece of the reply goes to `on_delta` as it
        arrives; the answer is the stored turn the stream ends with. A server that does not stream (a
        deployed API, an error) answers JSON, read as usual."""
        try:
            with self._http.stream("POST", "/messages", json=body, headers=dict(headers)) as response:
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    response.read()
                    if response.status_code >= 400:
                        raise _error_from(response)
                    return dict(response.json())
                turn: dict[str, Any] | None = None
                for line in response.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    event = json_module.loads(line[6:])
                    if event.get("object") == "chat.turn":
                        turn = event
                        continue
                    for choice in event.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            on_delta(text)
        except httpx.TimeoutException as exc:
            raise ServerUnreachable(self.base_url, f"no answer: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise ServerUnreachable(self.base_url, str(exc) or type(exc).__name__) from exc
        if turn is None:
            raise ApiError(502, "stream_ended", "the stream ended without the stored turn")
        turn.pop("object", None)
        status = int(turn.pop("status", 201))
        if status >= 400:
            raise ApiError(status, "reply_not_stored", "the reply could not be saved", turn)
        return turn

    def list_conversations(self, *, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        return dict(self.request("GET", "/conversations", params=params))

    def get_conversation(self, conversation_id: str, *, limit: int | None = None) -> dict[str, Any]:
        params = {"limit": limit} if limit else None
        return dict(self.request("GET", f"/conversations/{quote(conversation_id, safe='')}", params=params))

    def usage(self, *, first: str | None = None, last: str | None = None) -> dict[str, Any]:
        """GET /usage (COST-3): the caller's tokens and cost per day and model, and their budget."""
        params = {k: v for k, v in (("from", first), ("to", last)) if v}
        return dict(self.request("GET", "/usage", params=params or None))

    def delete_conversation(self, conversation_id: str) -> None:
        self.request("DELETE", f"/conversations/{quote(conversation_id, safe='')}")

    def build_window(self, conversation_id: str, content: str, *, model: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"content": content}
        if model:
            body["model"] = model
        return dict(
            self.request("POST", f"/conversations/{quote(conversation_id, safe='')}/window", json=body)
        )

    # -- branches (API-18) ---------------------------------------------------------------------------

    def _message_path(self, conversation_id: str, message_id: str) -> str:
        return f"/conversations/{quote(conversation_id, safe='')}/messages/{quote(message_id, safe='')}"

    def edit_message(self, conversation_id: str, message_id: str, content: str) -> dict[str, Any]:
        path = self._message_path(conversation_id, message_id) + "/edit"
        return dict(self.request("POST", path, json={"content": content}))

    def regenerate(self, conversation_id: str, message_id: str) -> dict[str, Any]:
        path = self._message_path(conversation_id, message_id) + "/regenerate"
        return dict(self.request("POST", path, json={}))

    def tree(self, conversation_id: str, *, cursor: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"limit": 200}
        if cursor:
            params["cursor"] = cursor
        path = f"/conversations/{quote(conversation_id, safe='')}/tree"
        return dict(self.request("GET", path, params=params))

    def set_active(self, conversation_id: str, message_id: str) -> dict[str, Any]:
        path = f"/conversations/{quote(conversation_id, safe='')}/active"
        return dict(self.request("PUT", path, json={"message_id": message_id}))

    # -- a user's data as a whole (PRV-1, PRV-2) --------------------------------------------------

    def _user_path(self, user: str) -> str:
        return f"/users/{quote(user, safe='')}"

    def request_export(self, user: str) -> dict[str, Any]:
        return dict(self.request("POST", f"{self._user_path(user)}/exports"))

    def get_export(self, user: str, export_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"{self._user_path(user)}/exports/{quote(export_id, safe='')}"))

    def request_erasure(self, user: str) -> dict[str, Any]:
        return dict(self.request("POST", f"{self._user_path(user)}/erasure"))

    def get_erasure(self, user: str) -> dict[str, Any]:
        return dict(self.request("GET", f"{self._user_path(user)}/erasure"))

    def download(self, url: str, path: Path) -> int:
        """A presigned URL's object written to `path` (no API headers: the URL carries its own
        authority); its size in bytes."""
        try:
            with httpx.stream("GET", url, timeout=self._http.timeout) as response:
                if response.status_code != 200:
                    raise ApiError(response.status_code, "download_failed", "the archive's URL refused it")
                size = 0
                with path.open("wb") as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
                        size += len(chunk)
                return size
        except httpx.TransportError as exc:
            raise ServerUnreachable(url.split("?")[0], str(exc) or type(exc).__name__) from exc
