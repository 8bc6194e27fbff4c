"""The streaming function (API-14, API-16): an HTTP server the Lambda Web Adapter runs behind a function
URL with response streaming. It serves POST /v1/chat/completions (`stream: true`) and POST /messages
(`Accept: text/event-stream`) and writes each chunk as the model produces it.

A function URL has no JWT authorizer, so the caller's JWT (`Authorization: Bearer ...`) is verified
here, as the HTTP API's authorizer would: RS256 against the issuer's keys (JWT_ISSUER), the audience
(JWT_AUDIENCE), expiry. Nothing is served without a valid token. Run locally:
`python functions/stream_chat/app.py` (PORT, default 8080).
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from chat_core.errors import Unauthorized
from chat_core.http.sink import SseResponse

if TYPE_CHECKING:
    from chat_core.http.jwt import JwtVerifier

# The routes (resolver, models, the post path) and Powertools' logger are imported by the first request,
# not at start (PERF-1): the web adapter waits for the readiness check, which needs none of them.

#: Lambda's payload limit for a request (a stateless client's history may be large).
MAX_BODY_BYTES = 6 * 1024 * 1024


class TimeBudget:
    """The invocation's time, as a Lambda context tells it: the model call and the writes after it are
    budgeted from it, so a stream ends (stored) before the function's timeout (STREAM_BUDGET_SECONDS,
    below the template's Timeout)."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds
        self.aws_request_id = ""

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends - time.monotonic()) * 1000))


class StreamHandler(BaseHTTPRequestHandler):
    server: StreamServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        from chat_core.observability import logger

        logger.info("stream request", line=format % args)

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # the adapter's readiness check
        self._json(200, {"ok": True})

    def do_POST(self) -> None:
        from chat_core.http.api import error_body, openai_error_body
        from chat_core.http.stream_routes import COMPLETIONS, serve
        from chat_core.observability import logger

        path = self.path.split("?", 1)[0]
        headers = {key.lower(): value for key, value in self.headers.items()}
        length = int(headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self._json(413, error_body("payload_too_large", f"request body over {MAX_BODY_BYTES} bytes"))
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        try:
            token = headers.get("authorization", "")
            if not token.lower().startswith("bearer "):
                raise Unauthorized("send the caller's JWT as Authorization: Bearer <token>")
            owner = str(self.server.verifier.verify(token[7:].strip())["sub"])
        except Unauthorized as exc:
            shaped = (
                openai_error_body(401, exc.code, exc.message)
                if path == COMPLETIONS
                else error_body(exc.code, exc.message)
            )
            self._json(401, shaped, {"WWW-Authenticate": "Bearer"})
            return
        stream = SseResponse(self)
        started = time.monotonic()
        budget = TimeBudget(float(os.environ.get("STREAM_BUDGET_SECONDS", "280")))
        budget.aws_request_id = headers.get("x-amzn-request-id", "")
        answer = serve(path, owner, headers, body, stream.emit, context=budget)
        if stream.opened:
            stream.finish()
        else:
            self._json(answer.status, answer.body, answer.headers)
        logger.info(
            "streamed" if stream.opened else "answered",
            path=path,
            status=answer.status,
            ms=round((time.monotonic() - started) * 1000),
        )


class StreamServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, verifier: JwtVerifier) -> None:
        super().__init__(("127.0.0.1", port), StreamHandler)
        self.verifier = verifier


def main() -> int:
    issuer, audience = os.environ.get("JWT_ISSUER", ""), os.environ.get("JWT_AUDIENCE", "")
    if not issuer or not audience:
        print(
            "stream_chat: JWT_ISSUER and JWT_AUDIENCE must be set (no unauthenticated path)", file=sys.stderr
        )
        return 2
    from chat_core.http.jwt import JwtVerifier

    server = StreamServer(int(os.environ.get("PORT", "8080")), JwtVerifier(issuer, audience))
    print(f"stream_chat listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
