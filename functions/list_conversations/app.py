"""GET /conversations: the caller's live conversations, newest `updated_at` first, paginated."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat import reads
from chat_core.chat.paging import MAX_CURSOR_CHARS
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/conversations")
def list_conversations(
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
    q: Annotated[str | None, Query(max_length=200, description="Words the title must contain")] = None,
) -> Response[Any]:
    return json_response(200, reads.list_conversations(caller(app), limit=limit, cursor=cursor, query=q))


lambda_handler = http_entry(app)
