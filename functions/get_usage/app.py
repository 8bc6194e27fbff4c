"""GET /usage: the caller's tokens and cost per UTC day and model, and their budget (COST-3, COST-4);
an administrator may ask for another user's with `user=`.

The function's code is api.py: imported on the first invocation, or at init when SnapStart (or
provisioned concurrency) takes init off the request path; see chat_core.startup."""

from __future__ import annotations

from chat_core.startup import deferred

lambda_handler, __getattr__ = deferred(__name__, __file__)
