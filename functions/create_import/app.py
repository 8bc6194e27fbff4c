"""POST /worlds/{world_id}/imports: an import job and the URL to PUT its file to (DLG-6)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import jobs
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/imports")
def create_import(world_id: str) -> Response[Any]:
    return json_response(202, jobs.create_import(caller(app), world_id))


lambda_handler = http_entry(app)
