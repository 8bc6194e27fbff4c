"""moto's server pieces, made cheap per request: connections kept alive, the service found once per host.

The embedded store answers every AWS call of the local server (its handlers, stream and queue pollers,
snapshots) over loopback HTTP. As moto ships them, each call opened a new connection and a new server
thread and waited 10 ms after its answer (werkzeug's development server closes every connection and
drains it first), and the dispatcher listed moto's package folder (about 150 `isdir` calls) to find the
service of the request's host: together about a quarter of an idle local server's CPU. Imported by
chat_local.dynamodb when the embedded server starts (moto stays a lazy import).
"""

from __future__ import annotations

import logging
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler
from werkzeug.wsgi import LimitedStream

log = logging.getLogger("chat_local.dynamodb")


class Dispatcher(DomainDispatcherApplication):
    """moto's dispatcher with the service of each host remembered: the answer depends only on the host
    (moto's modules and URL patterns are fixed once it is imported)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backends: dict[str | None, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        # Called under the dispatcher's lock (get_application).
        if host not in self._backends:
            self._backends[host] = super().get_backend_for_host(host)
        return self._backends[host]


class KeepAliveHandler(MotoRequestHandler):
    """moto's request handler on HTTP/1.1 with keep-alive.

    werkzeug's development server closes every connection (Python's http.server cannot tell where an
    unread request body ends) and, after each answer, waits 10 ms for stray body bytes to discard. Here a
    request that states its length (every AWS SDK request does; one without a body has length 0) is read
    to that length after the answer, so the connection goes on at the next request line; a chunked
    request still closes it. moto answers from memory, so the answer is sent whole, with its length.
    The environ is werkzeug's and moto's (`make_environ`), as before.
    """

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, the second waits for the client's delayed ACK.
    disable_nagle_algorithm = True

    def run_wsgi(self) -> None:
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        environ = self.make_environ()
        length = environ.get("CONTENT_LENGTH") or "0"
        body: LimitedStream | None = None
        if "wsgi.input_terminated" in environ or not length.isdigit():
            self.close_connection = True
        else:
            body = LimitedStream(environ["wsgi.input"], int(length))
            environ["wsgi.input"] = body
        status, headers, data = self._answer(environ)
        if body is not None:
            body.exhaust()
        code = int(status.split(None, 1)[0])
        self.send_response(code, status.partition(" ")[2])
        for key, value in headers:
            lower = key.lower()
            # A HEAD answer states the length of the body it leaves out; any other is sent as it is.
            if lower in ("connection", "transfer-encoding") or (
                lower == "content-length" and self.command != "HEAD"
            ):
                continue
            self.send_header(key, value)
        if self.command != "HEAD" and not (100 <= code < 200 or code in (204, 304)):
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and data:
            self.wfile.write(data)

    def _answer(self, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
        started: list[Any] = []
        chunks: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, headers]
            return chunks.append

        try:
            answer = self.server.app(environ, start_response)
            try:
                chunks.extend(answer)
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        except Exception:
            log.exception("the embedded AWS services failed on %s %s", self.command, self.path)
            self.close_connection = True
            return "500 Internal Server Error", [("Content-Type", "text/plain")], b"Internal Server Error"
        return started[0], started[1], b"".join(chunks)
