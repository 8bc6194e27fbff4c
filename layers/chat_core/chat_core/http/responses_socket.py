"""RSP-12: WebSocket mode of the Responses API: each `response.create` event is one POST /v1/responses
(`responses_turn.create_response`, streamed), its events sent back on the socket.

A socket serves its responses one after another. A continuation sends `previous_response_id` and only
its new input: a stored response is found in the table, as over HTTP; the socket also keeps the last
`store: false` response it answered (its input and output, `chat.socket_state`), so a `store: false` chain
continues from that without anything stored: the turn is then an ordinary `store: false` request whose
input is the kept items followed by the new ones. A `previous_response_id` the socket does not keep, on
a `store: false` request, is `previous_response_not_found`; a turn that fails evicts what was kept, so a
retry cannot continue from a state the client may not share. An event that is not a JSON object of a
known type is answered with an `error` event and the connection is closed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from chat_core.chat import socket_state
from chat_core.chat.socket_state import SocketRecord
from chat_core.errors import ChatError, InvalidInput, NotFound
from chat_core.http.api import openai_error_body, openai_status
from chat_core.http.responses_api import ResponseCreateIn
from chat_core.http.responses_turn import ResponseAnswer, create_response
from chat_core.http.statuses import status_for

Send = Callable[[dict[str, Any]], None]

#: The client events served; `response.create`'s body is POST /v1/responses' without the transport's
#: fields (every answer streams on the socket).
CREATE: Final = "response.create"
TRANSPORT_FIELDS: Final = ("type", "stream", "stream_options", "background")


class PreviousResponseNotFound(NotFound):
    code = "previous_response_not_found"


@dataclass(frozen=True)
class Turn:
    """What a message did: whether the connection stays open, and the Response it answered (if any)."""

    keep_open: bool
    response: dict[str, Any] | None = None


def error_event(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    """OpenAI's `error` server event: the HTTP error body, its status beside it."""
    status = openai_status(status)
    return {"type": "error", "status": status, **openai_error_body(status, code, message, param)}


def _chat_error_event(exc: ChatError) -> dict[str, Any]:
    field = exc.details.get("field")
    param = str(field).removeprefix("body.") if field is not None else None
    status = 400 if isinstance(exc, PreviousResponseNotFound) else status_for(exc)
    return error_event(status, exc.code, exc.message, param)


def _parse(message: str | bytes | None) -> dict[str, Any] | None:
    try:
        event = json.loads(message or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    return event if isinstance(event, dict) else None


def _request(event: Mapping[str, Any]) -> ResponseCreateIn:
    body = {k: v for k, v in event.items() if k not in TRANSPORT_FIELDS}
    try:
        request = ResponseCreateIn.model_validate_json(json.dumps(body))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise InvalidInput(f"invalid request: {where}: {first.get('msg', 'invalid')}", field=where) from exc
    return request.model_copy(update={"stream": True})


def _items(value: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value)


def _continued(socket: SocketRecord, request: ResponseCreateIn) -> tuple[ResponseCreateIn, str | None]:
    """The request as the HTTP route takes it, and the id it continues from the socket's memory (None
    when it continues nothing kept here)."""
    previous = request.previous_response_id
    if previous is None:
        return request, None
    if previous == socket.kept_id and socket.kept_items is not None:
        whole = [*socket.kept_items, *_items(request.input)]
        return request.model_copy(update={"input": whole, "previous_response_id": None}), previous
    if request.store is False:
        raise PreviousResponseNotFound(
            f"Previous response with id '{previous}' not found.", field="previous_response_id"
        )
    return request, None


def _shown(send: Send, previous_id: str | None) -> Send:
    """`send`, with the Response objects naming the response they continue (the route saw none)."""
    if previous_id is None:
        return send

    def shown(event: dict[str, Any]) -> None:
        response = event.get("response")
        if isinstance(response, dict):
            event = {**event, "response": {**response, "previous_response_id": previous_id}}
        send(event)

    return shown


def socket_turn(
    socket: SocketRecord, message: str | bytes | None, send: Send, *, context: Any = None
) -> Turn:
    """One client message on an open socket (see the module)."""
    event = _parse(message)
    if event is None or event.get("type") != CREATE:
        kind = event.get("type") if event is not None else None
        what = f"unknown event type {kind!r}" if event is not None else "a message is one JSON object"
        send(error_event(400, "invalid_event", f"{what}; the client event served is {CREATE}", "type"))
        return Turn(keep_open=False)
    try:
        request, previous_id = _continued(socket, _request(event))
        answer: ResponseAnswer = create_response(
            socket.owner, request, context=context, emit=_shown(send, previous_id)
        )
    except ChatError as exc:
        socket_state.evict(socket)
        send(_chat_error_event(exc))
        return Turn(keep_open=True)
    if not answer.streamed:
        socket_state.evict(socket)
        error = answer.body.get("error") or {}
        send(
            error_event(
                answer.status,
                str(error.get("code") or "error"),
                str(error.get("message")),
                error.get("param"),
            )
        )
        return Turn(keep_open=True)
    response = {**answer.body, "previous_response_id": previous_id or answer.body.get("previous_response_id")}
    if response.get("status") == "failed":
        socket_state.evict(socket)
    elif request.store is False:
        socket_state.keep(socket, str(response["id"]), [*_items(request.input), *response["output"]])
    else:
        socket_state.keep(socket, str(response["id"]), None)
    return Turn(keep_open=True, response=response)
