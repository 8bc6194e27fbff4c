"""POST /users/{user_id}/exports: export everything a user owns as one archive, as a job; GET
/users/{user_id}/exports/{export_id}: its state and, once done, a presigned URL to fetch it (PRV-2)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.roles import is_admin
from chat_core.observability import http_entry
from chat_core.privacy import export

app = build_app()


# The router matches the raw path: an id with ':' or '@' arrives percent-encoded.
@app.post("/users/<user_id>/exports")
def request_export(user_id: str) -> Response[Any]:
    return json_response(202, export.request_export(caller(app), unquote(user_id), admin=is_admin(app)))


@app.get("/users/<user_id>/exports/<export_id>")
def get_export(user_id: str, export_id: str) -> Response[Any]:
    found = export.get_export(caller(app), unquote(user_id), export_id, admin=is_admin(app))
    return json_response(200, found)


lambda_handler = http_entry(app)
