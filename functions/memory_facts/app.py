"""GET /memory: the caller's long-term facts, newest first, paginated; DELETE /memory/{fact_id}: one fact
(and the earlier versions it superseded), for good (MEM-32, MEM-33)."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat import memory
from chat_core.chat.paging import MAX_CURSOR_CHARS
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()

_ID = r"^[0-9A-HJKMNP-TV-Z]{26}$"


@app.get("/memory")
def list_memory(
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(min_length=1, max_length=MAX_CURSOR_CHARS)] = None,
    conversation_id: Annotated[
        str | None, Query(pattern=_ID, description="Only facts taken from this conversation")
    ] = None,
    include_superseded: Annotated[
        bool, Query(description="Also the facts a newer one superseded, or a later message retracted")
    ] = False,
) -> Response[Any]:
    listing = memory.list_memory(
        caller(app),
        limit=limit,
        cursor=cursor,
        conversation_id=conversation_id,
        include_superseded=include_superseded,
    )
    return json_response(200, listing)


@app.delete("/memory/<fact_id>")
def delete_memory(fact_id: str) -> Response[Any]:
    memory.delete_memory(caller(app), fact_id)
    return json_response(204, None)


lambda_handler = http_entry(app)
