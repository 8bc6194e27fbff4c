"""The runtime: one object, built from settings, that holds every resource a process opens.

A `Runtime` holds the settings and, each built on first use, the resources made from them: the
low-level DynamoDB connection, the S3 and SQS clients, the model provider and its pooled HTTP client,
the API-key and price-parameter caches, and the idempotency wrappers of the post and of the other
idempotent writes. Building a runtime reads the environment (`from_env`) or takes settings as given
(`from_settings`) and opens nothing: a handler's init stays as light as before, and the first
invocation that needs a client builds it, once, for every later one (the local server's threads
included). `close()` releases what was opened.

Each resource is built by the package it belongs to (`store.blobs` makes the S3 client, `llm.provider`
the provider): that package asks the current runtime for it by a key and hands over the function that
makes it, `current().resource(KEY, build)`. So this module imports nothing of chat_core but `config`, and
the layering stays as it is (a test checks it).

One runtime is current per process, and this module's slot is the one piece of mutable process state
chat_core keeps: `current()` returns it (building one from the environment on first use, so scripts need
nothing), `use(runtime)` installs another (tests, the local server). A handler's entry builds the
runtime at init (`chat_core.observability.entry`); tests and the local server build one from the
settings they want and install it instead of resetting caches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

from chat_core.config import Settings, read_settings

T = TypeVar("T")


class Runtime:
    """The settings of a process and the resources built from them, each built once on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._resources: dict[Hashable, Any] = {}
        self._closers: list[Callable[[], object]] = []
        # Reentrant: building one resource may ask for another (the provider for the HTTP pool).
        self._lock = threading.RLock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        """A runtime for these settings (nothing is opened until a resource is asked for)."""
        return cls(settings)

    @classmethod
    def from_env(cls) -> Runtime:
        """A runtime for the settings the environment holds now (read once, here)."""
        return cls(read_settings())

    def resource(
        self, key: Hashable, build: Callable[[Settings], T], close: Callable[[T], object] | None = None
    ) -> T:
        """The resource named `key`: built by `build(settings)` on first use, the same object after.

        Thread-safe: two threads asking at once get one object. `close`, if given, releases it on
        `close()`.
        """
        try:
            return cast(T, self._resources[key])
        except KeyError:
            pass
        with self._lock:
            if key not in self._resources:
                made = build(self.settings)
                self._resources[key] = made
                if close is not None:
                    self._closers.append(lambda: close(made))
            return cast(T, self._resources[key])

    def provide(self, key: Hashable, instance: Any) -> None:
        """Hold `instance` as the resource named `key` (a stand-in a test or the local server chose)."""
        with self._lock:
            self._resources[key] = instance

    def built(self, key: Hashable) -> bool:
        """Whether the resource named `key` exists yet."""
        return key in self._resources

    def close(self) -> None:
        """Release what was opened (the HTTP pool, AWS clients) and forget every resource; a later use
        builds it again."""
        with self._lock:
            closers, self._closers = self._closers, []
            self._resources.clear()
        for release in reversed(closers):
            release()


# -- the process's current runtime: the one mutable slot of chat_core -----------------------------------

_slot_lock = threading.Lock()
_current: Runtime | None = None


def current() -> Runtime:
    """The process's runtime: the one installed, else one built from the environment now (and kept)."""
    global _current
    runtime = _current
    if runtime is None:
        with _slot_lock:
            if _current is None:
                _current = Runtime.from_env()
            runtime = _current
    return runtime


def installed() -> Runtime | None:
    """The runtime installed, if any (none yet: `current()` would build one from the environment)."""
    return _current


def use(runtime: Runtime | None) -> Runtime | None:
    """Install `runtime` as the process's current one and return the one it replaces. None installs
    none: the next `current()` builds one from the environment as it is then."""
    global _current
    with _slot_lock:
        previous, _current = _current, runtime
    return previous


def for_settings(settings: Settings | None) -> Runtime:
    """The current runtime, or for settings other than its own a one-off runtime of them (nothing of
    it is kept: a caller that passes settings of its own builds what it uses each time)."""
    runtime = current()
    if settings is None or settings is runtime.settings or settings == runtime.settings:
        return runtime
    return Runtime(settings)
