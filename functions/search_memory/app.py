"""GET /memory/search: the caller's own conversations searched by the recall index (MEM-11)."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat.recall import search as recall_search
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/memory/search")
def search_memory(
    q: Annotated[
        str, Query(min_length=1, max_length=recall_search.MAX_QUERY_CHARS, description="What to find")
    ],
    limit: Annotated[int, Query(ge=1, le=recall_search.MAX_LIMIT)] = recall_search.DEFAULT_LIMIT,
    conversation_id: Annotated[
        str | None, Query(min_length=1, max_length=64, description="Search this conversation only")
    ] = None,
) -> Response[Any]:
    found = recall_search.search_memory(caller(app), q, limit=limit, conversation_id=conversation_id)
    return json_response(200, found)


lambda_handler = http_entry(app)
