"""`chat-local-server` (`make run`): the whole API of template.yaml on 127.0.0.1, in one process."""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import fcntl
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from chat_core.errors import Unauthorized
from chat_core.http.jwt import JwtVerifier
from chat_core.http.openapi_doc import DocumentedRoute, build_openapi
from chat_core.http.sink import SseResponse
from chat_core.runtime import Runtime, use

from chat_local.apigw import (
    MAX_BODY_BYTES,
    HttpRequest,
    HttpResponse,
    NoRoute,
    Router,
    build_event,
    decoded_path,
    error_response,
    json_response,
    proxy_response,
)
from chat_local.botocore_data import share_botocore_data
from chat_local.dynamodb import (
    EmbeddedDynamoDB,
    SnapshotError,
    Snapshotter,
    TtlSweeper,
    dynamodb_client,
    ensure_table,
    is_loopback,
)
from chat_local.journal import DurableTable
from chat_local.lambda_runtime import (
    FunctionRuntime,
    HandlerUnavailable,
    Throttled,
    apply_function_environment,
)
from chat_local.openapi import swagger_page
from chat_local.s3 import BucketMirror, create_buckets, s3_client
from chat_local.sockets import CONNECTIONS_PREFIX, SOCKET_PATHS, SocketApi, wants_socket
from chat_local.sqs import QueuePoller, create_queues, sqs_client
from chat_local.streams import IteratorRegistry, StreamPoller, streams_client
from chat_local.template import LOCAL_ACCOUNT_ID, Template, TemplateError, load_template

log = logging.getLogger("chat_local.server")

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_FILE = "dynamodb.json"
S3_DIR = "s3"
_INVOKE_PREFIX = "/2015-03-31/functions/"
_QUEUE_PREFIX = "/_local/queues/"


def _default_template() -> Path:
    here = Path.cwd() / "template.yaml"
    return here if here.is_file() else PROJECT_ROOT / "template.yaml"


@dataclass
class ServerConfig:
    """Everything `chat-local-server` can be told; defaults are what `make run` uses."""

    host: str = "127.0.0.1"
    port: int = 3000
    template: Path = field(default_factory=_default_template)
    data_dir: Path | None = None  # default: <template dir>/.local
    dynamodb_endpoint: str | None = None  # None: embedded moto
    table_name: str | None = None
    region: str = "us-east-1"
    concurrency: int = 32
    snapshot_interval_s: float = 2.0
    ttl_sweep_interval_s: float = 60.0
    stream_poll_interval_s: float = 0.25
    log_level: str = "WARNING"  # handlers' Powertools log level; the request log is always on
    persist: bool = True
    #: JWT mode (CON-2): bearer tokens verified against this issuer's keys, as the deployed HTTP API's
    #: authorizer does; X-User-Id is then ignored. None: dev mode (X-User-Id).
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    #: Where the WebSocket function posts its events (RSP-12, the management API): this server's URL,
    #: known once it is bound.
    socket_callback_url: str | None = None

    @property
    def resolved_data_dir(self) -> Path:
        return (self.data_dir or self.template.resolve().parent / ".local").resolve()


class RequestLog:
    """One line per request: time, method, path, status, milliseconds (and the function that answered).

    Each line goes out in one write, its newline included: the functions' own loggers write to the same
    stdout from other threads, and `print` writes the text and the newline separately, so another
    thread's line could land between them (an access line with a function's JSON log glued to its end).
    """

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def write(self, method: str, path: str, status: int, ms: float, detail: str = "") -> None:
        stamp = datetime.now().strftime("%H:%M:%S")
        line = f"{stamp} {method:<6} {path} {status} {ms:.0f} ms"
        if detail:
            line += f"  {detail}"
        self._line(line)

    def event(self, source: str, subscription: str, detail: str, ms: float) -> None:
        """One line per stream batch or queue batch delivered to a function."""
        stamp = datetime.now().strftime("%H:%M:%S")
        self._line(f"{stamp} {source:<6} {subscription} {detail} {ms:.0f} ms")

    def _line(self, line: str) -> None:
        with self._lock:
            self.stream.write(f"{line}\n")
            self.stream.flush()


