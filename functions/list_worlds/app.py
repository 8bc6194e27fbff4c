"""GET /worlds: the caller's dialogue worlds by id (DLG-2)."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.dialogue import worlds
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/worlds")
def list_worlds(
    limit: Annotated[int, Query(ge=1, le=worlds.MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> Response[Any]:
    return json_response(200, worlds.list_worlds(caller(app), limit=limit, cursor=cursor))


lambda_handler = http_entry(app)
