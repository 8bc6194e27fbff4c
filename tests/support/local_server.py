"""The real `chat-local-server` as a subprocess on a free port (ServerProcess), the environment its children
get, and the module-scoped fixtures that start it beside the stand-in model. Shared by the service's tests
(tests/e2e, tests/reliability) and the local server's own (local/tests).

A server is a fork of a process that has imported the server's libraries once per pytest worker
(tests/support/server_zygote.py): the same `main` with the same arguments, environment, working
directory and output, without 2 s of imports and parsing per start. `LOCAL_SERVER_EXEC=1`, or an
environment that differs from the worker's in what the interpreter, moto or Powertools read when they
start (`_READ_AT_START`), starts the console script instead.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import boto3
import httpx
import pytest

from tests.support.openai_standin import OpenAIStandin

REPO = Path(__file__).resolve().parents[2]
#: A small template of its own (echo functions, a table with a stream) the local server's tests run.
FIXTURE_TEMPLATE = REPO / "local" / "tests" / "fixtures" / "local_app" / "template.yaml"
_BIN = Path(sys.executable).parent
_SCRUBBED = (
    "LLM_BASE_URL",
    "LLM_API_KEY",
    "LLM_MODEL",
    "LLM_API_KEY_PARAMETER",
    "DYNAMODB_ENDPOINT",
    "TABLE_NAME",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
    "CHAT_API",
    "CHAT_USER",
    "CHAT_TOKEN",
    "PORT",
)


def settle_streams(url: str, timeout_s: float = 30.0) -> None:
    """Wait until the local server's stream pollers have delivered everything written before this call
    (each reports when its newest poll that found nothing new began): what a stream-fed read such as
    GET /usage (COST-3) shows is then settled. Fails after `timeout_s`."""
    since = time.time()
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=url, timeout=10.0) as client:
        while True:
            streams = client.get("/_local/health").json().get("streams") or []
            if all(float(s.get("caught_up_at") or 0) >= since for s in streams):
                return
            if time.monotonic() > deadline:
                pytest.fail(f"the local server's streams did not catch up in {timeout_s} s: {streams}")
            time.sleep(0.05)


def console_script(name: str) -> str:
    """The venv's console script (what `make run` and a user's shell run)."""
    path = _BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"console script {name!r} is not installed; run `make venv`")
    return found


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def local_client(endpoint: str, service: str = "dynamodb") -> Any:
    """A boto3 client of the local server's store (embedded moto or an external endpoint)."""
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


#: Environment variables the interpreter, moto or Powertools read when they start: a server whose
#: environment differs from the zygote's in one of these is started from the console script.
_READ_AT_START = (
    "PYTHON",
    "MOTO_",
    "TEST_SERVER_MODE",
    "S3_",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_EXECUTION_ENV",
)
_ZYGOTE = Path(__file__).with_name("server_zygote.py")