class LocalApi:
    """The local API: store, functions, routes, streams and snapshots. `start()`, `handle()`, `stop()`."""

    def __init__(self, config: ServerConfig, *, request_log: RequestLog | None = None) -> None:
        self.config = config
        self.request_log = request_log or RequestLog()
        self.template: Template | None = None
        self.router = Router([])
        self._verify: Callable[[str], dict[str, Any]] | None = None
        if config.jwt_issuer:
            self._verify = JwtVerifier(config.jwt_issuer, config.jwt_audience or "").verify
        self.runtimes: dict[str, FunctionRuntime] = {}
        #: The chat_core runtime the functions share (`start` installs it, `stop` closes it and puts back
        #: the one the process had before).
        self.runtime: Runtime | None = None
        self._runtime_before: Runtime | None = None
        self.import_errors: dict[str, str] = {}
        self.embedded: EmbeddedDynamoDB | None = None
        self.endpoint = ""
        self.table_name = ""
        self.restored = 0
        self.restore_seconds = 0.0
        self.durable: DurableTable | None = None
        self.created_table = False
        self.snapshotter: Snapshotter | None = None
        self.sweeper: TtlSweeper | None = None
        self.pollers: list[StreamPoller] = []
        self.queue_pollers: list[QueuePoller] = []
        self.queue_urls: dict[str, str] = {}
        self._sqs: Any = None
        self.warnings: list[str] = []
        self._openapi: dict[str, Any] | None = None
        self._docs: bytes | None = None
        self._docs_lock = threading.Lock()
        self._writes_from_api = 0
        #: The WebSocket API (RSP-12), when the template has one.
        self.sockets: SocketApi | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> LocalApi:
        cfg = self.config
        user_env = dict(os.environ)
        if not cfg.dynamodb_endpoint:
            # Loopback only, whatever --host says: the store is this process's business.
            self.embedded = EmbeddedDynamoDB("127.0.0.1").start()
        template = load_template(
            cfg.template,
            region=cfg.region,
            table_name=cfg.table_name or os.environ.get("TABLE_NAME") or None,
            queue_endpoint=self.embedded.endpoint if self.embedded else "http://127.0.0.1:5000",
        )
        self.template = template
        self.warnings.extend(template.warnings)
        table = template.table_for_env()
        if table is None:
            raise TemplateError(f"{cfg.template} declares no AWS::DynamoDB::Table")
        self.table_name = table.name

        forced = {
            "AWS_REGION": cfg.region,
            "AWS_DEFAULT_REGION": cfg.region,
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "TABLE_NAME": table.name,
        }
        if cfg.socket_callback_url:
            forced["WEBSOCKET_CALLBACK_URL"] = cfg.socket_callback_url
        if cfg.dynamodb_endpoint:
            self.endpoint = cfg.dynamodb_endpoint.rstrip("/")
            has_credentials = user_env.get("AWS_ACCESS_KEY_ID") or user_env.get("AWS_PROFILE")
            if is_loopback(self.endpoint) and not has_credentials:
                # DynamoDB Local accepts any key but the SDK insists on having one.
                forced.update({"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"})
        else:
            assert self.embedded is not None
            self.endpoint = self.embedded.endpoint
            # Every AWS SDK call of the handlers (SSM, Secrets Manager, ...) stays on this machine.
            forced.update(
                {
                    "AWS_ACCESS_KEY_ID": "local",
                    "AWS_SECRET_ACCESS_KEY": "local",
                    "AWS_SESSION_TOKEN": "local",
                    "AWS_ENDPOINT_URL": self.endpoint,
                }
            )
        if template.buckets and self.embedded is None and not user_env.get("BLOB_BUCKET"):
            # S3 runs in the embedded store only: without it, content parts stay inline (API-17).
            forced["BLOB_BUCKET"] = ""
            self.warnings.append(
                "S3 buckets exist only with the embedded store: content parts are stored inline "
                "(256 KiB a message) unless you export BLOB_BUCKET (a real bucket, with credentials)"
            )
        forced.update(
            {
                "DYNAMODB_ENDPOINT": self.endpoint,
                "AWS_ENDPOINT_URL_DYNAMODB": self.endpoint,
                "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": self.endpoint,
            }
        )
        defaults = {
            "POWERTOOLS_LOG_LEVEL": cfg.log_level,
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
        }
        self.warnings.extend(
            apply_function_environment(template.functions, defaults=defaults, forced=forced, user=user_env)
        )
        # The template's empty parameter defaults must not override what the user exported.
        for key in ("LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL", "LLM_API_KEY_PARAMETER"):
            if user_env.get(key):
                os.environ[key] = user_env[key]
        self._install_runtime()

        client = dynamodb_client(self.endpoint, cfg.region)
        status = ensure_table(client, table)
        self.created_table = status.created
        self.warnings.extend(status.warnings)
        snapshot_path = cfg.resolved_data_dir / SNAPSHOT_FILE
        mirrors = self._start_buckets()
        if self.embedded is not None and cfg.persist:
            # The snapshot, then the journal of every write answered since (LOC-3), straight into the store.
            durable = DurableTable(
                cfg.resolved_data_dir,
                table.name,
                region=cfg.region,
                account_id=LOCAL_ACCOUNT_ID,
                lock=self.embedded.request_lock,
            )
            loaded = durable.load()
            self.restored, self.restore_seconds = loaded.items, loaded.seconds
            log.info(
                "restored %d items (%d journal records, %d torn) in %.2f s",
                loaded.items,
                loaded.records,
                loaded.torn,
                loaded.seconds,
            )
            for mirror in mirrors:
                mirror.restore()
            self.durable = durable
            self.embedded.durable = durable
            by_bucket = {mirror.bucket: mirror for mirror in mirrors}
            self.embedded.on_object_write = lambda bucket, key: (
                by_bucket[bucket].sync(key) if bucket in by_bucket else None
            )
            self.snapshotter = Snapshotter(
                client,
                table.name,
                snapshot_path,
                change_counter=lambda: self.embedded.write_count if self.embedded else 0,
                interval_s=cfg.snapshot_interval_s,
                after_save=[mirror.save for mirror in mirrors],
                save=durable.snapshot,
            ).start()
        if table.ttl_attribute and cfg.ttl_sweep_interval_s > 0 and is_loopback(self.endpoint):
            self.sweeper = TtlSweeper(
                client,
                table.name,
                table.ttl_attribute,
                interval_s=cfg.ttl_sweep_interval_s,
                find_expired=self.durable.expired if self.durable else None,
            )

        for logical_id, spec in template.functions.items():
            self.runtimes[logical_id] = FunctionRuntime(
                spec, region=cfg.region, max_concurrency=cfg.concurrency
            )
        self.router = Router(template.routes)
        if template.socket_routes:
            self.sockets = SocketApi(
                template.socket_routes, self.runtimes, region=cfg.region, verify=self._verify
            )
        for logical_id, runtime in self.runtimes.items():
            try:
                runtime.warm()
            except HandlerUnavailable as exc:
                self.import_errors[logical_id] = str(exc)

        # Queues first: stream subscriptions send their dropped batches to them (OnFailure).
        self._start_queues()
        self._start_streams(status.stream_arn)
        if self.sweeper is not None:
            # First pass right away: items that expired while the server was down go now.
            self.sweeper.sweep()
            self.sweeper.start()
        return self

    def _install_runtime(self) -> None:
        """The functions' runtime, from the environment just set (the template's and the user's): every
        function of this process shares it, as the warm containers of one function share their own."""
        runtime = Runtime.from_env()
        previous = use(runtime)
        if previous is not None and previous is self.runtime:
            previous.close()
        else:
            self._runtime_before = previous
        self.runtime = runtime

    def _start_streams(self, stream_arn: str | None) -> None:
        assert self.template is not None
        subscriptions = [s for s in self.template.streams if s.enabled]
        if not subscriptions:
            return
        if not stream_arn:
            self.warnings.append("the table has no stream: stream-triggered functions will not run")
            return
        client = streams_client(self.endpoint, self.config.region)
        registry = IteratorRegistry(
            prune_moto=self.embedded is not None, account_id=LOCAL_ACCOUNT_ID, region=self.config.region
        )
        sweeper = self.sweeper
        for sub in subscriptions:
            poller = StreamPoller(
                sub,
                self.runtimes[sub.function.logical_id],
                streams_client=client,
                stream_arn=stream_arn,
                region=self.config.region,
                registry=registry,
                was_ttl_removal=sweeper.was_swept if sweeper else (lambda _k: False),
                on_invocation=self._log_stream_invocation,
                on_failure=self._on_failure_sender(sub.name, sub.on_failure_queue),
                poll_interval_s=self.config.stream_poll_interval_s,
                writes=self.embedded.table_writes if self.embedded else None,
            )
            self.pollers.append(poller.start())

    def _on_failure_sender(
        self, name: str, queue_logical_id: str | None
    ) -> Callable[[dict[str, Any]], None] | None:
        """DestinationConfig.OnFailure: a dropped stream batch is described on the template's SQS queue."""
        if queue_logical_id is None:
            return None

        def send(record: dict[str, Any]) -> None:
            url = self.queue_urls.get(queue_logical_id)
            if url is None or self._sqs is None:
                log.warning("%s: on-failure queue %s is not available locally", name, queue_logical_id)
                return
            self._sqs.send_message(QueueUrl=url, MessageBody=json.dumps(record))

        return send

    def _log_stream_invocation(self, name: str, count: int, status: str, ms: float) -> None:
        self.request_log.event("STREAM", name, f"{count} record(s) {status}", ms)

    def _start_buckets(self) -> list[BucketMirror]:
        """The template's buckets in the embedded store, each with its mirror in the data directory."""
        assert self.template is not None
        if not self.template.buckets or self.embedded is None:
            return []
        client = s3_client(self.endpoint, self.config.region)
        create_buckets(client, self.template.buckets.values(), self.config.region)
        root = self.config.resolved_data_dir / S3_DIR
        return [BucketMirror(client, name, root / name) for name in self.template.buckets.values()]

    def _start_queues(self) -> None:
        assert self.template is not None
        if not self.template.queues:
            return
        if self.embedded is None:
            self.warnings.append("SQS queues and their functions run only with the embedded store")
            return
        client = sqs_client(self.endpoint, self.config.region)
        self.queue_urls = create_queues(client, self.template.queues)
        for sub in self.template.queue_subscriptions:
            if not sub.enabled:
                continue
            poller = QueuePoller(
                sub,
                self.template.queues[sub.queue_logical_id],
                self.runtimes[sub.function.logical_id],
                client=client,
                queue_url=self.queue_urls[sub.queue_logical_id],
                region=self.config.region,
                on_invocation=self._log_queue_invocation,
                writes=self.embedded.other_writes if self.embedded else None,
            )
            self.queue_pollers.append(poller.start())
        self._sqs = client

    def _log_queue_invocation(self, name: str, count: int, status: str, ms: float) -> None:
        self.request_log.event("SQS", name, f"{count} message(s) {status}", ms)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop streams, queues and timers, write the final snapshot, stop the embedded store. Idempotent.

        Every worker is told to stop first, then each is waited for within one shared `timeout_s`; a
        function still running then (a summary waiting on the model) is left to its daemon thread and
        the snapshot is written regardless, so stopping is bounded however busy the server is.
        """
        deadline = time.monotonic() + timeout_s
        workers: list[Any] = [*self.pollers, *self.queue_pollers]
        if self.sweeper is not None:
            workers.append(self.sweeper)
        if self.snapshotter is not None:
            workers.append(self.snapshotter)
        for worker in workers:
            worker.signal_stop()
        for worker in workers:
            if worker is not self.snapshotter:
                worker.stop(timeout_s=deadline - time.monotonic())
        self.pollers, self.queue_pollers, self.sweeper = [], [], None
        if self.snapshotter is not None:
            self.snapshotter.stop(timeout_s=deadline - time.monotonic())
            self.snapshotter = None
        if self.embedded is not None:
            self.embedded.durable = self.embedded.on_object_write = None
            self.embedded.stop()
            self.embedded = None
        if self.durable is not None:
            self.durable.close()
            self.durable = None
        if self.runtime is not None:
            use(self._runtime_before)
            self.runtime.close()
            self.runtime, self._runtime_before = None, None

    # -- requests ---------------------------------------------------------------------------------

    def handle(self, request: HttpRequest) -> tuple[HttpResponse, str]:
        """Answer one request; returns the response and what served it (for the request log)."""
        path = request.raw_path
        if request.method == "GET" and path in ("/openapi.json", "/docs", "/docs/", "/_local/health"):
            return self._builtin(request), "local"
        if request.method == "POST" and path.startswith(_INVOKE_PREFIX) and path.endswith("/invocations"):
            return self._direct_invoke(request), "invoke"
        if request.method == "POST" and path.startswith(_QUEUE_PREFIX):
            return self._send_to_queue(request), "sqs"
        if path.startswith(CONNECTIONS_PREFIX) and self.sockets is not None:
            return self.sockets.manage(request.method, path, request.body), "@connections"
        match = self.router.match(request.method, decoded_path(path))
        if isinstance(match, NoRoute):
            # What an HTTP API answers for a request no route takes, an unknown path or a method its
            # path does not have (TRACE, QUERY, a PUT of a POST route) alike: it never answers 405.
            return json_response(404, {"message": "Not Found"}), "-"
        runtime = self.runtimes[match.route.function.logical_id]
        try:
            event = build_event(request, match, region=self.config.region, verify=self._verify)
        except Unauthorized:
            # What API Gateway's JWT authorizer answers for a token it refuses.
            return json_response(401, {"message": "Unauthorized"}), "-"
        try:
            invocation = runtime.invoke(event)
        except Throttled as exc:
            log.warning("%s", exc)
            return error_response(
                429, "too_many_requests", "the function is busy; retry the request", [("Retry-After", "1")]
            ), runtime.spec.logical_id
        except HandlerUnavailable as exc:
            log.error("%s", exc)
            return error_response(502, "handler_unavailable", str(exc)), runtime.spec.logical_id
        if invocation.timed_out:
            log.warning(
                "%s ran %.0f ms, over its Timeout of %d s: Lambda would have stopped it",
                runtime.spec.logical_id,
                invocation.duration_ms,
                runtime.spec.timeout_s,
            )
        if invocation.error is not None:
            print(
                f"{runtime.spec.logical_id} raised an unhandled exception:\n"
                + "".join(traceback.format_exception(invocation.error)),
                file=sys.stderr,
                end="",  # the traceback ends its last line: one write, no other thread's line glued to it
                flush=True,
            )
            return error_response(500, "internal_error", "Internal Server Error"), runtime.spec.logical_id
        return proxy_response(invocation.result), runtime.spec.logical_id

    def stream_target(self, request: HttpRequest) -> tuple[FunctionRuntime, dict[str, Any]] | None:
        """The function and event of a request that asks for a streamed answer (`Accept:
        text/event-stream`, or a JSON body with `"stream": true`) from a function with a streaming
        entry, else None."""
        if request.method != "POST":
            return None
        accept = next((v for k, v in request.headers if k.lower() == "accept"), "")
        wants = "text/event-stream" in accept
        if not wants and b'"stream"' in request.body:
            try:
                wants = json.loads(request.body).get("stream") is True
            except (ValueError, AttributeError):
                wants = False
        if not wants:
            return None
        match = self.router.match(request.method, decoded_path(request.raw_path))
        if isinstance(match, NoRoute):
            return None
        runtime = self.runtimes[match.route.function.logical_id]
        if not runtime.streams():
            return None
        try:
            return runtime, build_event(request, match, region=self.config.region, verify=self._verify)
        except Unauthorized:
            return None

    def _builtin(self, request: HttpRequest) -> HttpResponse:
        path = request.raw_path.rstrip("/") or "/"
        if path == "/_local/health":
            return json_response(200, self.health())
        query = request.raw_query
        if path == "/openapi.json" or "format=json" in query:
            return json_response(200, self.openapi())
        return HttpResponse(200, [("Content-Type", "text/html; charset=utf-8")], self.docs_page())

    def openapi(self) -> dict[str, Any]:
        with self._docs_lock:
            if self._openapi is None:
                resolvers: dict[str, Any] = {}
                for logical_id, runtime in self.runtimes.items():
                    if logical_id in self.import_errors:
                        continue
                    try:
                        resolvers[logical_id] = getattr(runtime.first_module(), "app", None)
                    except HandlerUnavailable:
                        continue
                assert self.template is not None
                routes = [
                    DocumentedRoute(r.method, r.path, r.function.logical_id) for r in self.template.routes
                ]
                self._openapi = build_openapi(routes, resolvers)
            return self._openapi

    def docs_page(self) -> bytes:
        document = self.openapi()
        with self._docs_lock:
            if self._docs is None:
                self._docs = swagger_page(document).encode("utf-8")
            return self._docs

    def health(self) -> dict[str, Any]:
        return {
            "status": "ok",
            "table": self.table_name,
            "dynamodb_endpoint": self.endpoint,
            "embedded": self.embedded is not None,
            "routes": [r.route_key for r in self.router.routes],
            "import_errors": self.import_errors,
            "streams": [{"subscription": p.subscription.name, **p.stats.__dict__} for p in self.pollers],
            "queues": dict(self.queue_urls),
            "queue_subscriptions": [
                {"subscription": p.subscription.name, **p.stats.__dict__} for p in self.queue_pollers
            ],
        }

    def _send_to_queue(self, request: HttpRequest) -> HttpResponse:
        """POST /_local/queues/<LogicalId>: the body becomes one SQS message (no AWS CLI needed)."""
        logical_id = unquote(request.raw_path[len(_QUEUE_PREFIX) :]).strip("/")
        url = self.queue_urls.get(logical_id)
        if url is None or self._sqs is None:
            known = ", ".join(sorted(self.queue_urls)) or "none"
            return error_response(404, "queue_not_found", f"no queue {logical_id!r}; queues: {known}")
        if not request.body:
            return error_response(400, "empty_message", "send the message body as the request body")
        try:
            body = request.body.decode("utf-8")
        except UnicodeDecodeError:
            return error_response(400, "invalid_message", "an SQS message body must be UTF-8 text")
        kwargs: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
        if logical_id in (self.template.queues if self.template else {}) and url.endswith(".fifo"):
            kwargs["MessageGroupId"] = request.header("x-message-group-id") or "local"
        answer = self._sqs.send_message(**kwargs)
        return json_response(202, {"queue": logical_id, "message_id": answer["MessageId"]})

    def _direct_invoke(self, request: HttpRequest) -> HttpResponse:
        """Lambda's Invoke API (`aws lambda invoke --endpoint-url ...`), for direct, non-HTTP payloads."""
        name = request.raw_path[len(_INVOKE_PREFIX) : -len("/invocations")].rsplit(":", 1)[-1]
        runtime = self.runtimes.get(unquote(name))
        if runtime is None:
            return json_response(
                404,
                {"Type": "User", "Message": f"Function not found: {name}"},
                [("X-Amzn-ErrorType", "ResourceNotFoundException")],
            )
        try:
            payload = json.loads(request.body or b"{}")
        except ValueError:
            return json_response(
                400,
                {"Type": "User", "Message": "Could not parse request body into json"},
                [("X-Amzn-ErrorType", "InvalidRequestContentException")],
            )
        try:
            invocation = runtime.invoke(payload)
        except Throttled as exc:
            return json_response(
                429, {"Type": "User", "Message": str(exc)}, [("X-Amzn-ErrorType", "TooManyRequestsException")]
            )
        except HandlerUnavailable as exc:
            return json_response(502, {"Type": "Service", "Message": str(exc)})
        if invocation.error is not None:
            return json_response(200, invocation.error_payload, [("X-Amz-Function-Error", "Unhandled")])
        return json_response(200, invocation.result, [("X-Amz-Executed-Version", "$LATEST")])


