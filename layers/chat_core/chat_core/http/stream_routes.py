"""The routes whose answers stream (API-14) outside an API Gateway resolver: what the streaming function
behind a function URL serves (`functions/stream_chat`), with the same models, rules and error shapes as
the resolver-based handlers of the same routes. It serves every other `/v1` route too (RSP-5), so that
one base URL works for the OpenAI SDKs, streaming or not.

`serve` answers one request: chunks go to `emit` as the model produces them (the caller writes them as
Server-Sent Events); the returned answer is the response when nothing was streamed (an error, a JSON
answer), or `streamed=True` when the chunks went out and only the stream's end remains to be written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from chat_core.chat import post
from chat_core.errors import ChatError, InvalidInput
from chat_core.http.api import MAX_IDEMPOTENCY_KEY_CHARS, error_body, openai_error_body, openai_status
from chat_core.http.openai import CONVERSATION_HEADER, ChatCompletionIn, chat_completion
from chat_core.http.request_commands import post_command
from chat_core.http.responses_api import ResponseCreateIn
from chat_core.http.responses_compact import CompactIn, compact_response
from chat_core.http.responses_routes import dispatch
from chat_core.http.responses_turn import create_response
from chat_core.http.schemas import PostMessageIn
from chat_core.http.statuses import post_status, status_for

Emit = Callable[[dict[str, Any]], None]
COMPLETIONS: Final = "/v1/chat/completions"
RESPONSES: Final = "/v1/responses"
MESSAGES: Final = "/messages"
#: JSON, not streamed; served here rather than by `dispatch` since it calls the model (RSP-10).
COMPACT: Final = "/v1/responses/compact"
ROUTES: Final = (COMPLETIONS, RESPONSES, MESSAGES)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    streamed: bool = False


def _error(path: str, status: int, code: str, message: str, param: str | None = None) -> Answer:
    if path.startswith("/v1/"):
        status = openai_status(status)
        return Answer(status, openai_error_body(status, code, message, param))
    return Answer(status, error_body(code, message))


def _validated(model: Any, body: bytes) -> Any:
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if "[" not in str(p)) or "body"
        raise InvalidInput(f"invalid request: {where}: {first.get('msg', 'invalid')}", field=where) from exc


def _idempotency_key(headers: Mapping[str, str]) -> str | None:
    value = headers.get("idempotency-key")
    if value is not None and (not value or len(value) > MAX_IDEMPOTENCY_KEY_CHARS or not value.isprintable()):
        raise InvalidInput(
            f"Idempotency-Key must be 1..{MAX_IDEMPOTENCY_KEY_CHARS} printable characters",
            field="Idempotency-Key",
        )
    return value


def serve(
    path: str,
    owner: str,
    headers: Mapping[str, str],
    body: bytes,
    emit: Emit,
    context: Any = None,
    *,
    method: str = "POST",
    query: Mapping[str, str] | None = None,
) -> Answer:
    """One request by `owner` (already authenticated); `headers` with lower-case names."""
    if method != "POST" or (path not in ROUTES and path.startswith("/v1/")):
        return _json_route(method, path, owner, headers, body, query or {})
    if path not in ROUTES:
        return _error(path, 404, "route_not_found", f"no route for POST {path}")
    try:
        if path == RESPONSES:
            created = _validated(ResponseCreateIn, body)
            turn = create_response(
                owner,
                created,
                idempotency_key=_idempotency_key(headers),
                context=context,
                emit=emit if created.stream else None,
            )
            return Answer(turn.status, turn.body, turn.headers, streamed=turn.streamed)
        if path == COMPLETIONS:
            request = _validated(ChatCompletionIn, body)
            answer = chat_completion(
                owner,
                request,
                conversation_header=headers.get(CONVERSATION_HEADER.lower()),
                idempotency_key=_idempotency_key(headers),
                context=context,
                emit=emit if request.stream else None,
            )
            return Answer(
                answer.status,
                answer.body,
                answer.headers,
                streamed=bool(request.stream) and answer.status == 200,
            )
        message = _validated(PostMessageIn, body)
        wants = "text/event-stream" in headers.get("accept", "")
        outcome = post.post_message(
            owner,
            post_command(message),
            idempotency_key=_idempotency_key(headers),
            context=context,
            on_chunk=emit if wants else None,
        )
        status = post_status(outcome)
        if wants and outcome.body.get("assistant_message") is not None and status != 502:
            emit({"object": "chat.turn", "status": status, **outcome.body})
            return Answer(200, streamed=True)
        return Answer(status, outcome.body)
    except ChatError as exc:
        field_name = exc.details.get("field")
        refused = _error(
            path, status_for(exc), exc.code, exc.message, str(field_name) if field_name else None
        )
        if isinstance(exc.details.get("retry_after"), int):
            # COST-4, OPS-4: when the budget's or the rate limit's window resets
            refused.headers["Retry-After"] = str(exc.details["retry_after"])
        return refused


def _json_route(
    method: str, path: str, owner: str, headers: Mapping[str, str], body: bytes, query: Mapping[str, str]
) -> Answer:
    """RSP-5: a `/v1` route that answers JSON (the models, the Responses and Conversations reads and
    writes), as its own function answers it."""
    if not path.startswith("/v1/"):
        return _error(path, 404, "route_not_found", f"no route for {method} {path}")
    try:
        if (method, path) == ("POST", COMPACT):
            request = _validated(CompactIn, body)
            return Answer(200, compact_response(owner, request, _idempotency_key(headers), None))
        return Answer(200, dispatch(method, path, owner, query, body, _idempotency_key(headers)))
    except ChatError as exc:
        field_name = exc.details.get("field")
        return _error(path, status_for(exc), exc.code, exc.message, str(field_name) if field_name else None)
