"""GET /usage: the caller's tokens and cost per UTC day and model, and their budget (COST-3, COST-4);
an administrator may ask for another user's with `user=`."""

from __future__ import annotations

from typing import Annotated, Any

from chat_core.chat import usage
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.query import Query
from chat_core.http.roles import is_admin
from chat_core.observability import http_entry

app = build_app()

_DAY = r"^\d{4}-\d{2}-\d{2}$"


@app.get("/usage")
def get_usage(
    from_: Annotated[
        str | None, Query(alias="from", pattern=_DAY, description="First UTC day, YYYY-MM-DD (default: to)")
    ] = None,
    to: Annotated[
        str | None, Query(pattern=_DAY, description="Last UTC day, YYYY-MM-DD (default: today)")
    ] = None,
    user: Annotated[
        str | None, Query(min_length=1, max_length=512, description="Another user's id (administrators only)")
    ] = None,
) -> Response[Any]:
    report = usage.usage_report(caller(app), user=user, first=from_, last=to, admin=is_admin(app))
    return json_response(200, report)


lambda_handler = http_entry(app)
