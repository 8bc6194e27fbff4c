"""OPS-3: one runtime per process, built from settings, holding every resource; nothing else keeps state."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest
from chat_core import runtime as runtimes
from chat_core.llm import client as llm_client
from chat_core.llm.provider import get_provider
from chat_core.observability import http_entry
from chat_core.runtime import Runtime, current, use
from chat_core.settings import Settings, get_settings
from chat_core.store import base, blobs
from moto import mock_aws

from tests.support import functions as api
from tests.support.table import create_table

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "layers" / "chat_core" / "chat_core"
#: Load-once caches of shipped, immutable data (or pure functions of their arguments): the only caches
#: left outside the runtime, each in one place.
SHIPPED_DATA_CACHES = {
    "engine.costs": "the shipped price table (prices.json)",
    "engine.window": "a counting mode's per-message counter",
    "engine.models": "the built-in model limits by name",
    "engine.tokens.approx": "the compiled patterns of the approximate count",
    "engine.tokens.encodings": "the tiktoken encodings shipped in the layer",
    "engine.tokens.families": "the compiled rules of the model -> family map",
}


@pytest.fixture
def installed() -> Iterator[None]:
    """Whatever a test installs is replaced by the runtime of before at the end."""
    before = runtimes.installed()
    yield
    replaced = use(before)
    if replaced is not None and replaced is not before:
        replaced.close()


def _items(table: str, region: str) -> int:
    return int(boto3.client("dynamodb", region_name=region).scan(TableName=table)["Count"])


def test_two_runtimes_of_different_settings_use_different_tables_and_endpoints(installed: None) -> None:
    """OPS-3: what a handler writes goes to the table of the runtime installed, not to a cached one."""
    with mock_aws():
        # Given two tables (in two regions) and a runtime for each
        create_table("runtime-a")
        create_table("runtime-b", region="eu-west-1")
        first = Runtime.from_settings(Settings(table_name="runtime-a"))
        second = Runtime.from_settings(Settings(table_name="runtime-b", region="eu-west-1"))
        # When a conversation is created under each in turn
        use(first)
        assert api.create().status == 201
        use(second)
        assert api.create().status == 201
        assert api.create().status == 201
        use(first)
        # Then each table holds what was written under its runtime (one conversation, then two)
        written = _items("runtime-a", "us-east-1")
        assert written > 0
        assert _items("runtime-b", "eu-west-1") == 2 * written
        assert len(api.listing().body["items"]) == 1
        # And each runtime's clients point where its settings say
        assert blobs._s3(first.settings).meta.region_name == "us-east-1"
        assert blobs._s3(second.settings) is not blobs._s3(first.settings)
        use(second)
        assert blobs._s3(second.settings).meta.region_name == "eu-west-1"
        assert base.connection().region == "eu-west-1"
        first.close()
        second.close()


def test_a_runtimes_resources_are_built_once_and_shared_by_threads(installed: None) -> None:
    """OPS-3: a warm process reuses its clients: asking again, from any thread, gives the same object."""
    # Given a runtime of its own settings
    runtime = Runtime.from_settings(Settings(llm_base_url="http://127.0.0.1:9/v1"))
    use(runtime)
    # When its resources are asked for twice, and by eight threads at once
    seen: list[Any] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        seen.append(llm_client._http_client())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then each is one object
    assert get_provider() is get_provider()
    assert base.connection() is base.connection()
    assert blobs._s3(get_settings()) is blobs._s3(get_settings())
    assert len({id(client) for client in seen}) == 1
    assert seen[0] is llm_client._http_client()
    # And settings other than the runtime's get their own, not the runtime's
    other = replace(runtime.settings, llm_base_url="http://127.0.0.1:10/v1")
    assert get_provider(other) is not get_provider()
    runtime.close()


def test_close_releases_the_http_pool_and_a_later_use_opens_another(installed: None) -> None:
    """OPS-3: `close()` releases what the runtime opened; the runtime still works after."""
    # Given a runtime whose HTTP pool is open
    runtime = Runtime.from_settings(Settings())
    use(runtime)
    pool = llm_client._http_client()
    assert not pool.is_closed
    # When it is closed
    runtime.close()
    # Then the pool is closed, and the next model call would open a new one
    assert pool.is_closed
    again = llm_client._http_client()
    assert again is not pool
    assert not again.is_closed
    runtime.close()


def test_current_builds_one_from_the_environment_and_use_installs_another(
    installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPS-3: scripts need nothing (the environment is read on first use); `use` returns what it replaced."""
    # Given no runtime installed and a table name in the environment
    monkeypatch.setenv("TABLE_NAME", "from-the-environment")
    use(None)
    # When the settings are asked for
    # Then they come from a runtime built from the environment, kept for later calls
    assert get_settings().table_name == "from-the-environment"
    assert current() is current()
    # And installing another returns the one it replaces
    mine = Runtime.from_settings(Settings(table_name="mine"))
    built = use(mine)
    assert built is not None
    assert built.settings.table_name == "from-the-environment"
    assert get_settings().table_name == "mine"


