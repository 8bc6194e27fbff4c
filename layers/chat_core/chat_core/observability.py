"""Logger, Tracer and Metrics of the service, created once per process from the settings; the entry every
function's handler carries, which gives the process its runtime at init."""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, cast, overload

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from chat_core import startup
from chat_core.runtime import Runtime, current, use

_F = TypeVar("_F", bound=Callable[..., Any])


class LazyTracer:
    """Powertools' `Tracer`, built on first use rather than at import (PERF-1, cold start).

    Building a `Tracer` imports its default provider, the X-Ray SDK, even with tracing disabled, and with
    tracing on it patches libraries (`patch` names them when given; the service's: `traced_libraries`):
    40-75 ms of CPU measured with every library X-Ray supports, half of a bare `import boto3` or more.
    The handlers apply `@tracer.capture_lambda_handler` and `@tracer.capture_method` at import, so those
    return a wrapper that builds the real `Tracer` on the first call and hands the function to the real
    decorator then; every other attribute (`provider`, `put_annotation`, `patch`...) builds it on access.
    Once built, it is the same `Tracer`, with the same options, as `Tracer(**options)` at import would
    have been: tracing in Lambda, auto-patching, POWERTOOLS_TRACE_DISABLED all behave as before, from
    the first invocation on. With tracing on, that cost is paid by the first invocation instead of the
    init phase; with tracing off it is never paid.
    """

    def __init__(self, patch: Callable[[], Sequence[str]] | None = None, **options: Any) -> None:
        self._options = options
        #: When given, the libraries to patch, chosen when the Tracer is built (`patch_modules`).
        self._patch = patch
        self._tracer: Tracer | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether the real `Tracer` exists yet (it does after the first traced call)."""
        return self._tracer is not None

    def real(self) -> Tracer:
        """The real Powertools `Tracer`, built once (thread-safe: the local server runs threads)."""
        tracer = self._tracer
        if tracer is None:
            with self._lock:
                if self._tracer is None:
                    options = dict(self._options)
                    if self._patch is not None:
                        options["patch_modules"] = tuple(self._patch())
                    self._tracer = Tracer(**options)
                tracer = self._tracer
        return tracer

    def capture_lambda_handler(
        self,
        lambda_handler: Callable[..., Any] | None = None,
        capture_response: bool | None = None,
        capture_error: bool | None = None,
    ) -> Callable[..., Any]:
        """`Tracer.capture_lambda_handler`, applied by the real `Tracer` at the first invocation."""
        if lambda_handler is None:
            return functools.partial(
                self.capture_lambda_handler, capture_response=capture_response, capture_error=capture_error
            )
        handler = lambda_handler
        traced: Callable[..., Any] | None = None

        @functools.wraps(handler)
        def decorate(event: Any, context: Any, **kwargs: Any) -> Any:
            nonlocal traced
            if traced is None:
                traced = self.real().capture_lambda_handler(
                    handler, capture_response=capture_response, capture_error=capture_error
                )
            return traced(event, context, **kwargs)

        return decorate

    @overload
    def capture_method(self, method: _F) -> _F: ...

    @overload
    def capture_method(
        self, method: None = None, capture_response: bool | None = None, capture_error: bool | None = None
    ) -> Callable[[_F], _F]: ...

    def capture_method(
        self,
        method: _F | None = None,
        capture_response: bool | None = None,
        capture_error: bool | None = None,
    ) -> _F | Callable[[_F], _F]:
        """`Tracer.capture_method`, applied by the real `Tracer` at the first call of a plain function."""
        if method is None:
            return cast(
                Callable[[_F], _F],
                functools.partial(
                    self.capture_method, capture_response=capture_response, capture_error=capture_error
                ),
            )
        wrapped = method
        if (
            inspect.iscoroutinefunction(wrapped)
            or inspect.isgeneratorfunction(wrapped)
            or inspect.isgeneratorfunction(getattr(wrapped, "__wrapped__", None))
        ):
            # The real decorator picks its wrapper by the function's kind; a lazy wrapper would hide the
            # kind, so these are traced by the real Tracer right away (none of the service's are).
            return self._real_capture_method(wrapped, capture_response, capture_error)
        traced: Callable[..., Any] | None = None

        @functools.wraps(wrapped)
        def decorate(*args: Any, **kwargs: Any) -> Any:
            nonlocal traced
            if traced is None:
                traced = self._real_capture_method(wrapped, capture_response, capture_error)
            return traced(*args, **kwargs)

        return cast(_F, decorate)

    def _real_capture_method(
        self, method: _F, capture_response: bool | None, capture_error: bool | None
    ) -> _F:
        decorator: Callable[[_F], _F] = self.real().capture_method(
            capture_response=capture_response, capture_error=capture_error
        )
        return decorator(method)

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this class does not define: the rest of Tracer's API.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real(), name)


#: A function's entry: the event and the Lambda context in, its answer out.
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class Resolver(Protocol):
    """What `http_entry` needs of a Powertools resolver."""

    def resolve(self, event: dict[str, Any], context: Any) -> dict[str, Any]: ...


def entry(
    *, correlation_id_path: str | None = None, clear_state: bool = False, runtime: Runtime | None = None
) -> Callable[[Handler], Handler]:
    """The decorators every function's entry carries, written once: the Lambda context and the correlation
    id in every log line (`correlation_id_path`; `clear_state` for workers whose keys must not leak from
    one batch to the next), the traced handler, and the metrics flushed at the end of each invocation.

    At init it also gives the process its runtime, so no handler repeats it: `runtime` when given (it is
    installed), else the current one (built from the environment the first time: settings only, every
    client is opened by the first invocation that needs it)."""
    if runtime is not None:
        use(runtime)
    else:
        current()
    startup.at_init(tracer.real)

    def decorate(handler: Handler) -> Handler:
        measured = metrics.log_metrics(handler)
        traced = tracer.capture_lambda_handler(measured)
        logged = logger.inject_lambda_context(
            correlation_id_path=correlation_id_path, clear_state=clear_state
        )
        return cast(Handler, logged(traced))

    return decorate


def http_entry(app: Resolver, runtime: Runtime | None = None) -> Handler:
    """The whole entry of an HTTP API function: `lambda_handler = http_entry(app)` resolves each event on
    `app`, with the request id of API Gateway (HTTP API, payload 2.0) as the correlation id; the runtime
    is `entry`'s (`runtime`, else the process's current one)."""

    @entry(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, runtime=runtime)
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    return lambda_handler


#: What every function's calls go through that X-Ray traces: each AWS call (botocore; PynamoDB over it).
ALWAYS_TRACED = ("botocore", "pynamodb")
#: Traced where the function's code imports them: httpx carries the model calls and the JWKS fetch.
TRACED_WHERE_IMPORTED = ("httpx", "requests")


def traced_libraries() -> tuple[str, ...]:
    """The libraries the Tracer patches (PERF-1, cold start): the AWS clients, and the HTTP clients this
    function's code has imported by the time the Tracer is built (at init under SnapStart, else the first
    invocation; chat_core imports httpx at module level, so a function that calls the model has it by
    then). X-Ray's `patch_all` would also import and patch every other library it supports that is
    installed: httpx in the functions that never call the model, requests (installed with tiktoken, which
    the service's encodings never use), sqlite3; code that never runs makes no subsegment, and importing
    them cost a read handler's first call about half its CPU."""
    return ALWAYS_TRACED + tuple(name for name in TRACED_WHERE_IMPORTED if name in sys.modules)


_settings = current().settings

logger = Logger(service=_settings.service_name)
tracer = LazyTracer(service=_settings.service_name, patch=traced_libraries)
metrics = Metrics(service=_settings.service_name, namespace=_settings.metrics_namespace)

__all__ = [
    "Handler",
    "LazyTracer",
    "MetricUnit",
    "entry",
    "http_entry",
    "logger",
    "metrics",
    "traced_libraries",
    "tracer",
]
