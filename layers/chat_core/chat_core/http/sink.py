"""Where a streamed answer's chunks go (API-14) during one invocation of a resolver-based handler."""

from __future__ import annotations

import threading
from collections.abc import Callable
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
