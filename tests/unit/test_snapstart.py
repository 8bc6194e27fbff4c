"""SnapStart (chat_core.startup): the runtime hooks registered with Lambda's `snapshot_restore_py`, run as
Lambda runs them, and what a SnapStart init prepares.

`snapshot_restore_py` exists only in Lambda's managed runtime; these tests install a stand-in module that
records what is registered, then play the snapshot and restores by calling the recorded hooks: before the
snapshot in the reverse order of registration, after a restore in the order of registration.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chat_core import startup
from chat_core.runtime import Runtime
from chat_core.store import base
from chat_core.store.keys import new_id

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


class FakeSnapshotRestore(types.ModuleType):
    """What the tests need of `snapshot_restore_py`: the two registration functions, recorded."""

    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.before: list[Callable[[], object]] = []
        self.after: list[Callable[[], object]] = []

    def register_before_snapshot(self, func: Callable[[], object]) -> Callable[[], object]:
        self.before.append(func)
        return func

    def register_after_restore(self, func: Callable[[], object]) -> Callable[[], object]:
        self.after.append(func)
        return func

    def snapshot(self) -> None:
        for hook in reversed(self.before):
            hook()

    def restore(self) -> None:
        for hook in self.after:
            hook()


@pytest.fixture
def lambda_hooks(monkeypatch: pytest.MonkeyPatch) -> FakeSnapshotRestore:
    fake = FakeSnapshotRestore()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    return fake


def test_the_hooks_are_registered_once_and_only_where_lambda_offers_them(
    lambda_hooks: FakeSnapshotRestore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SnapStart: one registration per process, however many entries ask; none outside Lambda."""
    # Given Lambda's hooks module
    # When the registration is asked for twice
    first, second = startup.register_snapshot_hooks(), startup.register_snapshot_hooks()
    # Then the two hooks are registered once
    assert (first, second) == (True, True)
    assert lambda_hooks.before == [startup.before_snapshot]
    assert lambda_hooks.after == [startup.after_restore]
    # Given no such module (a laptop, the local server)
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)
    # Then nothing is registered and nothing fails
    assert startup.register_snapshot_hooks() is False


def _restored_copy(
    fake: FakeSnapshotRestore, state: Any, jitter_state: Any
) -> tuple[list[float], list[float]]:
    """One environment resumed from the snapshot: the generators as the snapshot froze them, then the
    hooks after restore, then what the code would draw."""
    random.setstate(state)
    base._rng.setstate(jitter_state)
    fake.restore()
    return [random.random() for _ in range(5)], [base._rng.random() for _ in range(5)]


def test_two_restored_copies_draw_different_random_sequences(lambda_hooks: FakeSnapshotRestore) -> None:
    """SnapStart: the snapshot freezes the generators; after restore each copy is reseeded from the OS."""
    # Given the hooks registered and a snapshot taken with the generators in one state
    startup.register_snapshot_hooks()
    lambda_hooks.snapshot()
    state, jitter_state = random.getstate(), base._rng.getstate()
    # When two environments are resumed from it
    first = _restored_copy(lambda_hooks, state, jitter_state)
    second = _restored_copy(lambda_hooks, state, jitter_state)
    # Then they draw different sequences, from `random` and from the store's retry jitter alike
    assert first[0] != second[0]
    assert first[1] != second[1]
    # (without the hook, both copies would repeat the snapshot's sequence)
    random.setstate(state)
    frozen = [random.random() for _ in range(5)]
    random.setstate(state)
    assert frozen == [random.random() for _ in range(5)]


def test_a_restored_copy_builds_a_new_dynamodb_connection(
    lambda_hooks: FakeSnapshotRestore, runtime: Runtime
) -> None:
    """SnapStart: no connection, pool or client of the init phase is used after a restore."""
    # Given the hooks registered and the table's connection built at init (as a pre-warmed init may)
    startup.register_snapshot_hooks()
    at_init = base.TableItem._get_connection()
    assert base.TableItem._get_connection() is at_init
    # When the snapshot is taken and an environment resumed from it
    lambda_hooks.snapshot()
    assert not runtime.built(base.TABLE)
    lambda_hooks.restore()
    # Then the connection the code uses is a new one, built on first use after the restore
    after = base.TableItem._get_connection()
    assert after is not at_init
    assert base.TableItem._get_connection() is after
    assert base.connection() is after.connection


def test_ids_made_across_a_restore_stay_unique_and_time_ordered(lambda_hooks: FakeSnapshotRestore) -> None:
    """SnapStart: ids come from the clock and the OS at the time of the call, so two copies resumed from
    one snapshot never make the same id, and an id made later sorts later."""
    # Given a snapshot and an id made before it
    startup.register_snapshot_hooks()
    before = new_id(now_ms=1_700_000_000_000)
    lambda_hooks.snapshot()
    state = random.getstate()
    # When two copies are resumed and each makes ids in the same millisecond
    ids: list[str] = []
    for _ in range(2):
        random.setstate(state)
        lambda_hooks.restore()
        ids += [new_id(now_ms=1_700_000_000_001) for _ in range(100)]
    # Then every id is unique and sorts after the one made before the snapshot
    assert len(set(ids)) == len(ids)
    assert all(made > before for made in ids)
    assert new_id() > max(ids)


def _app_module(name: str, folder: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, FUNCTIONS / folder / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_function_registers_the_hooks_at_init_and_builds_its_tracer_there_under_snapstart(
    lambda_hooks: FakeSnapshotRestore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PERF-1, SnapStart: importing a function's app.py (its init) registers the hooks; a SnapStart init
    also builds the Tracer, so the snapshot holds it and no restored environment pays for it."""
    from chat_core import observability

    # Given list_models' app.py imported by a SnapStart init
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    monkeypatch.setattr(observability, "tracer", observability.LazyTracer(service="snapstart-test"))
    snapped = _app_module("snapstart_test_snapped", "list_models")
    # Then its routes and entry exist, the hooks are registered once, and the Tracer is built
    assert callable(snapped.lambda_handler)
    assert lambda_hooks.after == [startup.after_restore]
    assert lambda_hooks.before == [startup.before_snapshot]
    assert observability.tracer.built is True
