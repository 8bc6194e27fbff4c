"""Load each functions/<name>/app.py by path under its own module name (they are all called app.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

from tests.support import events
from tests.support.lambda_context import LambdaContext

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
NAMES = (
    "create_conversation",
    "post_message",
    "list_conversations",
    "get_conversation",
    "delete_conversation",
    "build_window",
)


_LOADING = threading.RLock()
_LOADED: dict[str, ModuleType] = {}


def load(name: str) -> ModuleType:
    """functions/<name>/app.py as module `chat_fn_<name>` (loaded once per test session)."""
    module_name = f"chat_fn_{name}"
    found = _LOADED.get(module_name)
    if found is not None and sys.modules.get(module_name) is found:
        return found
    # Tests call handlers from several threads at once: the first of them imports, the others wait for a
    # whole module (sys.modules holds it half-run while it executes).
    with _LOADING:
        found = _LOADED.get(module_name)
        if found is not None and sys.modules.get(module_name) is found:
            return found
        spec = importlib.util.spec_from_file_location(module_name, FUNCTIONS / name / "app.py")
        if spec is None or spec.loader is None:
            raise FileNotFoundError(f"no handler for {name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
        _LOADED[module_name] = module
        return module


@dataclass
class Answer:
    """A handler's HTTP answer: status, headers and the body parsed as JSON (None when empty)."""

    status: int
    headers: dict[str, str]
    body: Any
    raw: dict[str, Any]

    @property
    def error_code(self) -> str | None:
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error.get("code") if isinstance(error, dict) else None


def invoke(name: str, event: dict[str, Any], context: LambdaContext | None = None) -> Answer:
    """Run the handler of function `name` with `event` as Lambda would, and parse its answer."""
    raw = load(name).lambda_handler(event, context or LambdaContext(function_name=name))
    text = raw.get("body") or ""
    body = json.loads(text) if text else None
    return Answer(status=int(raw["statusCode"]), headers=dict(raw.get("headers") or {}), body=body, raw=raw)


# -- one call per route, for tests that are about behaviour rather than events ----------------------------


def post(
    content: str,
    conversation_id: str | None = None,
    *,
    user: str | None = "alice",
    idempotency_key: str | None = None,
    context: LambdaContext | None = None,
    **fields: Any,
) -> Answer:
    body: dict[str, Any] = {"content": content, **fields}
    if conversation_id is not None:
        body["conversation_id"] = conversation_id
    event = events.post_message(body, user=user, idempotency_key=idempotency_key)
    return invoke("post_message", event, context)


def create(user: str | None = "alice", **fields: Any) -> Answer:
    return invoke("create_conversation", events.create_conversation(fields, user=user))


def detail(conversation_id: str, *, user: str | None = "alice", **query: str) -> Answer:
    return invoke("get_conversation", events.get_conversation(conversation_id, query or None, user=user))


def listing(*, user: str | None = "alice", **query: str) -> Answer:
    return invoke("list_conversations", events.list_conversations(query or None, user=user))


def delete(conversation_id: str, *, user: str | None = "alice") -> Answer:
    return invoke("delete_conversation", events.delete_conversation(conversation_id, user=user))


def update(conversation_id: str, *, user: str | None = "alice", **fields: Any) -> Answer:
    """PATCH /conversations/{id} with `fields` as the body."""
    event = events.http_event(
        "PATCH",
        f"/conversations/{conversation_id}",
        route="/conversations/{conversation_id}",
        path_parameters={"conversation_id": conversation_id},
        body=fields,
        user=user,
    )
    return invoke("update_conversation", event)


def window(conversation_id: str, content: str, *, user: str | None = "alice", **fields: Any) -> Answer:
    body = {"content": content, **fields}
    return invoke("build_window", events.build_window(conversation_id, body, user=user))


# -- API-18: branches and history ---------------------------------------------------------------------


def _on_message(
    name: str,
    method: str,
    conversation_id: str,
    message_id: str,
    suffix: str,
    body: Any,
    user: str | None,
    idempotency_key: str | None = None,
) -> Answer:
    route = "/conversations/{conversation_id}/messages/{message_id}" + suffix
    event = events.http_event(
        method,
        f"/conversations/{conversation_id}/messages/{message_id}{suffix}",
        route=route,
        path_parameters={"conversation_id": conversation_id, "message_id": message_id},
        body=body,
        user=user,
        headers={"Idempotency-Key": idempotency_key} if idempotency_key else None,
    )
    return invoke(name, event)


