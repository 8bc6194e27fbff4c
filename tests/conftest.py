"""Every test runs with fake AWS credentials and no real AWS endpoint (tests/support/fake_aws.py); the
longest test files are collected first, so pytest-xdist starts them first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from chat_core.runtime import Runtime, use

import tests.support.fake_aws  # noqa: F401 - sets the environment before anything imports boto3

#: Markers of the files that take the longest (builds, servers, browsers, big imports).
LONG = ("build", "slow", "e2e")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with a long test move to the front, in their own order; every test still runs, and a file's
    tests keep theirs. With `--dist loadfile` the workers take files in this order, so a 4-minute file
    does not start last while the other worker sits idle."""
    long_files = {item.path for item in items if any(item.get_closest_marker(name) for name in LONG)}
    items.sort(key=lambda item: item.path not in long_files)


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """A runtime built from the environment as the test set it (monkeypatch first), installed for the
    test; the one of before is put back and this one closed at the end."""
    built = Runtime.from_env()
    previous = use(built)
    yield built
    use(previous)
    built.close()
