"""GET /conversations/{conversation_id}: the conversation and its messages, oldest first, paginated; GET
/conversation-keys/{key}: the same for the conversation the caller named by a key (API-21)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from chat_core.chat import conversation_keys, reads
from chat_core.chat.paging import MAX_CURSOR_CHARS
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/conversations/<conversation_id>")
def get_conversation(
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 100,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
) -> Response[Any]:
    detail = reads.get_conversation(caller(app), conversation_id, limit=limit, cursor=cursor)
    return json_response(200, detail)


@app.get("/conversation-keys/<key>")
def get_conversation_by_key(
    key: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 100,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
) -> Response[Any]:
    owner = caller(app)
    # The router matches the raw path: `key` arrives percent-encoded (`user%3A1`), as clients send it.
    conversation_id = conversation_keys.named_conversation_id(owner, unquote(key))
    return json_response(200, reads.get_conversation(owner, conversation_id, limit=limit, cursor=cursor))


lambda_handler = http_entry(app)
