"""The Responses API (RSP-2..RSP-5): POST /v1/responses (stores the turn, calls the model; streamed
through `stream_handler`), GET/DELETE /v1/responses/{response_id}, GET .../input_items, POST
/v1/responses/input_tokens, POST /v1/responses/compact (RSP-10)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chat_core.http import responses_routes as routes
from chat_core.http.api import Response, build_app, caller, idempotency_key, json_response
from chat_core.http.query import Query
from chat_core.http.responses_api import ResponseCreateIn
from chat_core.http.responses_compact import CompactIn, compact_response
from chat_core.http.responses_turn import create_response
from chat_core.http.sink import StreamSink
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app(openai_errors=True)
# Where the events of a streamed answer go, when the invocation came through `stream_handler`.
sink = StreamSink()


@app.post("/v1/responses")
def create(body: ResponseCreateIn) -> Response[Any]:
    emit = sink.emit if body.stream else None
    owner = caller(app)
    answer = create_response(
        owner, body, idempotency_key=idempotency_key(app), context=app.lambda_context, emit=emit
    )
    if answer.streamed:
        return Response(200, "text/event-stream", "", answer.headers)
    return json_response(answer.status, answer.body, answer.headers)


@app.post("/v1/responses/compact")
def compact(body: CompactIn) -> Response[Any]:
    return json_response(200, compact_response(caller(app), body, idempotency_key(app), app.lambda_context))


@app.post("/v1/responses/input_tokens")
def input_tokens(body: ResponseCreateIn) -> Response[Any]:
    return json_response(200, routes.input_tokens(caller(app), body))


@app.get("/v1/responses/<response_id>")
def retrieve(response_id: str) -> Response[Any]:
    return json_response(200, routes.retrieve_response(caller(app), response_id))


@app.delete("/v1/responses/<response_id>")
def delete(response_id: str) -> Response[Any]:
    return json_response(200, routes.delete_response(caller(app), response_id))


@app.get("/v1/responses/<response_id>/input_items")
def input_items(
    response_id: str,
    after: Annotated[str | None, Query(min_length=1, max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Annotated[Literal["asc", "desc"], Query()] = "desc",
) -> Response[Any]:
    page = routes.input_items(caller(app), response_id, after=after, limit=limit, order=order)
    return json_response(200, page)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer


#: The streaming entry (RSP-5): like `lambda_handler`, and the answer's events go to `emit` as they
#: are produced. The local server calls it; deployed, functions/stream_chat serves the same route.
stream_handler = sink.entry(lambda_handler)
