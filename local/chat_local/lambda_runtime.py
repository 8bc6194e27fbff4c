"""Runs template functions in-process like Lambda: a pool of isolated module imports, a context object."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from chat_local.template import LOCAL_ACCOUNT_ID, FunctionSpec

Handler = Callable[[Any, Any], Any]

# Imports are serialised: sys.path and sys.modules are process-wide.
_IMPORT_LOCK = threading.Lock()


@dataclass
class LambdaContext:
    """What handlers read from `context` (Powertools Logger and Idempotency use these fields)."""

    function_name: str
    memory_limit_in_mb: int
    timeout_s: int
    region: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_stream_name: str = "local"
    _deadline: float = 0.0

    def __post_init__(self) -> None:
        self.invoked_function_arn = (
            f"arn:aws:lambda:{self.region}:{LOCAL_ACCOUNT_ID}:function:{self.function_name}"
        )
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self._deadline = time.monotonic() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Throttled(RuntimeError):
    """Every container of the function stayed busy longer than the runtime waits for one."""


class HandlerUnavailable(RuntimeError):
    """The function's code could not be imported (file missing, import error)."""


@dataclass
class Invocation:
    """The outcome of one invocation: the handler's return value, or the exception it raised."""

    result: Any
    error: BaseException | None
    duration_ms: float
    request_id: str
    timed_out: bool

    @property
    def error_payload(self) -> dict[str, Any]:
        """Lambda's error shape, as `lambda invoke` reports an unhandled exception."""
        assert self.error is not None
        return {
            "errorMessage": str(self.error),
            "errorType": type(self.error).__name__,
            "requestId": self.request_id,
            "stackTrace": traceback.format_exception(self.error)[-6:],
        }


def _module_name(spec: FunctionSpec, slot: int) -> str:
    return f"_chat_local_fn_{spec.logical_id}_{slot}"