def edit(
    conversation_id: str,
    message_id: str,
    content: Any,
    *,
    user: str | None = "alice",
    idempotency_key: str | None = None,
    **fields: Any,
) -> Answer:
    """POST /conversations/{id}/messages/{message_id}/edit."""
    body = {"content": content, **fields}
    return _on_message(
        "edit_message", "POST", conversation_id, message_id, "/edit", body, user, idempotency_key
    )


def regenerate(
    conversation_id: str,
    message_id: str,
    *,
    user: str | None = "alice",
    idempotency_key: str | None = None,
    **fields: Any,
) -> Answer:
    """POST /conversations/{id}/messages/{message_id}/regenerate."""
    return _on_message(
        "regenerate_message",
        "POST",
        conversation_id,
        message_id,
        "/regenerate",
        fields,
        user,
        idempotency_key,
    )


def delete_message(conversation_id: str, message_id: str, *, user: str | None = "alice") -> Answer:
    """DELETE /conversations/{id}/messages/{message_id}."""
    return _on_message("delete_message", "DELETE", conversation_id, message_id, "", events._NO_BODY, user)


def append(
    conversation_id: str,
    messages: list[dict[str, Any]],
    *,
    user: str | None = "alice",
    idempotency_key: str | None = None,
) -> Answer:
    """POST /conversations/{id}/messages (no model call)."""
    event = events.http_event(
        "POST",
        f"/conversations/{conversation_id}/messages",
        route="/conversations/{conversation_id}/messages",
        path_parameters={"conversation_id": conversation_id},
        body={"messages": messages},
        user=user,
        headers={"Idempotency-Key": idempotency_key} if idempotency_key else None,
    )
    return invoke("append_messages", event)


def tree(conversation_id: str, *, user: str | None = "alice", **query: str) -> Answer:
    """GET /conversations/{id}/tree."""
    event = events.http_event(
        "GET",
        f"/conversations/{conversation_id}/tree",
        route="/conversations/{conversation_id}/tree",
        path_parameters={"conversation_id": conversation_id},
        query=query or None,
        user=user,
    )
    return invoke("get_tree", event)


def switch(conversation_id: str, message_id: str, *, user: str | None = "alice") -> Answer:
    """PUT /conversations/{id}/active."""
    event = events.http_event(
        "PUT",
        f"/conversations/{conversation_id}/active",
        route="/conversations/{conversation_id}/active",
        path_parameters={"conversation_id": conversation_id},
        body={"message_id": message_id},
        user=user,
    )
    return invoke("set_active", event)


# -- API-21: conversations named by a caller-chosen key ----------------------------------------------------


def put_key(key: str, body: Any = None, *, user: str | None = "alice") -> Answer:
    """PUT /conversation-keys/{key} (no body when `body` is None)."""
    extra = {"body": body} if body is not None else {}
    event = events.http_event(
        "PUT",
        f"/conversation-keys/{quote(key, safe='')}",
        route="/conversation-keys/{key}",
        path_parameters={"key": key},
        user=user,
        **extra,
    )
    return invoke("create_conversation", event)


def get_key(key: str, *, user: str | None = "alice", **query: str) -> Answer:
    """GET /conversation-keys/{key}."""
    event = events.http_event(
        "GET",
        f"/conversation-keys/{quote(key, safe='')}",
        route="/conversation-keys/{key}",
        path_parameters={"key": key},
        query=query or None,
        user=user,
    )
    return invoke("get_conversation", event)


# -- COST-3/COST-4: usage and budgets ---------------------------------------------------------------------


def _as_member(event: dict[str, Any], groups: str | None) -> dict[str, Any]:
    """The event with a `cognito:groups` claim as API Gateway hands a list claim over ("[a b]")."""
    if groups is not None:
        event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = groups
    return event


def usage(*, user: str | None = "alice", groups: str | None = None, **query: str) -> Answer:
    """GET /usage (`from_` for the `from` parameter)."""
    if "from_" in query:
        query["from"] = query.pop("from_")
    event = events.http_event("GET", "/usage", query=query or None, user=user)
    return invoke("get_usage", _as_member(event, groups))


def set_budget(target: str, body: Any, *, user: str | None = "alice", groups: str | None = None) -> Answer:
    """PUT /budgets/{user_id}."""
    event = events.http_event(
        "PUT",
        f"/budgets/{quote(target, safe='')}",
        route="/budgets/{user_id}",
        path_parameters={"user_id": target},
        body=body,
        user=user,
    )
    return invoke("set_budget", _as_member(event, groups))
