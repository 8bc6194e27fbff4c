"""How a function starts: its routes imported on the first invocation, or at init when the init phase is
off the request path (SnapStart, provisioned concurrency), and the SnapStart runtime hooks.

Every function's app.py (the streaming web server's aside) is a few lines:
`lambda_handler, __getattr__ = deferred(__name__, __file__)`. Its routes (the resolver, the request
models, the operations they call) are in the sibling api.py, imported by `DeferredRoutes.load()`:

- on demand (a plain cold start), on the first invocation: the import Lambda times at init is this
  module and nothing of Powertools, pydantic, PynamoDB or the domains; the first request pays for them
  instead (the bench's "first call CPU" column shows both halves);
- at init when Lambda says the init phase is not on a request's path: `AWS_LAMBDA_INITIALIZATION_TYPE`
  is `snap-start` (the snapshot is taken after init, so what is imported then costs no request anything)
  or `provisioned-concurrency`.

SnapStart resumes many execution environments from one snapshot, so what the init phase left behind is
shared by all of them. `register_snapshot_hooks()` (called once by `deferred`) registers, through the
runtime's `snapshot_restore_py` (only importable in Lambda), a hook before the snapshot that closes the
process's runtime (no socket, connection pool or client with its credentials is frozen into it) and a
hook after each restore that reseeds `random` and the store's retry jitter from the OS, and drops the
runtime's resources again, so each restored copy builds its own clients with fresh credentials on first
use. Ids are made from the clock and `os.urandom`/`uuid4` at the time of the call (`store.keys.new_id`),
never at init, and deadlines are taken per invocation (`time.monotonic()` then), so neither needs reset.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from chat_core.runtime import installed

#: Lambda's `AWS_LAMBDA_INITIALIZATION_TYPE` values for which init is not on a request's path.
PREWARMED_INITIALIZATIONS = frozenset({"snap-start", "provisioned-concurrency"})
#: The module of a function's folder that holds its routes.
ROUTES_FILE = "api.py"

_hooks_lock = threading.Lock()
#: Marks Lambda's hooks module once this process's hooks are registered with it: the registrations live
#: there, and so does the mark (chat_core keeps no process state of its own but the runtime's slot).
_REGISTERED_MARK = "_chat_core_hooks_registered"


def prewarmed() -> bool:
    """True when this process's init phase is off the request path (SnapStart or provisioned concurrency)."""
    return os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE", "") in PREWARMED_INITIALIZATIONS


class DeferredRoutes:
    """A function's api.py, imported once on first use (thread-safe: the local server runs threads)."""

    def __init__(self, module_name: str, module_file: str, routes_file: str = ROUTES_FILE) -> None:
        self.path = Path(module_file).with_name(routes_file)
        # Its own module name per function: every function's files share their names (app.py, api.py).
        self.name = f"{module_name}_{Path(routes_file).stem}"
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether api.py has been imported yet."""
        return self._module is not None

    def load(self) -> ModuleType:
        """api.py, imported on the first call (by path, under `self.name`), the same module after."""
        module = self._module
        if module is not None:
            return module
        with self._lock:
            if self._module is None:
                self._module = sys.modules.get(self.name) or self._import()
            return self._module

    def _import(self) -> ModuleType:
        spec = importlib.util.spec_from_file_location(self.name, self.path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the routes of {self.path}", name=self.name, path=str(self.path))
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(self.name, None)
            raise
        return module


def deferred(
    module_name: str, module_file: str, routes_file: str = ROUTES_FILE
) -> tuple[Callable[[Any, Any], Any], Callable[[str], Any]]:
    """A function's entry and module `__getattr__`: `lambda_handler, __getattr__ = deferred(__name__,
    __file__)` in app.py.

    `lambda_handler(event, context)` imports api.py on its first call and runs api.py's
    `lambda_handler`; any other attribute of app.py (`app`, `stream_handler`, `sink`...) is api.py's,
    imported on first access. When init is off the request path (`prewarmed()`), api.py is imported
    now. The SnapStart hooks are registered either way."""
    routes = DeferredRoutes(module_name, module_file, routes_file)

    def lambda_handler(event: Any, context: Any) -> Any:
        return routes.load().lambda_handler(event, context)

    def module_getattr(name: str) -> Any:
        # Dunder lookups (introspection, pickling, doctest) must not import the routes.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        return getattr(routes.load(), name)

    lambda_handler.routes = routes  # type: ignore[attr-defined]
    register_snapshot_hooks()
    if prewarmed():
        routes.load()
        _prewarm_tracer()
    return lambda_handler, module_getattr


def _prewarm_tracer() -> None:
    """Build the Powertools Tracer the routes' entry uses (the X-Ray SDK's import and its patching of
    botocore and httpx), which an on-demand process leaves to its first invocation: at a SnapStart init
    the snapshot keeps it, and no restored environment pays it."""
    observability = sys.modules.get("chat_core.observability")
    tracer = getattr(observability, "tracer", None)
    real = getattr(tracer, "real", None)
    if callable(real):
        real()


# -- SnapStart runtime hooks ------------------------------------------------------------------------------


def before_snapshot() -> None:
    """Run by Lambda before it snapshots the initialized environment: nothing opened goes into it."""
    _reset_runtime()


def after_restore() -> None:
    """Run by Lambda in each environment resumed from the snapshot: fresh randomness, fresh clients."""
    reseed()
    _reset_runtime()


def reseed() -> None:
    """Reseed the generators seeded at init from the OS: `random`'s global one and the store's jitter
    (every restored copy would otherwise draw the same sequence). `secrets`, `uuid4` and `os.urandom`
    read the OS each call and need nothing."""
    random.seed()
    base = sys.modules.get("chat_core.store.base")
    rng = getattr(base, "_rng", None)
    if isinstance(rng, random.Random):
        rng.seed()


def _reset_runtime() -> None:
    """Close the process's runtime: its DynamoDB connection, AWS clients and HTTP pool are dropped, and
    the next use builds them again (with the credentials and sockets of this environment)."""
    runtime = installed()
    if runtime is not None:
        runtime.close()


def register_snapshot_hooks() -> bool:
    """Register `before_snapshot` and `after_restore` with Lambda's `snapshot_restore_py`, once per
    process; False where that module does not exist (outside Lambda, or a runtime without SnapStart)."""
    with _hooks_lock:
        try:
            import snapshot_restore_py
        except ImportError:
            return False
        if getattr(snapshot_restore_py, _REGISTERED_MARK, False):
            return True
        snapshot_restore_py.register_before_snapshot(before_snapshot)
        snapshot_restore_py.register_after_restore(after_restore)
        setattr(snapshot_restore_py, _REGISTERED_MARK, True)
        return True