# ---------------------------------------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    server: _LocalHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "chat-local"
    # Headers and body are two writes: on a kept-alive connection the body would wait for the client's
    # delayed ACK (40 ms) behind Nagle's algorithm.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log line is written by _serve

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                total += size
                if total > MAX_BODY_BYTES:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY_BYTES:
            return None
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        with self.server.in_flight():
            self._serve_one()

    def _serve_one(self) -> None:
        started = time.perf_counter()
        # Not urlsplit: a path such as "//x" would be taken for a host name.
        target, _, query = self.path.partition("?")
        query = query.partition("#")[0]
        sockets = self.server.api.sockets
        if sockets is not None and wants_socket(self.command, target, list(self.headers.items())):
            # RSP-12: the connection is the socket's from here on, until it closes.
            self.close_connection = True
            status = sockets.serve(self, self.path, list(self.headers.items()))
            ms = (time.perf_counter() - started) * 1000
            self.server.api.request_log.write(self.command, self.path, status, ms, "websocket")
            return
        body = self._read_body()
        served_by = "-"
        if body is None:
            response = error_response(
                413, "payload_too_large", f"request body over {MAX_BODY_BYTES} bytes (API Gateway's limit)"
            )
            self.close_connection = True
        else:
            request = HttpRequest(
                method=self.command,
                raw_path=target.partition("#")[0] or "/",
                raw_query=query,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
                protocol=self.request_version,
            )
            streamed = self.server.api.stream_target(request)
            if streamed is not None:
                self._serve_stream(*streamed, started)
                return
            try:
                response, served_by = self.server.api.handle(request)
            except Exception:  # the dev server itself must never die on one request
                traceback.print_exc()
                response = error_response(500, "internal_error", "Internal Server Error")
        ms = (time.perf_counter() - started) * 1000
        # Logged before the answer goes out, so a client that has its answer also sees its log line.
        self.server.api.request_log.write(self.command, self.path, response.status, ms, served_by)
        self._write(response)

    def _serve_stream(self, runtime: FunctionRuntime, event: dict[str, Any], started: float) -> None:
        """API-14: a streamed answer as Server-Sent Events over chunked transfer, each chunk written and
        flushed as the function emits it; errors before the first chunk answer as usual (JSON)."""
        stream = SseResponse(self)
        try:
            invocation = runtime.invoke(event, stream.emit)
        except Throttled:
            response = error_response(
                429, "too_many_requests", "the function is busy; retry", [("Retry-After", "1")]
            )
            self._write(response)
            return
        ms = (time.perf_counter() - started) * 1000
        served_by = runtime.spec.logical_id
        if stream.opened:
            self.server.api.request_log.write(self.command, self.path, 200, ms, f"{served_by} (stream)")
            stream.finish()
            return
        if invocation.error is not None:
            traceback.print_exception(invocation.error)
            response = error_response(500, "internal_error", "Internal Server Error")
        else:
            response = proxy_response(invocation.result)
        self.server.api.request_log.write(self.command, self.path, response.status, ms, served_by)
        self._write(response)

    def _write(self, response: HttpResponse) -> None:
        try:
            self.send_response(response.status)
            for key, value in response.headers:
                if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve

    def __getattr__(self, name: str) -> Any:
        # Any other method (TRACE, QUERY, ...) is routed too, so it meets the 404 {"message": "Not Found"}
        # API Gateway answers for a method no route has, instead of http.server's 501.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)


