"""The Conversations API (RSP-6): a Responses conversation is one of our conversations. POST
/v1/conversations, GET/POST/DELETE /v1/conversations/{conversation_id}, GET/POST
/v1/conversations/{conversation_id}/items, GET/DELETE /v1/conversations/{conversation_id}/items/{item_id}."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chat_core.chat import responses
from chat_core.http import responses_routes as routes
from chat_core.http.api import Response, build_app, caller, idempotency_key, json_response
from chat_core.http.openai_conversations import (
    ConversationCreateIn,
    ConversationItemsIn,
    ConversationUpdateIn,
    conversation_object,
    create_conversation,
    update_metadata,
)
from chat_core.http.query import Query
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app(openai_errors=True)


@app.post("/v1/conversations")
def create(body: ConversationCreateIn) -> Response[Any]:
    return json_response(200, create_conversation(caller(app), body, idempotency_key(app)))


@app.get("/v1/conversations/<conversation_id>")
def retrieve(conversation_id: str) -> Response[Any]:
    return json_response(200, conversation_object(responses.live(caller(app), conversation_id)))


@app.post("/v1/conversations/<conversation_id>")
def update(conversation_id: str, body: ConversationUpdateIn) -> Response[Any]:
    return json_response(200, update_metadata(caller(app), conversation_id, body))


@app.delete("/v1/conversations/<conversation_id>")
def delete(conversation_id: str) -> Response[Any]:
    return json_response(200, routes.delete_conversation(caller(app), conversation_id))


@app.get("/v1/conversations/<conversation_id>/items")
def list_items(
    conversation_id: str,
    after: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Annotated[Literal["asc", "desc"], Query()] = "desc",
) -> Response[Any]:
    page = routes.list_items(caller(app), conversation_id, after=after, limit=limit, order=order)
    return json_response(200, page)


@app.post("/v1/conversations/<conversation_id>/items")
def add_items(conversation_id: str, body: ConversationItemsIn) -> Response[Any]:
    return json_response(200, routes.add_items(caller(app), conversation_id, body, idempotency_key(app)))


@app.get("/v1/conversations/<conversation_id>/items/<item_id>")
def get_item(conversation_id: str, item_id: str) -> Response[Any]:
    _, item = responses.find_item(caller(app), conversation_id, item_id)
    return json_response(200, item)


@app.delete("/v1/conversations/<conversation_id>/items/<item_id>")
def delete_item(conversation_id: str, item_id: str) -> Response[Any]:
    return json_response(200, routes.delete_item(caller(app), conversation_id, item_id))


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