def import_handler_module(spec: FunctionSpec, slot: int) -> ModuleType:
    """Import the function's module from its file under a unique name, with CodeUri first on sys.path.

    Sibling modules the handler imports by plain name (`import schemas`) are taken out of sys.modules
    afterwards so two functions with same-named siblings do not see each other's code, as in Lambda.
    """
    path = spec.module_file
    if not path.is_file():
        raise HandlerUnavailable(f"{spec.logical_id}: handler file {path} does not exist")
    name = _module_name(spec, slot)
    with _IMPORT_LOCK:
        before = set(sys.modules)
        code_dir = str(spec.code_uri)
        sys.path.insert(0, code_dir)
        try:
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise HandlerUnavailable(f"{spec.logical_id}: cannot load {path}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            try:
                module_spec.loader.exec_module(module)
            except Exception as exc:
                sys.modules.pop(name, None)
                detail = "".join(traceback.format_exception_only(exc)).strip()
                raise HandlerUnavailable(f"{spec.logical_id}: importing {path} failed: {detail}") from exc
        finally:
            sys.path.remove(code_dir)
            for added in set(sys.modules) - before - {name}:
                file = getattr(sys.modules[added], "__file__", None) or ""
                if file and Path(file).resolve().is_relative_to(spec.code_uri):
                    del sys.modules[added]
    if not callable(getattr(module, spec.handler_name, None)):
        raise HandlerUnavailable(f"{spec.logical_id}: {path} has no function {spec.handler_name!r}")
    return module


@dataclass
class _Container:
    module: ModuleType
    handler: Handler
    invocations: int = 0


#: The optional entry of a handler module that streams its answer: `stream_handler(event, context, emit)`.
STREAM_HANDLER = "stream_handler"


class FunctionRuntime:
    """Up to `max_concurrency` warm containers of one function; each serves one invocation at a time.

    Like Lambda, a container is a separate import of the handler module, so module-level state (the
    Powertools resolver, its current event) is never shared between concurrent requests.
    """

    def __init__(
        self, spec: FunctionSpec, *, region: str, max_concurrency: int = 32, max_wait_s: float = 10.0
    ) -> None:
        self.spec = spec
        self.region = region
        self.max_concurrency = max(1, max_concurrency)
        self.max_wait_s = max_wait_s
        self._idle: list[_Container] = []
        self._created = 0
        self._cond = threading.Condition()
        self.cold_starts = 0

    def warm(self) -> ModuleType:
        """Create one container now (at server start) so import errors show up before the first request."""
        with self._acquire() as container:
            return container.module

    def first_module(self) -> ModuleType:
        """A warm container's module, for reading module-level objects such as the resolver `app`."""
        with self._cond:
            if self._idle:
                return self._idle[0].module
        return self.warm()

    @contextmanager
    def _acquire(self) -> Iterator[_Container]:
        with self._cond:
            # Lambda throttles rather than queueing without end: past `max_wait_s` the caller is told to
            # retry (429 behind the local API, as API Gateway answers a throttled function).
            if not self._cond.wait_for(
                lambda: bool(self._idle) or self._created < self.max_concurrency, timeout=self.max_wait_s
            ):
                raise Throttled(
                    f"{self.spec.logical_id}: all {self.max_concurrency} containers stayed busy for "
                    f"{self.max_wait_s:g} s"
                )
            if self._idle:
                container: _Container | None = self._idle.pop()
            else:
                container = None
                self._created += 1
                slot = self._created
        if container is None:
            try:
                module = import_handler_module(self.spec, slot)
            except BaseException:
                with self._cond:
                    self._created -= 1
                    self._cond.notify()
                raise
            container = _Container(module, getattr(module, self.spec.handler_name))
            self.cold_starts += 1
        try:
            yield container
        finally:
            with self._cond:
                self._idle.append(container)
                self._cond.notify()

    def streams(self) -> bool:
        """The function has a streaming entry (`stream_handler(event, context, emit)`)."""
        return callable(getattr(self.first_module(), STREAM_HANDLER, None))

    def invoke(self, event: Any, emit: Callable[[dict[str, Any]], None] | None = None) -> Invocation:
        """Run the handler on `event`; exceptions are captured, never raised (except import failures).

        With `emit` the function's streaming entry runs instead, handing each chunk to `emit` as it
        is produced (what Lambda response streaming does for a deployed function)."""
        with self._acquire() as container:
            context = LambdaContext(
                function_name=self.spec.logical_id,
                memory_limit_in_mb=self.spec.memory_mb,
                timeout_s=self.spec.timeout_s,
                region=self.region,
            )
            started = time.perf_counter()
            error: BaseException | None = None
            result: Any = None
            try:
                with invocation_log_keys(context, event, cold_start=container.invocations == 0):
                    if emit is None:
                        result = container.handler(event, context)
                    else:
                        result = getattr(container.module, STREAM_HANDLER)(event, context, emit)
            except Exception as exc:
                error = exc
            container.invocations += 1
            duration_ms = (time.perf_counter() - started) * 1000
            return Invocation(
                result=result,
                error=error,
                duration_ms=duration_ms,
                request_id=context.aws_request_id,
                timed_out=duration_ms > self.spec.timeout_s * 1000,
            )


@contextmanager
def invocation_log_keys(context: LambdaContext, event: Any, *, cold_start: bool) -> Iterator[None]:
    """This invocation's function name, request id and correlation id on every Powertools log line it
    writes, whatever other functions run meanwhile.

    In Lambda each function has its own process; here all share one, and with it one Powertools Logger
    per service, whose `inject_lambda_context` keys are process-wide: the last invocation to start named
    every line (a post's log said SummarizeConversationFunction). Powertools' thread-safe keys live in a
    context variable, so they are this request thread's own, and they take precedence.
    """
    try:
        from aws_lambda_powertools.logging.formatter import clear_context_keys, set_context_keys
    except ImportError:  # a template whose functions do not use Powertools
        yield
        return
    request_context = event.get("requestContext") if isinstance(event, Mapping) else None
    correlation_id = request_context.get("requestId") if isinstance(request_context, Mapping) else None
    keys: dict[str, Any] = {
        "function_name": context.function_name,
        "function_memory_size": context.memory_limit_in_mb,
        "function_arn": context.invoked_function_arn,
        "function_request_id": context.aws_request_id,
        "cold_start": cold_start,
    }
    if isinstance(correlation_id, str):
        keys["correlation_id"] = correlation_id
    clear_context_keys()
    set_context_keys(**keys)
    try:
        yield
    finally:
        clear_context_keys()


def apply_function_environment(
    functions: Mapping[str, FunctionSpec],
    *,
    defaults: Mapping[str, str],
    forced: Mapping[str, str],
    user: Mapping[str, str],
) -> list[str]:
    """Set the union of the functions' environment variables in this process, before any handler import.

    Precedence: `forced` (the local store's endpoint and table) > what the user exported (`user`) >
    local-server `defaults` > the template's values. All functions share one process, so a name with
    different values in two functions is reported.
    """
    conflicts: list[str] = []
    merged: dict[str, str] = {}
    for spec in functions.values():
        for key, value in spec.environment.items():
            if key in merged and merged[key] != value:
                conflicts.append(f"{key} differs between functions; using {merged[key]!r}")
                continue
            merged[key] = value
    merged.update(defaults)
    merged.update({k: v for k, v in user.items() if k in merged})
    merged.update(forced)
    for key, value in merged.items():
        os.environ[key] = value
    return conflicts
