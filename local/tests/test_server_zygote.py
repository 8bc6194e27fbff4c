"""LOC-1: the local servers the tests start are forks of one parent that imported the server's libraries
(tests/support/server_zygote.py). Each fork must be the server a user starts: its own arguments,
environment and working directory, nothing of the parent's or of an earlier fork, and an exit status
as `subprocess.Popen` reports it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.local_server import ServerProcess, _ForkedProcess

pytestmark = pytest.mark.e2e


def test_each_forked_server_runs_with_its_own_environment_and_arguments(tmp_path: Path) -> None:
    # Given two servers forked from the same parent, one with a model configured and one without
    with_model = ServerProcess(
        tmp_path / "a", env={"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "forked-model"}
    ).start()
    offline = ServerProcess(tmp_path / "b", args=["--no-persist"], cwd=tmp_path).start()
    try:
        assert isinstance(with_model.proc, _ForkedProcess)
        assert isinstance(offline.proc, _ForkedProcess)
        # Then each banner shows what that server was given, not what the other or the parent had
        assert "forked-model at http://127.0.0.1:9/v1" in with_model.output
        assert "OFFLINE MODEL" not in with_model.output
        assert "OFFLINE MODEL" in offline.output
        assert "Data       not persisted (--no-persist)" in offline.output
        assert Path(f"/proc/{offline.proc.pid}/cwd").resolve() == tmp_path.resolve()
        with with_model.client("zed") as api:
            assert api.post("/conversations", json={}).status_code == 201
    finally:
        # And a stop reports the exit status as Popen does: 0 for a clean stop, -9 for a kill
        assert with_model.stop() == 0
        assert offline.stop(signal.SIGKILL) == -signal.SIGKILL


def test_an_environment_an_interpreter_reads_at_start_gets_a_fresh_interpreter(tmp_path: Path) -> None:
    # Given a server whose environment changes what Python reads before any import
    server = ServerProcess(tmp_path, env={"PYTHONHASHSEED": "7"}).start()
    try:
        # Then it was not forked: the parent's interpreter had already read its own value
        assert not isinstance(server.proc, _ForkedProcess)
    finally:
        assert server.stop() == 0
