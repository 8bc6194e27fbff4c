"""POST /worlds/{world_id}/import?mode=restore|merge: load a JSON Lines export into a world (game load)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chat_core.dialogue import transfer
from chat_core.errors import InvalidInput
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/import")
def import_world(
    world_id: str,
    mode: Annotated[
        Literal["restore", "merge"],
        Query(description="restore: the world must be empty (else 409); merge: add to what is there"),
    ] = "restore",
) -> Response[Any]:
    owner = caller(app)
    try:
        text = app.current_event.decoded_body or ""
    except UnicodeDecodeError as exc:
        raise InvalidInput("the import body must be UTF-8 JSON Lines", field="body") from exc
    result = transfer.import_world_jsonl(owner, world_id, text, mode=mode)
    return json_response(201, result.to_dict())


lambda_handler = http_entry(app)
