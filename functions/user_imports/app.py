"""POST /users/{user_id}/imports: an import job and the URL to PUT its file to; POST
.../{import_id}/start: queue it (or resume it); GET .../{import_id}: status, progress, the conversations
made or the error (PRV-3)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.roles import is_admin
from chat_core.observability import http_entry
from chat_core.privacy import imports

app = build_app()


# The router matches the raw path: an id with ':' or '@' arrives percent-encoded.
@app.post("/users/<user_id>/imports")
def request_import(user_id: str) -> Response[Any]:
    return json_response(202, imports.request_import(caller(app), unquote(user_id), admin=is_admin(app)))


@app.post("/users/<user_id>/imports/<import_id>/start")
def start_import(user_id: str, import_id: str) -> Response[Any]:
    found = imports.start_import(caller(app), unquote(user_id), import_id, admin=is_admin(app))
    return json_response(202, found)


@app.get("/users/<user_id>/imports/<import_id>")
def get_import(user_id: str, import_id: str) -> Response[Any]:
    found = imports.get_import(caller(app), unquote(user_id), import_id, admin=is_admin(app))
    return json_response(200, found)


lambda_handler = http_entry(app)
