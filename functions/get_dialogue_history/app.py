"""GET /worlds/{world_id}/history?participants=a,b&limit=10[&for=a]: primary and ancillary history (seed
004), or with `for` alone what one participant witnessed in any dialogue (DLG-3).

The function's code is api.py: imported on the first invocation, or at init when SnapStart (or
provisioned concurrency) takes init off the request path; see chat_core.startup."""

from __future__ import annotations

from chat_core.startup import deferred

lambda_handler, __getattr__ = deferred(__name__, __file__)
