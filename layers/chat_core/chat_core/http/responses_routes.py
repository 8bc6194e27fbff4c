"""The Responses and Conversations routes that answer JSON (RSP-3, RSP-6), shared by their function
(functions/responses, functions/openai_conversations) and the streaming function, which serves every
`/v1` route so that one base URL works for the SDKs (RSP-5)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from chat_core.chat import response_items, responses
from chat_core.errors import InvalidInput, NotFound
from chat_core.http.conversation_ids import bare_path, openai_id
from chat_core.http.models_list import models_list
from chat_core.http.openai_conversations import (
    ConversationCreateIn,
    ConversationItemsIn,
    ConversationUpdateIn,
    conversation_object,
    create_conversation,
    update_metadata,
)
from chat_core.http.responses_api import ResponseCreateIn, list_page, response_object


def retrieve_response(owner: str, response_id: str) -> dict[str, Any]:
    stored = responses.get_response(owner, response_id)
    conversation_id = stored.conversation.conversation_id
    output = response_items.message_items(stored.answer) if stored.answer.get("status") != "error" else []
    return response_object(
        conversation_id, stored.answer, output, settings=stored.settings, previous_id=stored.previous_id
    )


def delete_response(owner: str, response_id: str) -> dict[str, Any]:
    responses.delete_response(owner, response_id)
    return {"id": response_id, "object": "response", "deleted": True}


def input_items(owner: str, response_id: str, *, after: str | None, limit: int, order: str) -> dict[str, Any]:
    stored = responses.get_response(owner, response_id)
    return list_page(response_items.items_of(stored.inputs), after=after, limit=limit, order=order)


def input_tokens(owner: str, request: ResponseCreateIn) -> dict[str, Any]:
    """The input counted with its context (RSP-3): no model call, nothing written."""
    request.unsupported()
    if request.input is None:
        return {"object": "response.input_tokens", "input_tokens": 0, "estimate": False}
    plan = responses.plan_response(
        owner,
        response_items.input_messages(request.input),
        previous_response_id=request.previous_response_id,
        conversation_id=request.conversation_id(),
        instructions=request.instructions,
    )
    model = request.model or (plan.conversation.model if plan.conversation else None) or "default"
    tokens, exact = responses.count_input(owner, plan, model)
    return {"object": "response.input_tokens", "input_tokens": tokens, "estimate": not exact}


def delete_conversation(owner: str, conversation_id: str) -> dict[str, Any]:
    responses.live(owner, conversation_id)
    responses.forget(owner, conversation_id)
    return {"id": openai_id(conversation_id), "object": "conversation.deleted", "deleted": True}


def list_items(
    owner: str, conversation_id: str, *, after: str | None, limit: int, order: str
) -> dict[str, Any]:
    items = responses.conversation_items(owner, conversation_id)
    return list_page(items, after=after, limit=limit, order=order)


def add_items(
    owner: str, conversation_id: str, request: ConversationItemsIn, idempotency_key: str | None
) -> dict[str, Any]:
    messages = response_items.input_messages(request.items).messages
    added = responses.append_items(owner, conversation_id, messages, idempotency_key)
    return list_page(added, after=None, limit=max(1, len(added)), order="asc")


def delete_item(owner: str, conversation_id: str, item_id: str) -> dict[str, Any]:
    responses.delete_item(owner, conversation_id, item_id)
    return conversation_object(responses.live(owner, conversation_id))


# --- one dispatcher, for the streaming function ------------------------------------------------------


#: A request as the dispatcher sees it: the caller, the path's parameters, the query, the body, the
#: Idempotency-Key.
Route = Callable[[str, Mapping[str, str], Mapping[str, str], bytes, str | None], dict[str, Any]]
_ID: Final = r"([^/]+)"


def _body(model: type[BaseModel], body: bytes) -> Any:
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise InvalidInput(f"invalid request: {where}: {first.get('msg', 'invalid')}", field=where) from exc


def _page(query: Mapping[str, str]) -> dict[str, Any]:
    try:
        limit = int(query.get("limit", "20"))
    except ValueError as exc:
        raise InvalidInput("limit: an integer from 1 to 100", field="limit") from exc
    return {"after": query.get("after"), "limit": limit, "order": query.get("order", "desc")}


ROUTES: Final[tuple[tuple[str, re.Pattern[str], Route], ...]] = (
    ("GET", re.compile(r"^/v1/models$"), lambda o, p, q, b, k: models_list()),
    (
        "POST",
        re.compile(r"^/v1/responses/input_tokens$"),
        lambda o, p, q, b, k: input_tokens(o, _body(ResponseCreateIn, b)),
    ),
    ("GET", re.compile(rf"^/v1/responses/{_ID}$"), lambda o, p, q, b, k: retrieve_response(o, p["1"])),
    ("DELETE", re.compile(rf"^/v1/responses/{_ID}$"), lambda o, p, q, b, k: delete_response(o, p["1"])),
    (
        "GET",
        re.compile(rf"^/v1/responses/{_ID}/input_items$"),
        lambda o, p, q, b, k: input_items(o, p["1"], **_page(q)),
    ),
    (
        "POST",
        re.compile(r"^/v1/conversations$"),
        lambda o, p, q, b, k: create_conversation(o, _body(ConversationCreateIn, b), k),
    ),
    (
        "GET",
        re.compile(rf"^/v1/conversations/{_ID}$"),
        lambda o, p, q, b, k: conversation_object(responses.live(o, p["1"])),
    ),
    (
        "POST",
        re.compile(rf"^/v1/conversations/{_ID}$"),
        lambda o, p, q, b, k: update_metadata(o, p["1"], _body(ConversationUpdateIn, b)),
    ),
    (
        "DELETE",
        re.compile(rf"^/v1/conversations/{_ID}$"),
        lambda o, p, q, b, k: delete_conversation(o, p["1"]),
    ),
    (
        "GET",
        re.compile(rf"^/v1/conversations/{_ID}/items$"),
        lambda o, p, q, b, k: list_items(o, p["1"], **_page(q)),
    ),
    (
        "POST",
        re.compile(rf"^/v1/conversations/{_ID}/items$"),
        lambda o, p, q, b, k: add_items(o, p["1"], _body(ConversationItemsIn, b), k),
    ),
    (
        "GET",
        re.compile(rf"^/v1/conversations/{_ID}/items/{_ID}$"),
        lambda o, p, q, b, k: responses.find_item(o, p["1"], p["2"])[1],
    ),
    (
        "DELETE",
        re.compile(rf"^/v1/conversations/{_ID}/items/{_ID}$"),
        lambda o, p, q, b, k: delete_item(o, p["1"], p["2"]),
    ),
)


class RouteNotFound(NotFound):
    code = "route_not_found"


def dispatch(
    method: str,
    path: str,
    owner: str,
    query: Mapping[str, str],
    body: bytes,
    idempotency_key: str | None,
) -> dict[str, Any]:
    """One JSON `/v1` request (not POST /v1/responses or /v1/chat/completions): its 200 answer; a
    ChatError for a refusal (the caller shapes it as OpenAI's error)."""
    for verb, pattern, route in ROUTES:
        found = pattern.fullmatch(bare_path(path))
        if verb == method and found is not None:
            params = {str(i + 1): value for i, value in enumerate(found.groups())}
            return route(owner, params, query, body, idempotency_key)
    raise RouteNotFound(f"no route for {method} {path}")
