"""PUT /budgets/{user_id}: an administrator sets one user's daily and monthly limits (COST-4)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from chat_core.chat import usage
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.roles import is_admin
from chat_core.http.schemas import BudgetIn
from chat_core.observability import http_entry

app = build_app()


@app.put("/budgets/<user_id>")
def set_budget(user_id: str, body: BudgetIn) -> Response[Any]:
    limits = body.model_dump(exclude_unset=True)
    # The router matches the raw path: an id with ':' or '@' arrives percent-encoded.
    answer = usage.set_budget(caller(app), unquote(user_id), limits, admin=is_admin(app))
    return json_response(200, answer)


lambda_handler = http_entry(app)
