"""API Gateway WebSocket API emulation (RSP-12): the upgrade, the $connect / route / $disconnect events
given to the template's function, and the @connections management API the function posts back through.

What API Gateway does is done here too, so the deployed path is the one tested: the handshake is
answered only once $connect's function returned 2xx; each message goes to the route its `type` selects
(`RouteSelectionExpression`), else `$default`; the function answers nothing on the socket itself, it
posts to `POST /@connections/{id}` (boto3's apigatewaymanagementapi, pointed at this server); a frame
over 32 KB or a message over 128 KB closes the connection (1009), as do 10 idle minutes and 2 hours
(1001); $disconnect runs however the connection ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import secrets
import select
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import unquote

from websockets.datastructures import Headers
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import SERVER, Protocol, State
from websockets.server import ServerProtocol

from chat_local.apigw import USER_HEADER, HttpResponse, json_response
from chat_local.lambda_runtime import FunctionRuntime, Throttled
from chat_local.template import LOCAL_ACCOUNT_ID, SocketRoute

log = logging.getLogger("chat_local.sockets")

#: API Gateway's WebSocket quotas (docs/deploy.md): frame and message size, idle time, connection time.
MAX_FRAME_BYTES: Final = 32 * 1024
MAX_MESSAGE_BYTES: Final = 128 * 1024
IDLE_SECONDS: Final = 600.0
CONNECTION_SECONDS: Final = 7200.0
#: The path `make run` serves the WebSocket mode on: OpenAI's SDKs add /responses to base_url .../v1.
SOCKET_PATHS: Final = ("/v1/responses",)
CONNECTIONS_PREFIX: Final = "/@connections/"
STAGE: Final = "responses"
_POLL_S: Final = 0.5


def wants_socket(method: str, path: str, headers: Sequence[tuple[str, str]]) -> bool:
    """A WebSocket upgrade of one of the socket paths."""
    upgrade = next((v for k, v in headers if k.lower() == "upgrade"), "")
    return method == "GET" and path in SOCKET_PATHS and upgrade.lower() == "websocket"


class Connection:
    """One open socket: its protocol state (websockets' sans-I/O machine) behind one lock, since the
    reader thread and the @connections posts both write to it."""

    def __init__(self, connection_id: str, protocol: Protocol, sock: socket.socket) -> None:
        self.id = connection_id
        self.protocol = protocol
        self.sock = sock
        self.lock = threading.Lock()
        self.connected_at = time.time()
        self.last_active = time.monotonic()
        self.close_code = 1005
        self.close_reason = ""

    def flush(self) -> None:
        for chunk in self.protocol.data_to_send():
            if chunk:
                self.sock.sendall(chunk)
            else:  # the protocol's end of stream: the server closes TCP first
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_WR)

    def send_text(self, data: bytes) -> bool:
        with self.lock:
            if self.protocol.state is not State.OPEN:
                return False
            self.protocol.send_text(data)
            self.flush()
        self.last_active = time.monotonic()
        return True

    def close(self, code: int, reason: str) -> None:
        with self.lock:
            if self.protocol.state is State.OPEN:
                self.close_code, self.close_reason = code, reason
                self.protocol.send_close(code, reason)
                self.flush()


class SocketApi:
    """The template's WebSocket API, served on the local server's port."""

    def __init__(
        self,
        routes: Sequence[SocketRoute],
        runtimes: Mapping[str, FunctionRuntime],
        *,
        region: str,
        verify: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self.routes = {route.key: route for route in routes}
        self.runtimes = runtimes
        self.region = region
        self.verify = verify
        self.connections: dict[str, Connection] = {}
        self._lock = threading.Lock()

    # -- events ----------------------------------------------------------------------------------

    def _context(self, connection: Connection, route_key: str, event_type: str, host: str) -> dict[str, Any]:
        now = time.time()
        return {
            "routeKey": route_key,
            "eventType": event_type,
            "messageDirection": "IN",
            "stage": STAGE,
            "connectedAt": int(connection.connected_at * 1000),
            "requestTimeEpoch": int(now * 1000),
            "requestTime": datetime.fromtimestamp(now, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestId": str(uuid.uuid4()),
            "extendedRequestId": str(uuid.uuid4()),
            "domainName": host,
            "connectionId": connection.id,
            "apiId": "local",
            "accountId": LOCAL_ACCOUNT_ID,
            "identity": {"sourceIp": "127.0.0.1"},
        }

    def _invoke(self, route: SocketRoute, event: dict[str, Any]) -> dict[str, Any] | None:
        runtime = self.runtimes[route.function.logical_id]
        try:
            invocation = runtime.invoke(event)
        except Throttled:
            return None
        if invocation.error is not None:
            print(
                f"{route.function.logical_id} raised an unhandled exception:\n"
                + "".join(traceback.format_exception(invocation.error)),
                end="",  # the traceback ends its last line: one write, no other thread's line glued to it
                flush=True,
            )
            return None
        return invocation.result if isinstance(invocation.result, dict) else {"statusCode": 200}

    def _claims(self, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """The caller as the local server's HTTP routes take it: X-User-Id in dev mode, a verified JWT in
        JWT mode (the function then sees the claims and does not verify again)."""
        if self.verify is None:
            user = (headers.get(USER_HEADER) or "").strip()
            return {"sub": user, "iss": "chat-local", "token_use": "local"} if user else None
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        try:
            return self.verify(token.strip())
        except Exception:
            return None

    # -- one connection --------------------------------------------------------------------------

    def serve(self, handler: Any, path: str, raw_headers: Sequence[tuple[str, str]]) -> int:
        """Serve one upgrade request on the handler's socket until the connection ends; the HTTP status
        of the handshake (101 when the connection was opened)."""
        headers = {k.lower(): v for k, v in raw_headers}
        # The handshake's machine answers the upgrade http.server has already read; the frames then go to
        # a machine of their own, open from the start.
        handshake = ServerProtocol()
        response = handshake.accept(Request(path, Headers(list(raw_headers))))
        frames = Protocol(SERVER, state=State.OPEN, max_size=MAX_MESSAGE_BYTES)
        connection = Connection(secrets.token_urlsafe(12), frames, handler.connection)
        connect = self.routes.get("$connect")
        if response.status_code == 101 and connect is not None:
            event: dict[str, Any] = {
                "headers": dict(headers),
                "multiValueHeaders": {k: [v] for k, v in headers.items()},
                "isBase64Encoded": False,
                "requestContext": self._context(connection, "$connect", "CONNECT", headers.get("host", "")),
            }
            claims = self._claims(headers)
            if claims is not None:
                event["requestContext"]["authorizer"] = {"jwt": {"claims": claims}}
            answer = self._invoke(connect, event)
            status = int((answer or {}).get("statusCode", 500))
            if not 200 <= status < 300:
                response = handshake.reject(status, json.dumps({"message": "Forbidden"}))
        handshake.send_response(response)
        for chunk in handshake.data_to_send():
            handler.connection.sendall(chunk)
        if response.status_code != 101:
            return response.status_code
        with self._lock:
            self.connections[connection.id] = connection
        try:
            self._run(connection, headers.get("host", ""))
        finally:
            with self._lock:
                self.connections.pop(connection.id, None)
            disconnect = self.routes.get("$disconnect")
            if disconnect is not None:
                event = {
                    "headers": dict(headers),
                    "isBase64Encoded": False,
                    "requestContext": {
                        **self._context(connection, "$disconnect", "DISCONNECT", headers.get("host", "")),
                        "disconnectStatusCode": connection.close_code,
                        "disconnectReason": connection.close_reason,
                    },
                }
                self._invoke(disconnect, event)
        return 101

    def _run(self, connection: Connection, host: str) -> None:
        """Read frames until the connection closes; messages go to a worker in order, so the reader keeps
        answering pings while a turn runs."""
        messages: queue.Queue[bytes | None] = queue.Queue()
        worker = threading.Thread(
            target=self._deliver,
            args=(connection, messages, host),
            daemon=True,
            name=f"socket-{connection.id}",
        )
        worker.start()
        parts: list[bytes] = []
        try:
            while connection.protocol.state is not State.CLOSED:
                now = time.monotonic()
                if now - connection.last_active > IDLE_SECONDS:
                    connection.close(1001, "Going away")
                if time.time() - connection.connected_at > CONNECTION_SECONDS:
                    connection.close(1001, "Going away")
                # Straight from the socket (the handshake left nothing buffered: a client sends no frame
                # before the 101), polled so the idle and connection limits are kept.
                try:
                    ready, _, _ = select.select([connection.sock], [], [], _POLL_S)
                    if not ready:
                        continue
                    data = connection.sock.recv(65536)
                except OSError:
                    break
                with connection.lock:
                    if data:
                        connection.protocol.receive_data(data)
                    else:
                        connection.protocol.receive_eof()
                    frames = connection.protocol.events_received()
                    connection.flush()
                if not data:
                    break
                connection.last_active = time.monotonic()
                for frame in frames:
                    if not isinstance(frame, Frame):
                        continue
                    if frame.opcode in (Opcode.PING, Opcode.PONG, Opcode.CLOSE):
                        if frame.opcode is Opcode.CLOSE and connection.protocol.close_rcvd is not None:
                            connection.close_code = connection.protocol.close_rcvd.code
                        continue
                    if len(frame.data) > MAX_FRAME_BYTES:
                        connection.close(1009, "Frame size exceeded")
                        break
                    parts.append(bytes(frame.data))
                    if frame.fin:
                        messages.put(b"".join(parts))
                        parts = []
        finally:
            messages.put(None)
            with contextlib.suppress(OSError):
                connection.sock.close()
            worker.join(timeout=1.0)

    def _deliver(self, connection: Connection, messages: queue.Queue[bytes | None], host: str) -> None:
        while True:
            message = messages.get()
            if message is None:
                return
            try:
                body = message.decode("utf-8")
                selected = json.loads(body).get(self._selection_key()) if body.startswith("{") else None
            except (UnicodeDecodeError, ValueError, AttributeError):
                body, selected = message.decode("utf-8", "replace"), None
            route = self.routes.get(str(selected)) if isinstance(selected, str) else None
            route = route or self.routes.get("$default")
            if route is None:
                connection.send_text(
                    b'{"message": "Forbidden", "connectionId": "%s"}' % connection.id.encode()
                )
                continue
            event = {
                "body": body,
                "isBase64Encoded": False,
                "requestContext": {
                    **self._context(connection, route.key, "MESSAGE", host),
                    "messageId": secrets.token_urlsafe(12),
                },
            }
            if self._invoke(route, event) is None:
                connection.send_text(b'{"message": "Internal server error"}')

    def _selection_key(self) -> str:
        """The body field of `$request.body.<field>`, the route selection expression."""
        expression = next(iter(self.routes.values())).selection_expression if self.routes else ""
        return expression.removeprefix("$request.body.") or "action"

    # -- the management API ----------------------------------------------------------------------

    def manage(self, method: str, raw_path: str, body: bytes) -> HttpResponse:
        """`POST|GET|DELETE /@connections/{id}`, as API Gateway's management API answers them."""
        connection_id = unquote(raw_path[len(CONNECTIONS_PREFIX) :]).strip("/")
        with self._lock:
            connection = self.connections.get(connection_id)
        gone = [("x-amzn-ErrorType", "GoneException")]
        if connection is None:
            return json_response(410, {"message": None}, gone)
        if method == "POST":
            if len(body) > MAX_MESSAGE_BYTES:
                return json_response(
                    413, {"message": "Payload too large"}, [("x-amzn-ErrorType", "PayloadTooLargeException")]
                )
            if not connection.send_text(body):
                return json_response(410, {"message": None}, gone)
            return HttpResponse(200, [], b"")
        if method == "DELETE":
            connection.close(1000, "")
            return HttpResponse(204, [], b"")
        if method == "GET":
            connected = datetime.fromtimestamp(connection.connected_at, UTC).isoformat()
            return json_response(200, {"connectedAt": connected, "identity": {"sourceIp": "127.0.0.1"}})
        return json_response(404, {"message": "Not Found"})