class _LocalHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 resets connections when a burst of clients (a load test,
    # a browser opening the docs) connects while the accept loop waits for the GIL.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], api: LocalApi) -> None:
        super().__init__(address, _Handler)
        self.api = api
        self._active = 0
        self._idle = threading.Condition()

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """Count a request while it is served (shutdown waits a bounded time for them)."""
        with self._idle:
            self._active += 1
        try:
            yield
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no request is being served, at most `timeout_s`; True when idle."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout=max(0.0, timeout_s))

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client went away mid-request (a closed browser tab, curl | head)
        super().handle_error(request, client_address)


def serve(api: LocalApi, host: str, port: int) -> _LocalHTTPServer:
    """Bind the HTTP server (port 0 picks a free one); call serve_forever() on it."""
    return _LocalHTTPServer((host, port), api)


# ---------------------------------------------------------------------------------------------- banner


def banner(api: LocalApi, url: str) -> str:
    cfg = api.config
    assert api.template is not None
    base = os.environ.get("LLM_BASE_URL", "").strip()
    model = os.environ.get("LLM_MODEL", "").strip() or "gpt-4o-mini"
    lines = [
        "",
        f"Chat History Service — local API ({'JWT' if cfg.jwt_issuer else 'dev'} mode)",
        f"  API        {url}   ({len(api.router.routes)} routes from {cfg.template})",
    ]
    for route in sorted(api.router.routes, key=lambda r: (r.path, r.method)):
        mark = "  (handler not loadable yet)" if route.function.logical_id in api.import_errors else ""
        lines.append(f"               {route.method:<6} {route.path}  -> {route.function.logical_id}{mark}")
    lines += [
        *(
            f"  WebSocket  {url.replace('http', 'ws', 1)}{path}  -> {route.function.logical_id}"
            for route in (api.sockets.routes.values() if api.sockets is not None else ())
            if route.key == "$default"
            for path in SOCKET_PATHS
        ),
        f"  Docs       {url}/docs   (OpenAPI document: {url}/openapi.json)",
        f"  Console    {url}/console",
    ]
    if cfg.jwt_issuer:
        lines.append(
            f"  Identity   Authorization: Bearer <a JWT of {cfg.jwt_issuer}> (JWT mode; X-User-Id ignored)"
        )
    else:
        lines += [
            "  Identity   X-User-Id header = the caller (dev mode only; no header -> 401)",
            "             X-User-Groups header = their groups (administrators: ADMIN_GROUP="
            f"{os.environ.get('ADMIN_GROUP', '').strip() or '(unset: nobody)'})",
        ]
    if cfg.host not in ("127.0.0.1", "localhost", "::1"):
        lines.append(
            f"  WARNING    listening on {cfg.host}: anyone who can reach this port can act as any user "
            "(X-User-Id is not authentication)"
        )
    if api.embedded is not None:
        store = f"embedded moto at {api.endpoint}, table {api.table_name}"
        lines.append(f"  DynamoDB   {store}")
        if cfg.persist:
            lines.append(
                f"  Data       {cfg.resolved_data_dir / SNAPSHOT_FILE} ({api.restored} items restored in "
                f"{api.restore_seconds:.1f} s; every write journaled before it is answered, snapshot "
                f"every {cfg.snapshot_interval_s:g} s when changed and at exit)"
            )
        else:
            lines.append("  Data       not persisted (--no-persist): everything is lost at exit")
        for bucket in api.template.buckets.values() if api.template else ():
            kept = f", mirrored to {cfg.resolved_data_dir / S3_DIR / bucket}" if cfg.persist else ""
            lines.append(f"  S3         bucket {bucket} in the embedded store (large content parts{kept})")
    else:
        created = "created now" if api.created_table else "existing"
        lines.append(f"  DynamoDB   external endpoint {api.endpoint}, table {api.table_name} ({created})")
        lines.append("  Data       kept by that endpoint (no local snapshot)")
    if base:
        lines.append(f"  Model      {model} at {base}")
    else:
        lines += [
            "  Model      !!! OFFLINE MODEL !!! LLM_BASE_URL is not set: replies come from the built-in",
            "             offline model, not a real LLM. Set LLM_BASE_URL (and LLM_API_KEY, LLM_MODEL)",
            "             to use a real OpenAI-compatible model.",
        ]
    for poller in api.pollers:
        lines.append(f"  Stream     table stream -> {poller.subscription.name}")
    for logical_id, queue_url in api.queue_urls.items():
        consumers = [
            p.subscription.name for p in api.queue_pollers if p.subscription.queue_logical_id == logical_id
        ]
        target = f" -> {', '.join(consumers)}" if consumers else ""
        lines.append(f"  Queue      {logical_id}{target}")
        lines.append(
            f"               send: curl -X POST {url}/_local/queues/{logical_id} -d '<message body>'"
        )
        lines.append(f"               SQS endpoint: {queue_url}")
    for error in api.import_errors.values():
        lines.append(f"  WARNING    {error}")
    for warning in api.warnings:
        lines.append(f"  note       {warning}")
    chat = Path(sys.executable).parent / "chat"
    with contextlib.suppress(ValueError):
        chat = chat.relative_to(Path.cwd())
    api_option = "" if url == "http://127.0.0.1:3000" else f" --api {url}"
    lines += [
        f'  Try        {chat}{api_option} "hello"     (in a second terminal; --help for options)',
        f"             curl -s -H 'X-User-Id: me' {url}/conversations",
        "  Stop       Ctrl-C (data is saved first)",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> ServerConfig:
    parser = argparse.ArgumentParser(
        prog="chat-local-server",
        description="Serve every HttpApi route of template.yaml on 127.0.0.1 with an embedded DynamoDB.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=int(os.environ.get("PORT") or 3000), help="0 = a free port"
    )
    parser.add_argument("--template", type=Path, default=_default_template())
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="where the table snapshot is kept (default <repo>/.local)"
    )
    parser.add_argument(
        "--dynamodb-endpoint",
        default=os.environ.get("DYNAMODB_ENDPOINT") or None,
        help="use this DynamoDB (e.g. DynamoDB Local at http://localhost:8000) instead of the embedded one; "
        "default $DYNAMODB_ENDPOINT",
    )
    parser.add_argument("--table-name", default=os.environ.get("TABLE_NAME") or None)
    parser.add_argument("--region", default=os.environ.get("AWS_REGION") or "us-east-1")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=int(os.environ.get("LOCAL_CONCURRENCY") or 32),
        help="warm containers per function, each serving one request at a time (default 32, or "
        "LOCAL_CONCURRENCY); a request that finds them all busy for 10 s gets 429 with Retry-After, "
        "as a throttled Lambda does",
    )
    parser.add_argument("--snapshot-interval", type=float, default=2.0, help="seconds between snapshots")
    parser.add_argument(
        "--jwt-issuer",
        default=os.environ.get("JWT_ISSUER") or None,
        help="JWT mode: accept only bearer tokens of this issuer (its JWKS by OIDC discovery), as the "
        "deployed API does; X-User-Id is then ignored (default $JWT_ISSUER; unset: dev mode)",
    )
    parser.add_argument(
        "--jwt-audience", default=os.environ.get("JWT_AUDIENCE") or None, help="JWT mode: the audience"
    )
    parser.add_argument(
        "--ttl-sweep-interval", type=float, default=60.0, help="seconds between TTL sweeps (0 = never)"
    )
    parser.add_argument(
        "--no-persist", action="store_true", help="keep nothing on disk (embedded store only)"
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("POWERTOOLS_LOG_LEVEL") or "WARNING",
        help="log level of the handlers' own logs (default WARNING; INFO shows every Powertools log line)",
    )
    args = parser.parse_args(argv)
    return ServerConfig(
        host=args.host,
        port=args.port,
        template=args.template,
        data_dir=args.data_dir,
        dynamodb_endpoint=args.dynamodb_endpoint,
        table_name=args.table_name,
        region=args.region,
        concurrency=args.concurrency,
        snapshot_interval_s=args.snapshot_interval,
        ttl_sweep_interval_s=args.ttl_sweep_interval,
        log_level=args.log_level.upper(),
        persist=not args.no_persist,
        jwt_issuer=args.jwt_issuer or None,
        jwt_audience=args.jwt_audience or None,
    )