class _Zygote:
    """The worker's forking parent (started on first use, gone when the worker is)."""

    _lock = threading.Lock()
    _instance: _Zygote | None = None
    #: CPU seconds of the servers forked for this worker that have ended (tests.support.cpu_by_file
    #: bills them as it bills a child process it waited for).
    children_cpu_s = 0.0

    def __init__(self, timeout_s: float) -> None:
        self.env = child_env()
        self.folder = tempfile.mkdtemp(prefix="zygote-")
        self.path = os.path.join(self.folder, "socket")
        self.proc = subprocess.Popen(
            [sys.executable, str(_ZYGOTE), self.path],
            cwd=REPO,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        line = self.proc.stdout.readline() if ready else ""
        if line.strip() != "ready":
            self.proc.kill()
            rest = self.proc.communicate(timeout=10)[0] if ready else "(no output)"
            pytest.fail(f"the local servers' forking parent did not start: {line}{rest}")
        # Whatever it prints later (a warning) is read, so it never blocks on a full pipe.
        self.said: collections.deque[str] = collections.deque(maxlen=200)
        threading.Thread(target=self.said.extend, args=(self.proc.stdout,), daemon=True).start()
        atexit.register(self._close)

    def _close(self) -> None:
        """At the worker's exit: the zygote leaves when its stdin closes; it is reaped here, so its CPU
        and its servers' are the worker's children's (what `time` of the whole run counts)."""
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    @classmethod
    def get(cls, timeout_s: float) -> _Zygote:
        with cls._lock:
            if cls._instance is None or cls._instance.proc.poll() is not None:
                cls._instance = _Zygote(timeout_s)
            return cls._instance

    def accepts(self, env: Mapping[str, str]) -> bool:
        keys = {k for k in (*env, *self.env) if k.startswith(_READ_AT_START)}
        return all(env.get(k) == self.env.get(k) for k in keys)

    def fork(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, session: bool) -> _ForkedProcess:
        read_end, write_end = os.pipe()
        stdin = os.open(os.devnull, os.O_RDONLY)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            request = {"argv": list(argv), "env": dict(env), "cwd": str(cwd), "session": session}
            socket.send_fds(conn, [json.dumps(request).encode()], [stdin, write_end])
        finally:
            os.close(stdin)
            os.close(write_end)
        return _ForkedProcess(list(argv), conn, open(read_end, encoding="utf-8", errors="replace"))


def forked_servers_cpu_s() -> float:
    """CPU seconds of the servers this worker's forking parent forked and reaped (not in RUSAGE_CHILDREN)."""
    return _Zygote.children_cpu_s


class _ForkedProcess:
    """What the tests use of `subprocess.Popen`, for a server the zygote forked: its pid, its output, its
    exit status (the zygote reaps it and reports it), signals."""

    def __init__(self, args: list[str], conn: socket.socket, stdout: IO[str]) -> None:
        self.args = args
        self.stdout = stdout
        self.returncode: int | None = None
        self._conn = conn
        self._buffer = b""
        started = self._message(60.0)
        if started is None or "pid" not in started:
            raise RuntimeError(f"the forking parent did not fork a server: {started}")
        self.pid = int(started["pid"])

    def _message(self, timeout_s: float | None) -> dict[str, Any] | None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._conn], [], [], left)
            if not ready:
                return None
            chunk = self._conn.recv(4096)
            if not chunk:
                raise RuntimeError(
                    "the forking parent went away before the server's exit status; it said: "
                    + "".join(_Zygote._instance.said if _Zygote._instance else ())
                )
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return dict(json.loads(line))

    def poll(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            ended = self._message(timeout)
            if ended is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self.returncode = int(ended["exit"])
            self._conn.close()
            _Zygote.children_cpu_s += float(ended["cpu"])
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ServerProcess:
    """`chat-local-server --port 0 --data-dir DIR` in a subprocess; its URL is read from the banner."""

    def __init__(
        self,
        data_dir: Path,
        *,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        cwd: Path = REPO,
        session: bool = False,
    ) -> None:
        #: With `session`, the server leads its own process group (os.killpg kills it and its children).
        self.session = session
        self.data_dir = data_dir
        self.env = child_env(env)
        self.args = list(args)
        self.cwd = cwd
        self.proc: subprocess.Popen[str] | _ForkedProcess | None = None
        self.lines: list[str] = []
        self.url = ""
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def start(self, timeout_s: float = 90.0) -> ServerProcess:
        command = [
            console_script("chat-local-server"),
            "--port",
            "0",
            "--data-dir",
            str(self.data_dir),
            "--snapshot-interval",
            "0.5",
            *self.args,
        ]
        zygote = None if os.environ.get("LOCAL_SERVER_EXEC") == "1" else _Zygote.get(timeout_s)
        if zygote is not None and zygote.accepts(self.env):
            self.proc = zygote.fork(command, self.env, self.cwd, self.session)
        else:
            self.proc = subprocess.Popen(
                command,
                cwd=self.cwd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
                start_new_session=self.session,
            )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        match = self.wait_for(r"^\s+API\s+(http://\S+)", timeout_s)
        self.url = match.group(1)
        self.wait_for(r"^\s+Stop\s+Ctrl-C", timeout_s)
        return self

    def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def mark(self) -> int:
        """The number of output lines so far: pass it as `since` to wait only for later lines."""
        with self._lock:
            return len(self.lines)

    def wait_for(self, pattern: str, timeout_s: float = 30.0, *, since: int = 0) -> re.Match[str]:
        """Wait for an output line matching `pattern` (fails with the output if the server dies)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        seen = since
        while time.monotonic() < deadline:
            with self._lock:
                fresh = self.lines[seen:]
            for line in fresh:
                found = regex.search(line)
                if found:
                    return found
            seen += len(fresh)
            assert self.proc is not None
            if self.proc.poll() is not None and not fresh:
                pytest.fail(f"server exited ({self.proc.returncode}) before {pattern!r}:\n{self.output}")
            time.sleep(0.05)
        pytest.fail(f"no line matching {pattern!r} within {timeout_s} s:\n{self.output}")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                # Not stopped in time: its threads' stacks go to the output (SIGUSR1), then it is killed.
                self.proc.send_signal(signal.SIGUSR1)
                self._wait_quiet(5.0)
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._reader is not None:
            self._reader.join(timeout=5)
        return int(self.proc.returncode)

    def _wait_quiet(self, timeout_s: float) -> None:
        """Until the output stops growing for a moment (a stack dump is written), within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        seen = -1
        while time.monotonic() < deadline and len(self.lines) != seen:
            seen = len(self.lines)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.5)  # type: ignore[union-attr]

    def client(self, user: str | None = "alice") -> httpx.Client:
        headers = {"X-User-Id": user} if user else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0)


@pytest.fixture(scope="module")
def standin() -> Iterator[OpenAIStandin]:
    """The stand-in OpenAI-compatible server on loopback; tests switch its mode, it is reset after each."""
    with OpenAIStandin("ok") as server:
        yield server


@pytest.fixture
def model(standin: OpenAIStandin) -> Iterator[OpenAIStandin]:
    standin.set_mode("ok")
    standin.reset()
    yield standin
    standin.set_mode("ok")


@pytest.fixture(scope="module")
def server(standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One local server per module, its model the stand-in (LLM_BASE_URL), its data in a temp dir."""
    process = ServerProcess(
        tmp_path_factory.mktemp("local-data"),
        env={
            "LLM_BASE_URL": standin.base_url,
            "LLM_MODEL": "standin-model",
            "LLM_MAX_RETRIES": "1",
            # An erasure's last pass at once, not two minutes after the first (PRV-1).
            "ERASURE_SETTLE_SECONDS": "0",
        },
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client("alice") as client:
        yield client
