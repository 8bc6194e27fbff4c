"""Conversation ids in OpenAI's form (RSP-6): `conv_<id>` on the `/v1` routes, bare on ours, and either
form names the same conversation on both sides.

A conversation is stored under its bare id; the prefix is only how the `/v1` routes show it, as their
responses are `resp_...` and their items `msg_...`. An incoming id loses the prefix at the edge: in a
path (`bare_event`, before the route is matched) and in a body (`schemas.ConversationId`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

PREFIX: Final = "conv_"
_IN_PATH: Final = re.compile(r"(/conversations/)conv_(?=[^/]+)")


def openai_id(conversation_id: str) -> str:
    """The id as the `/v1` routes show it."""
    return conversation_id if conversation_id.startswith(PREFIX) else PREFIX + conversation_id


def bare_id(value: Any) -> Any:
    """The stored id of either form (anything else is left to validation)."""
    return value.removeprefix(PREFIX) if isinstance(value, str) else value


def bare_path(path: str) -> str:
    return _IN_PATH.sub(r"\1", path)


def bare_event(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """An API Gateway HTTP event whose path names a conversation in OpenAI's form, with the bare id
    (the same event when it names none)."""
    path = event.get("rawPath")
    if not isinstance(path, str) or bare_path(path) == path:
        return event
    bare: dict[str, Any] = {**event, "rawPath": bare_path(path)}
    http = (event.get("requestContext") or {}).get("http")
    if isinstance(http, Mapping) and isinstance(http.get("path"), str):
        bare["requestContext"] = {
            **event["requestContext"],
            "http": {**http, "path": bare_path(http["path"])},
        }
    params = event.get("pathParameters")
    if isinstance(params, Mapping) and "conversation_id" in params:
        bare["pathParameters"] = {**params, "conversation_id": bare_id(params["conversation_id"])}
    return bare