def _lock_data_dir(config: ServerConfig) -> Any:
    """Lock the data dir exclusively: two servers saving one snapshot would lose each other's data."""
    directory = config.resolved_data_dir
    directory.mkdir(parents=True, exist_ok=True)
    handle = (directory / "server.lock").open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        owner = handle.read().strip() or "another process"
        handle.close()
        print(
            f"chat-local-server: {directory} is in use by another chat-local-server ({owner}). "
            "Stop it, or give this one its own --data-dir.",
            file=sys.stderr,
        )
        return False
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle  # kept open (and locked) until the process exits


#: How long stopping may take in all (SIGTERM or Ctrl-C), and the part of it requests in flight get.
SHUTDOWN_SECONDS = 3.0
REQUEST_GRACE_SECONDS = 1.5


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("botocore", "pynamodb", "urllib3", "websockets"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    share_botocore_data()
    config = parse_args(argv)
    api = LocalApi(config)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    # `kill -USR1 <pid>` prints every thread's stack: what a server that does not stop is waiting on.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        httpd = serve(api, config.host, config.port)
    except OSError as exc:
        print(
            f"chat-local-server: cannot listen on {config.host}:{config.port}: {exc.strerror}. "
            f"Is another server running? Try PORT={config.port + 1} make run",
            file=sys.stderr,
        )
        return 2
    lock = _lock_data_dir(config) if config.persist and not config.dynamodb_endpoint else None
    reachable = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host  # noqa: S104
    config.socket_callback_url = f"http://{reachable}:{httpd.server_port}"
    if lock is False:
        httpd.server_close()
        return 2
    try:
        api.start()
    except (TemplateError, SnapshotError) as exc:
        print(f"chat-local-server: {exc}", file=sys.stderr)
        httpd.server_close()
        api.stop()
        return 2
    except Exception as exc:
        print(f"chat-local-server: could not start: {exc}", file=sys.stderr)
        httpd.server_close()
        api.stop()
        return 1
    url = f"http://{config.host}:{httpd.server_port}"
    print(banner(api, url), flush=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    # In short waits, not one endless one: the kernel may hand SIGTERM/SIGINT to any thread (a poller in a
    # socket read), and Python runs the handler only when the main thread next runs bytecode. An endless
    # wait never returned to run it: a stop that hung under load, once in a few hundred.
    while not stop.wait(0.25):
        pass
    # Bounded whatever the load: new connections stop at once, requests in flight get a short grace,
    # background functions are abandoned at the deadline, and the snapshot is always written.
    deadline = time.monotonic() + SHUTDOWN_SECONDS
    print("\nstopping: saving data ...", flush=True)
    httpd.shutdown()
    if not httpd.wait_idle(REQUEST_GRACE_SECONDS):
        print("stopping: requests still running are abandoned", flush=True)
    httpd.server_close()
    snapshot = config.resolved_data_dir / SNAPSHOT_FILE
    persisted = api.snapshotter is not None
    api.stop(timeout_s=deadline - time.monotonic())
    if persisted and snapshot.exists():
        print(f"data saved in {snapshot}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
