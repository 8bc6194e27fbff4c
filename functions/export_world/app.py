"""GET /worlds/{world_id}/export: every dialogue and entry of a world as JSON Lines (game save)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import transfer
from chat_core.http.api import Response, build_app, caller
from chat_core.observability import http_entry

app = build_app()


@app.get("/worlds/<world_id>/export")
def export_world(world_id: str) -> Response[Any]:
    body = transfer.export_world_jsonl(caller(app), world_id)
    return Response(
        status_code=200,
        content_type="application/x-ndjson; charset=utf-8",
        body=body,
        headers={"Content-Disposition": f'attachment; filename="{world_id}.jsonl"'},
    )


lambda_handler = http_entry(app)
