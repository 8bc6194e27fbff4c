"""Reliability suite fixtures: one local server for the session (real HTTP, stand-in model, as many warm
containers per function as `make run`), counted clients, and RESULTS.md when RELIABILITY_RESULTS names
a file."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reliability.figures import FIGURES, write_results
from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

_STARTED = time.monotonic()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fuzz: schemathesis fuzzing (budget: FUZZ_MAX_EXAMPLES)")
    config.addinivalue_line("markers", "reliability: concurrency, faults, isolation and limits")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get("RELIABILITY_RESULTS")
    if target and FIGURES.sections:
        write_results(Path(target), passed=exitstatus == 0, duration_s=time.monotonic() - _STARTED)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES.sections and (os.environ.get("RELIABILITY_RESULTS") or os.environ.get("RELIABILITY_SUMMARY")):
        terminalreporter.write_sep("=", "reliability figures")
        terminalreporter.write_line(FIGURES.markdown())


@pytest.fixture(scope="session")
def rel_standin() -> Iterator[OpenAIStandin]:
    with OpenAIStandin("ok") as server:
        yield server


@pytest.fixture
def rel_model(rel_standin: OpenAIStandin) -> Iterator[OpenAIStandin]:
    """The stand-in model in "ok" mode for this test (and back to "ok" after it)."""
    rel_standin.configure(mode="ok", reset=True)
    yield rel_standin
    rel_standin.configure(mode="ok")


@pytest.fixture(scope="session")
def rel_server(
    rel_standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """`chat-local-server` with 20 warm containers per function, so 20 requests really run at once."""
    process = ServerProcess(
        tmp_path_factory.mktemp("reliability-data"),
        env={"LLM_BASE_URL": rel_standin.base_url, "LLM_MODEL": "standin-model", "LLM_MAX_RETRIES": "0"},
        args=["--ttl-sweep-interval", "0"],  # the default concurrency, as `make run`
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
def store_endpoint(rel_server: ServerProcess) -> str:
    """The embedded DynamoDB's endpoint, from the banner (tests read the table directly with it)."""
    found = re.search(r"DynamoDB\s+embedded moto at (\S+), table (\S+)", rel_server.output)
    assert found, rel_server.output
    return found.group(1)


@pytest.fixture(scope="session")
def store_table(rel_server: ServerProcess) -> str:
    found = re.search(r"DynamoDB\s+embedded moto at (\S+), table (\S+)", rel_server.output)
    assert found, rel_server.output
    return found.group(2)


ClientFactory = Callable[..., httpx.Client]


@pytest.fixture
def counted_client(rel_server: ServerProcess) -> Iterator[ClientFactory]:
    """httpx clients for the local server whose answers are counted in the section's figures."""
    made: list[httpx.Client] = []

    def make(user: str | None, section: str, *, expected_5xx: bool = False) -> httpx.Client:
        def count(response: httpx.Response) -> None:
            FIGURES.response(section, response.status_code, expected_5xx=expected_5xx)

        client = httpx.Client(
            base_url=rel_server.url,
            headers={"X-User-Id": user} if user else {},
            timeout=60.0,
            event_hooks={"response": [count]},
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
