"""Where a streamed answer's chunks go (API-14) during one invocation of a resolver-based handler."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

Emit = Callable[[dict[str, Any]], None]


class StreamSink:
    """Where a streamed answer's chunks go during one invocation of a resolver-based handler, per thread.

    A handler module makes one, reads `sink.emit` in its route (None unless the invocation came through
    the streaming entry) and exposes `stream_handler = sink.entry(lambda_handler)`: the local server
    calls `stream_handler(event, context, emit)` to stream a request's answer as it is produced.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def emit(self) -> Emit | None:
        emit: Emit | None = getattr(self._local, "emit", None)
        return emit

    def entry(
        self, handler: Callable[[dict[str, Any], Any], dict[str, Any]]
    ) -> Callable[[dict[str, Any], Any, Emit], dict[str, Any]]:
        def stream_handler(event: dict[str, Any], context: Any, emit: Emit) -> dict[str, Any]:
            self._local.emit = emit
            try:
                return handler(event, context)
            finally:
                self._local.emit = None

        return stream_handler


def sse(chunk: Mapping[str, Any]) -> bytes:
    """One Server-Sent Event carrying `chunk` as JSON; a Responses event (RSP-5: a `type` and a
    `sequence_number`) is named by its type, as OpenAI names them."""
    data = b"data: " + json.dumps(chunk, ensure_ascii=False).encode("utf-8") + b"\n\n"
    kind = chunk.get("type")
    if isinstance(kind, str) and "sequence_number" in chunk:
        return b"event: " + kind.encode("utf-8") + b"\n" + data
    return data


class SseResponse:
    """API-14: a streamed answer written on an HTTP/1.1 request handler as Server-Sent Events over chunked
    transfer, each event flushed as it is emitted. The headers go out with the first event (so an answer
    that fails before it can still be plain JSON); one stream per connection. Used by the local server
    and by the deployed streaming function."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler
        self.opened = False

    def _write(self, data: bytes) -> None:
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def emit(self, chunk: dict[str, Any]) -> None:
        if not self.opened:
            handler = self.handler
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Transfer-Encoding", "chunked")
            # One stream per connection: the connection closes when the stream ends.
            handler.send_header("Connection", "close")
            if chunk.get("conversation"):
                handler.send_header("X-Conversation-Id", str(chunk["conversation"]))
            handler.end_headers()
            self.opened = True
        self._write(sse(chunk))

    def finish(self) -> None:
        """`data: [DONE]` and the last chunk; a client that went away is not an error here."""
        try:
            self._write(b"data: [DONE]\n\n")
            self.handler.wfile.write(b"0\r\n\r\n")
            self.handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.handler.close_connection = True