def test_the_runtime_fixture_installs_a_runtime_of_the_tests_environment(runtime: Runtime) -> None:
    """OPS-3: a test asks for a runtime (tests/conftest.py) instead of resetting module state."""
    # Given the fixture's runtime
    # When the process's runtime and settings are asked for
    # Then they are the fixture's, read from the environment the test runs in
    assert current() is runtime
    assert get_settings() is runtime.settings
    assert runtime.settings.region == os.environ["AWS_REGION"]


def test_the_handler_entry_installs_the_runtime_it_is_given(installed: None) -> None:
    """OPS-3: a handler's entry gives the process its runtime at init (the given one, else the current)."""
    # Given a runtime of its own
    mine = Runtime.from_settings(Settings(table_name="entry"))

    class App:
        def resolve(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
            return {"statusCode": 200}

    # When an entry is built with it
    http_entry(App(), mine)
    # Then it is the process's runtime
    assert current() is mine


_BUILD = """
import json, sys
before = set(sys.modules)
from chat_core.runtime import Runtime
runtime = Runtime.from_env()
print(json.dumps({"settings": runtime.settings.table_name, "loaded": sorted(set(sys.modules) - before)}))
"""


def test_building_a_runtime_opens_nothing_and_imports_nothing_heavy() -> None:
    """OPS-3, PERF-1: building the runtime reads settings only; no AWS, HTTP or model library is loaded,
    so no connection can be opened and cold start does not grow."""
    # Given a fresh interpreter with the layer on its path
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(PACKAGE.parent),
        "TABLE_NAME": "cold",
    }
    # When a runtime is built from the environment
    done = subprocess.run(
        [sys.executable, "-c", _BUILD], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    result = json.loads(done.stdout)
    # Then it holds the settings, and only chat_core's own small modules were imported
    assert result["settings"] == "cold"
    heavy = {"boto3", "botocore", "httpx", "pynamodb", "aws_lambda_powertools", "tiktoken", "pydantic"}
    assert {name.split(".")[0] for name in result["loaded"]} & heavy == set()
    assert {name for name in result["loaded"] if name.startswith("chat_core")} == {
        "chat_core",
        "chat_core.config",
        "chat_core.lazy_packages",
        "chat_core.runtime",
    }


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), ast.parse(path.read_text())


def _empty_container(node: ast.expr | None) -> bool:
    if isinstance(node, (ast.Dict, ast.List, ast.Set)):
        return not (getattr(node, "keys", None) or getattr(node, "elts", None))
    return isinstance(node, ast.Call) and ast.unparse(node.func) in {"dict", "list", "set", "OrderedDict"}


def test_no_module_but_the_runtime_keeps_mutable_process_state() -> None:
    """OPS-3: no `global` rebind, cache decorator or module-level container filled at run time outside
    `runtime`, but the load-once caches of shipped data, each in one place."""
    # Given every chat_core module's source
    rebinds, caches, containers = [], [], []
    for name, tree in _modules():
        # When its global statements, cache decorators and empty module-level containers are listed
        rebinds += [f"{name}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Global)]
        caches += [
            name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef)
            for d in n.decorator_list
            if "cache" in ast.unparse(d)
        ]
        containers += [
            f"{name}:{n.lineno}"
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and _empty_container(n.value)
        ]
    # Then only the runtime rebinds its slot, and caches hold shipped data only
    assert {entry.split(":")[0] for entry in rebinds} == {"runtime"}
    assert set(caches) <= SHIPPED_DATA_CACHES.keys()
    assert {entry.split(":")[0] for entry in containers} <= SHIPPED_DATA_CACHES.keys()


def test_nothing_resets_process_state_any_more() -> None:
    """OPS-3: tests and the local server build a runtime; no module offers a reset of its own state."""
    # Given every chat_core module
    # When the resets the modules used to offer are looked for
    gone = {"reset", "reset_process_state", "reset_settings", "reset_provider", "forget_keys"}
    found = [
        f"{name}.{n.name}"
        for name, tree in _modules()
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and (n.name in gone or n.name == "close_shared_client")
    ]
    # Then there are none
    assert found == []
