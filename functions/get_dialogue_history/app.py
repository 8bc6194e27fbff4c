"""GET /worlds/{world_id}/history?participants=a,b&limit=10[&for=a]: primary and ancillary history (seed
004), or with `for` alone what one participant witnessed in any dialogue (DLG-3)."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.dialogue import entries
from chat_core.dialogue.entries import labelled
from chat_core.errors import InvalidInput
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.get("/worlds/<world_id>/history")
def get_dialogue_history(
    world_id: str,
    participants: Annotated[
        str | None,
        Query(min_length=1, max_length=2100, description="Comma-separated participant ids, e.g. a,b"),
    ] = None,
    limit: Annotated[int, Query(ge=0, le=entries.MAX_HISTORY_LIMIT)] = entries.DEFAULT_HISTORY_LIMIT,
    viewer: Annotated[
        str | None,
        Query(
            alias="for",
            min_length=1,
            max_length=64,
            description="DLG-3: only what this participant perceived; alone, everything it perceived",
        ),
    ] = None,
) -> Response[Any]:
    owner = caller(app)
    if participants is None:
        if viewer is None:
            raise InvalidInput("give participants (a dialogue's history) or for (what one witnessed)")
        witnessed = entries.get_witnessed(owner, world_id, viewer, limit)
        body = {"world_id": world_id, "limit": limit, "for": viewer, "witnessed": labelled(witnessed)}
        return json_response(200, body)
    ids = [p.strip() for p in participants.split(",")]
    context = entries.get_historical_context(owner, world_id, ids, limit, viewer)
    return json_response(200, {"world_id": world_id, "limit": limit, **context.to_dict()})


lambda_handler = http_entry(app)
