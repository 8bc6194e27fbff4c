"""POST /v1/chat/completions: the Chat Completions wire format over a stored conversation (API-13)."""

from __future__ import annotations

from typing import Any

from chat_core.http import openai
from chat_core.http.api import Response, build_app, caller, idempotency_key, json_response
from chat_core.http.sink import StreamSink
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app(openai_errors=True)
# Where the chunks of a streamed answer go, when the invocation came through `stream_handler`.
sink = StreamSink()


@app.post("/v1/chat/completions")
def chat_completions(body: openai.ChatCompletionIn) -> Response[Any]:
    emit = sink.emit if body.stream else None
    owner = caller(app)
    answer = openai.chat_completion(
        owner,
        body,
        conversation_header=app.current_event.headers.get(openai.CONVERSATION_HEADER.lower()),
        idempotency_key=idempotency_key(app),
        context=app.lambda_context,
        emit=emit,
    )
    if emit is not None and answer.status == 200:
        # The answer went out as chunks; this response only closes the stream.
        return Response(200, "text/event-stream", "", answer.headers)
    return json_response(answer.status, answer.body, answer.headers)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer


#: The streaming entry (API-14): like `lambda_handler`, and the answer's chunks go to `emit` as they
#: are produced. The local server calls it; deployed, functions/stream_chat serves the same routes.
stream_handler = sink.entry(lambda_handler)
