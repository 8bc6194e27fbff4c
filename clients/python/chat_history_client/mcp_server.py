"""An MCP server over Chat History Service (MEM-28; extra `[mcp]`): the caller's history and memory as
tools an agent can call, over the same HTTP API and the same identity.

Tools: `search_memory` (GET /memory/search: the caller's messages relevant to a query, across their
conversations or in one), `recent_history` (a conversation's newest messages, oldest of them first),
`append_message` (store a message as given, no model call; a new conversation when none is named) and
`list_conversations` (newest first, paginated). An API error comes back as a tool error carrying the
API's code and message.

Run it:

    python -m chat_history_client.mcp_server                        # stdio (Claude Desktop, Agents SDK)
    python -m chat_history_client.mcp_server --transport streamable-http --port 8765   # http://127.0.0.1:8765/mcp

The service and the identity come from the environment: CHAT_HISTORY_URL (default
http://127.0.0.1:3000, the local server), CHAT_HISTORY_TOKEN (a JWT, deployed) or CHAT_HISTORY_USER (a
user id, the local server's dev mode). Over streamable HTTP, a request's own `Authorization: Bearer` or
`X-User-Id` header is passed on instead when it carries one, so one server can serve several users: the
service decides who they are, as it does for every request.
"""

from __future__ import annotations

import argparse
import os
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from chat_history_client import _memory_calls
from chat_history_client._calls import Call
from chat_history_client.client import DEFAULT_BASE_URL, AsyncChatHistoryClient
from chat_history_client.errors import APIError, ChatHistoryError

ENV_URL = "CHAT_HISTORY_URL"
ENV_TOKEN = "CHAT_HISTORY_TOKEN"  # noqa: S105 - the variable's name, not a token
ENV_USER = "CHAT_HISTORY_USER"
#: The most messages `recent_history` answers, and the page size it reads the detail route with.
MAX_RECENT = 200
#: Message fields an agent reads (the rest of the API's message object stays out of its context).
_MESSAGE_FIELDS = ("message_id", "role", "content", "created_at", "name", "tool_calls", "tool_call_id")

INSTRUCTIONS = (
    "Chat History Service: the user's stored conversations and memory. Use search_memory to find what "
    "was said before (any conversation), recent_history to read a conversation's latest messages, "
    "list_conversations to find a conversation, append_message to record a message without a model call."
)


def _body(body: Any) -> Any:
    return body


def _id(value: str) -> str:
    return quote(value, safe="")


def _message(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in _MESSAGE_FIELDS if data.get(k) is not None}


class Identity:
    """Who the tools act as: the environment's token or user, or a request's own headers over HTTP."""

    def __init__(self, base_url: str, token: str | None, user_id: str | None) -> None:
        self.base_url = base_url
        self.token = token or None
        self.user_id = user_id or None
        self._clients: dict[tuple[str | None, str | None], AsyncChatHistoryClient] = {}

    def client(self, headers: Mapping[str, str] | None) -> AsyncChatHistoryClient:
        token, user_id = self.token, self.user_id
        lowered = {k.lower(): v for k, v in (headers or {}).items()}
        bearer = lowered.get("authorization", "")
        if bearer.lower().startswith("bearer ") and bearer[7:].strip():
            token, user_id = bearer[7:].strip(), None
        elif lowered.get("x-user-id"):
            token, user_id = None, lowered["x-user-id"]
        if token is None and user_id is None:
            raise ToolError(
                f"no identity: set {ENV_TOKEN} (a JWT) or {ENV_USER} (the local server's dev mode)"
            )
        key = (token, user_id)
        if key not in self._clients:
            self._clients[key] = AsyncChatHistoryClient(
                self.base_url, token=token, user_id=user_id, max_retries=2
            )
        return self._clients[key]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()


async def _send(identity: Identity, ctx: Context | None, call: Call[Any]) -> Any:
    headers = ctx.headers if ctx is not None else None
    try:
        return await identity.client(headers).send(call)
    except APIError as exc:
        raise ToolError(f"{exc.status} {exc.code}: {exc.message}") from exc
    except ChatHistoryError as exc:
        raise ToolError(str(exc)) from exc


