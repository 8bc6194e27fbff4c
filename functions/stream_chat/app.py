"""The streaming function (API-14, API-16): an HTTP server the Lambda Web Adapter runs behind a function
URL with response streaming. It serves POST /v1/chat/completions and POST /v1/responses (`stream: true`)
and POST /messages (`Accept: text/event-stream`) and writes each chunk or event as the model produces
it; it also serves every other `/v1` route (models, responses, conversations; RSP-5), so one base URL
works for the OpenAI SDKs.

A function URL has no JWT authorizer, so the caller's JWT (`Authorization: Bearer ...`) is verified
here, as the HTTP API's authorizer would: RS256 against the issuer's keys (JWT_ISSUER), the audience
(JWT_AUDIENCE), expiry. Nothing is served without a valid token. Run locally:
`python functions/stream_chat/app.py` (PORT, default 8080).

The HTTP API's stage writes an access log line per request; a function URL has none, so this server
writes one itself (OPS-5): a JSON line through the Powertools logger, message "access", with the access
log's fields (`ACCESS_FIELDS`) at its top level, after the answer (a streamed one included) has ended.
It applies the API's per-user rate limit (OPS-4) to both routes, as their handlers do.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from chat_core.errors import Unauthorized
from chat_core.http.api import error_body, openai_error_body
from chat_core.http.jwt import JwtVerifier
from chat_core.http.sink import SseResponse
from chat_core.http.stream_routes import ROUTES, serve
from chat_core.observability import logger

#: Lambda's payload limit for a request (a stateless client's history may be large).
MAX_BODY_BYTES = 6 * 1024 * 1024

#: The fields of an access line, named as in the HTTP API stage's access log format (template.yaml).
ACCESS_FIELDS = (
    "requestId",
    "caller",
    "routeKey",
    "method",
    "path",
    "status",
    "responseLatency",
    "integrationLatency",
    "integrationError",
    "ip",
    "userAgent",
)


def request_context(headers: dict[str, str]) -> dict[str, Any]:
    """The function URL's request context, which the Lambda Web Adapter forwards as the JSON header
    `x-amzn-request-context` ({} when absent or unreadable: a local run)."""
    try:
        context = json.loads(headers.get("x-amzn-request-context") or "{}")
    except ValueError:
        return {}
    return context if isinstance(context, dict) else {}


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
    #: What the access line reports: the status sent, the verified caller, the time `serve` took.
    status: int = 0
    caller: str = ""
    integration_ms: int | None = None

    def log_message(self, format: str, *args: Any) -> None:
        logger.info("stream server", line=format % args)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """The access line (`_access_line`) replaces the server's own line per request."""

    def send_response(self, code: int, message: str | None = None) -> None:
        self.status = code
        super().send_response(code, message)

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.startswith("/v1/"):
            self.do_POST()
            return
        self._json(200, {"ok": True})  # the adapter's readiness check

    def do_DELETE(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        started = time.monotonic()
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.status, self.caller, self.integration_ms = 0, "", None
        error = ""
        try:
            self._post(headers)
        except Exception as exc:
            error = type(exc).__name__
            raise
        finally:
            self._access_line(headers, started, error)

    def _access_line(self, headers: dict[str, str], started: float, error: str) -> None:
        """OPS-5: one JSON line per request, with the fields of the HTTP API's access log."""
        context = request_context(headers)
        http = context.get("http") if isinstance(context.get("http"), dict) else {}
        path = self.path.split("?", 1)[0]
        line = {
            "requestId": str(context.get("requestId") or headers.get("x-amzn-request-id", "")),
            "caller": self.caller,
            "routeKey": f"{self.command} {path}" if path in ROUTES else "$default",
            "method": self.command,
            "path": path,
            "status": self.status,
            "responseLatency": round((time.monotonic() - started) * 1000),
            "integrationLatency": self.integration_ms,
            "integrationError": error,
            "ip": str(http.get("sourceIp") or self.client_address[0]),
            "userAgent": str(http.get("userAgent") or headers.get("user-agent", "")),
        }
        logger.info("access", **line)

    def _post(self, headers: dict[str, str]) -> None:
        path, _, raw_query = self.path.partition("?")
        query = {key: values[-1] for key, values in parse_qs(raw_query).items()}
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
                if path.startswith("/v1/")
                else error_body(exc.code, exc.message)
            )
            self._json(401, shaped, {"WWW-Authenticate": "Bearer"})
            return
        self.caller = owner
        stream = SseResponse(self)
        budget = TimeBudget(float(os.environ.get("STREAM_BUDGET_SECONDS", "280")))
        budget.aws_request_id = headers.get("x-amzn-request-id", "")
        served = time.monotonic()
        answer = serve(path, owner, headers, body, stream.emit, budget, method=self.command, query=query)
        self.integration_ms = round((time.monotonic() - served) * 1000)
        if stream.opened:
            stream.finish()
        else:
            self._json(answer.status, answer.body, answer.headers)


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
    server = StreamServer(int(os.environ.get("PORT", "8080")), JwtVerifier(issuer, audience))
    print(f"stream_chat listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
