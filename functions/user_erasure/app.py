"""POST /users/{user_id}/erasure: erase everything a user owns (the user, or an administrator), as a job;
GET /users/{user_id}/erasure: its progress, then its receipt (PRV-1)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.roles import is_admin
from chat_core.observability import http_entry
from chat_core.privacy import erasure

app = build_app()


# The router matches the raw path: an id with ':' or '@' arrives percent-encoded.
@app.post("/users/<user_id>/erasure")
def request_erasure(user_id: str) -> Response[Any]:
    return json_response(202, erasure.request_erasure(caller(app), unquote(user_id), admin=is_admin(app)))


@app.get("/users/<user_id>/erasure")
def get_erasure(user_id: str) -> Response[Any]:
    return json_response(200, erasure.get_erasure(caller(app), unquote(user_id), admin=is_admin(app)))


lambda_handler = http_entry(app)