def build_server(
    base_url: str | None = None, *, token: str | None = None, user_id: str | None = None
) -> MCPServer:
    """The MCP server, its tools calling the API at `base_url` as `token` / `user_id` (by default the
    environment's CHAT_HISTORY_URL, CHAT_HISTORY_TOKEN, CHAT_HISTORY_USER)."""
    identity = Identity(
        base_url or os.environ.get(ENV_URL) or DEFAULT_BASE_URL,
        token if token is not None else os.environ.get(ENV_TOKEN),
        user_id if user_id is not None else os.environ.get(ENV_USER),
    )
    server = MCPServer("chat-history", instructions=INSTRUCTIONS)

    @server.tool()
    async def search_memory(
        query: str, limit: int = 10, conversation_id: str | None = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        """Search what the user said before, across all their conversations (or in one, with
        conversation_id). Returns the best matching messages with their conversation, message id, role,
        a snippet and a score."""
        call = _memory_calls.search_memory(query, limit=limit, conversation_id=conversation_id)
        answer = await _send(identity, ctx, call)
        return {"results": list(answer.get("results", []))}

    @server.tool()
    async def recent_history(
        conversation_id: str, limit: int = 20, ctx: Context | None = None
    ) -> dict[str, Any]:
        """The newest `limit` messages (at most 200) of a conversation's active path, oldest of them first."""
        if not 1 <= limit <= MAX_RECENT:
            raise ToolError(f"limit must be 1..{MAX_RECENT}")
        newest: deque[dict[str, Any]] = deque(maxlen=limit)
        cursor: str | None = None
        title: str | None = None
        while True:
            params = {"limit": MAX_RECENT, **({"cursor": cursor} if cursor else {})}
            page = await _send(
                identity, ctx, Call("GET", f"/conversations/{_id(conversation_id)}", _body, params=params)
            )
            title = page.get("title")
            newest.extend(_message(m) for m in page.get("messages", []))
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return {"conversation_id": conversation_id, "title": title, "messages": list(newest)}

    @server.tool()
    async def append_message(
        content: str,
        role: str = "user",
        conversation_id: str | None = None,
        name: str | None = None,
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Record a message (role user, assistant or system) at the end of a conversation, without asking
        the model. Without conversation_id a new conversation is created for it."""
        if conversation_id is None:
            created = await _send(identity, ctx, Call("POST", "/conversations", _body, json={}))
            conversation_id = str(created["conversation_id"])
        message: dict[str, Any] = {"role": role, "content": content}
        if name is not None:
            message["name"] = name
        path = f"/conversations/{_id(conversation_id)}/messages"
        answer = await _send(identity, ctx, Call("POST", path, _body, json={"messages": [message]}))
        stored = [_message(m) for m in answer.get("messages", [])]
        return {"conversation_id": conversation_id, "messages": stored}

    @server.tool()
    async def list_conversations(
        limit: int = 20, cursor: str | None = None, ctx: Context | None = None
    ) -> dict[str, Any]:
        """The user's conversations, most recently updated first; pass next_cursor back for more."""
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = await _send(identity, ctx, Call("GET", "/conversations", _body, params=params))
        fields = ("conversation_id", "key", "title", "message_count", "created_at", "updated_at")
        items = [{k: c.get(k) for k in fields} for c in page.get("items", [])]
        return {"conversations": items, "next_cursor": page.get("next_cursor")}

    return server


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m chat_history_client.mcp_server [--transport stdio|streamable-http] [--host] [--port]`."""
    parser = argparse.ArgumentParser(prog="chat-history-mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="streamable HTTP: the address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="streamable HTTP: the port (default 8765)")
    parser.add_argument("--path", default="/mcp", help="streamable HTTP: the endpoint's path")
    parser.add_argument(
        "--url", default=None, help=f"the service's base URL (default ${ENV_URL} or the local server)"
    )
    args = parser.parse_args(argv)
    server = build_server(args.url)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port, streamable_http_path=args.path)


if __name__ == "__main__":
    main()
