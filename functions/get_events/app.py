"""GET /conversations/{conversation_id}/events: the conversation's turn log as JSON Lines (seed 002)."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat import reads
from chat_core.chat.paging import MAX_CURSOR_CHARS
from chat_core.engine.turnlog import JSONL_CONTENT_TYPE, to_jsonl
from chat_core.http.api import Response, build_app, caller
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/conversations/<conversation_id>/events")
def get_events(
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
    turn: Annotated[int | None, Query(ge=0, le=9_999_999_999, description="Only this turn's events")] = None,
) -> Response[Any]:
    page = reads.list_events(caller(app), conversation_id, limit=limit, cursor=cursor, turn=turn)
    # The next page's cursor rides in a header so every line of the body stays one event.
    headers = {"X-Next-Cursor": page.next_cursor} if page.next_cursor else None
    return Response(
        status_code=200, content_type=JSONL_CONTENT_TYPE, body=to_jsonl(page.lines), headers=headers
    )


lambda_handler = http_entry(app)
