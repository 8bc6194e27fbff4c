"""COST-3: who is an administrator: the deployment names a JWT group or scope (ADMIN_GROUP)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import APIGatewayHttpResolver

from chat_core.settings import get_settings


def _words(value: Any) -> set[str]:
    """A claim as a set of names: a JSON list, or a string of names separated by spaces or commas (API
    Gateway hands a list claim such as `cognito:groups` to the function as "[a b]")."""
    if isinstance(value, list):
        return {str(v) for v in value}
    if isinstance(value, str):
        return {w for w in value.strip("[]").replace(",", " ").split() if w}
    return set()


def is_admin(app: APIGatewayHttpResolver) -> bool:
    """COST-3: whether the caller is an administrator: ADMIN_GROUP (empty: nobody) is among the token's
    groups (`cognito:groups`, `groups`) or scopes (`scope`, `scp`, or the authorizer's scopes)."""
    group = get_settings().admin_group
    if not group:
        return False
    try:
        jwt = app.current_event.request_context.authorizer
        claims, scopes = jwt.jwt_claim, jwt.jwt_scopes
    except (AttributeError, KeyError, TypeError):
        return False
    names = _words(scopes)
    if isinstance(claims, dict):
        for claim in ("cognito:groups", "groups", "scope", "scp"):
            names |= _words(claims.get(claim))
    return group in names
