"""POST /worlds/{world_id}/imports/{job_id}/start: queue an uploaded import, or resume one (DLG-6)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue import jobs
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/imports/<job_id>/start")
def start_import(world_id: str, job_id: str) -> Response[Any]:
    return json_response(202, jobs.start_import(caller(app), world_id, job_id))


lambda_handler = http_entry(app)
