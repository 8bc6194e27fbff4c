"""POST /messages: store the user's message, ask the model, store the reply (seed 003, API-1..API-6)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import post
from chat_core.http import request_commands as commands
from chat_core.http.api import Response, build_app, caller, idempotency_key, json_response, retry_after_header
from chat_core.http.schemas import PostMessageIn
from chat_core.http.sink import StreamSink
from chat_core.http.statuses import post_status
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()
# Where the chunks of a streamed answer go, when the invocation came through `stream_handler`.
sink = StreamSink()


@app.post("/messages")
def post_message(body: PostMessageIn) -> Response[Any]:
    accept = app.current_event.headers.get("accept") or ""
    emit = sink.emit if "text/event-stream" in accept else None
    owner = caller(app)
    outcome = post.post_message(
        owner,
        commands.post_command(body),
        idempotency_key=idempotency_key(app),
        context=app.lambda_context,
        on_chunk=emit,
    )
    # 503 reply_not_stored carries the model's reply; Retry-After as on every "try again" answer.
    headers = retry_after_header() if not outcome.reply_stored else None
    status = post_status(outcome)
    if emit is not None and outcome.body.get("assistant_message") is not None and status != 502:
        # API-14: the chunks went out as the model produced them; the stored turn closes the stream.
        emit({"object": "chat.turn", "status": status, **outcome.body})
        return Response(200, "text/event-stream", "", headers)
    return json_response(status, outcome.body, headers)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer


#: The streaming entry (API-14): like `lambda_handler`, and the answer's chunks go to `emit` as they
#: are produced. The local server calls it; deployed, functions/stream_chat serves the same routes.
stream_handler = sink.entry(lambda_handler)
