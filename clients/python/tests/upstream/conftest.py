"""The upstream session tests (test_upstream_agents_session.py, copied from the OpenAI Agents SDK) mark
their coroutine tests `@pytest.mark.asyncio`; here such a test runs in a fresh event loop of its own
(`asyncio.run`), so the suite needs no asyncio plugin."""

from __future__ import annotations

import asyncio
import inspect

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "asyncio: a coroutine test, run in a fresh event loop (asyncio.run)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True
