"""POST /worlds/{world_id}/exports: the world's export as gzip JSON Lines in S3, and a GET URL (DLG-6)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import jobs
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/exports")
def export_world_s3(world_id: str) -> Response[Any]:
    return json_response(201, jobs.export_to_s3(caller(app), world_id))


lambda_handler = http_entry(app)
