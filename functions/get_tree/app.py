"""GET /conversations/{conversation_id}/tree: every message with its parent, children and whether it is
on the active path, oldest first, paginated (API-18)."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat import navigation
from chat_core.chat.paging import MAX_CURSOR_CHARS
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/conversations/<conversation_id>/tree")
def get_tree(
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=200)] = 100,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
) -> Response[Any]:
    return json_response(200, navigation.tree_page(caller(app), conversation_id, limit=limit, cursor=cursor))


lambda_handler = http_entry(app)
