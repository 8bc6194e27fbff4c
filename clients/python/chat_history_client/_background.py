"""The event loop the async client's own connections live on: one daemon thread per process, started on
first use. An `AsyncChatHistoryClient` sends each request there and awaits the answer from the caller's
loop, so the client (and the adapters over it) works from any event loop on any thread, one after another
(`asyncio.run` twice) or at once: no connection ever belongs to a caller's loop that may be closed."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_guard = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid = 0


def loop() -> asyncio.AbstractEventLoop:
    """The process's client loop, started when first needed (again in a forked child)."""
    global _loop, _thread, _pid
    with _guard:
        if _loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="chat-history-client", daemon=True)
            _thread.start()
            _pid = os.getpid()
        return _loop


def _check_not_on_loop() -> None:
    if _thread is not None and threading.current_thread() is _thread:
        raise RuntimeError("the client's own loop cannot wait for itself")


async def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the client loop and await its result from the caller's loop; cancelling the
    caller's await cancels it there too."""
    _check_not_on_loop()
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop()))


def wait(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run `coro` on the client loop and block this thread until it is done (synchronous callers)."""
    _check_not_on_loop()
    return asyncio.run_coroutine_threadsafe(coro, loop()).result(timeout)
