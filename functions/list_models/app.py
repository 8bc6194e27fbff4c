"""GET /v1/models: the models this deployment offers, in OpenAI's list format (API-13)."""

from __future__ import annotations

from typing import Any

from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.models_list import models_list
from chat_core.observability import http_entry

app = build_app(openai_errors=True)


@app.get("/v1/models")
def list_models() -> Response[Any]:
    caller(app)  # the same identity as every route: no anonymous listing
    return json_response(200, models_list())


lambda_handler = http_entry(app)
