"""What a function does at init besides importing its routes: the SnapStart runtime hooks, and under
SnapStart (or provisioned concurrency) the work a first request would otherwise do.

Every function imports its routes at init (app.py), on demand as under SnapStart: an on-demand cold
start pays the same CPU whether the import runs at init or with the first request, and work done at
init is off the request path whenever Lambda initializes an environment ahead of a request (SnapStart
publishes the initialized environment as a snapshot; provisioned concurrency and proactive
initialization run init before any request arrives). Under SnapStart, `at_init` also builds the
Powertools Tracer (the X-Ray SDK's import and its patching), which an on-demand process leaves to its
first traced invocation.

SnapStart resumes many execution environments from one snapshot, so what the init phase left behind is
shared by all of them. `register_snapshot_hooks()` (called by every entry at init, through `at_init`)
registers, through the runtime's `snapshot_restore_py` (only importable in Lambda), a hook before the
snapshot that closes the process's runtime (no socket, connection pool or client with its credentials
is frozen into it) and a hook after each restore that reseeds `random` and the store's retry jitter from
the OS, and drops the runtime's resources again, so each restored copy builds its own clients with fresh
credentials on first use. Ids are made from the clock and `os.urandom`/`uuid4` at the time of the call
(`store.keys.new_id`), never at init, and deadlines are taken per invocation (`time.monotonic()` then),
so neither needs reset.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Callable

from chat_core.runtime import installed

#: Lambda's `AWS_LAMBDA_INITIALIZATION_TYPE` values for which init is not on a request's path.
PREWARMED_INITIALIZATIONS = frozenset({"snap-start", "provisioned-concurrency"})

_hooks_lock = threading.Lock()
#: Marks Lambda's hooks module once this process's hooks are registered with it: the registrations live
#: there, and so does the mark (chat_core keeps no process state of its own but the runtime's slot).
_REGISTERED_MARK = "_chat_core_hooks_registered"


def prewarmed() -> bool:
    """True when this process's init phase is off the request path (SnapStart or provisioned concurrency)."""
    return os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE", "") in PREWARMED_INITIALIZATIONS


def at_init(build_tracer: Callable[[], object]) -> None:
    """Run by every function's entry at init: register the SnapStart hooks (where Lambda offers them) and,
    when init is off the request path, build the Tracer now (`build_tracer`) so no request pays for it."""
    register_snapshot_hooks()
    if prewarmed():
        build_tracer()


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
