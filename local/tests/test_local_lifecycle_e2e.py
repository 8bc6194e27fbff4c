"""The local server's life: restarts keep data, the offline model, stream functions, the startup banner."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_server import (
    FIXTURE_TEMPLATE,
    ServerProcess,
    child_env,
    console_script,
    local_client,
)
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e


def _wait_for_file_containing(path: Path, text: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(encoding="utf-8"):
            return
        time.sleep(0.1)
    pytest.fail(f"{path} never contained {text!r}")


def _moto_server_url(process: subprocess.Popen[str], timeout_s: float = 60.0) -> str:
    """The URL `moto_server -p 0` logs once it listens; its log is drained from then on (a full pipe
    would stall it)."""
    found: list[str] = []
    listening = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            match = re.search(r"Running on (http://127\.0\.0\.1:\d+)", line)
            if match and not found:
                found.append(match.group(1))
                listening.set()
        listening.set()

    threading.Thread(target=drain, daemon=True).start()
    assert listening.wait(timeout_s), f"moto_server did not start within {timeout_s} s"
    assert found, "moto_server exited before it listened"
    return found[0]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_data_survives_a_restart(tmp_path: Path, stop_signal: signal.Signals) -> None:
    """LOC-1: data survives a restart of `make run` (SIGTERM or Ctrl-C), kept in the data dir."""
    # Given a server with a conversation of two turns (offline model)
    first = ServerProcess(tmp_path).start()
    with first.client("dora") as api:
        posted = api.post("/messages", json={"content": "keep me"}).json()
        conversation_id = posted["conversation_id"]
        api.post("/messages", json={"conversation_id": conversation_id, "content": "and me"})
    # When it is stopped and started again on the same data dir
    code = first.stop(stop_signal)
    assert code == 0, f"the server did not stop cleanly ({code}):\n{first.output[-6000:]}"
    assert "data saved in" in first.output
    second = ServerProcess(tmp_path).start()
    try:
        # Then the banner counts the restored items, and the conversation is there, in order
        assert "items restored" in second.output
        with second.client("dora") as api:
            detail = api.get(f"/conversations/{conversation_id}").json()
            listed = api.get("/conversations").json()["items"]
            # and it can go on
            more = api.post("/messages", json={"conversation_id": conversation_id, "content": "third"})
    finally:
        second.stop()
    assert [m["content"] for m in detail["messages"] if m["role"] == "user"] == ["keep me", "and me"]
    assert [c["conversation_id"] for c in listed] == [conversation_id]
    assert more.status_code == 201
    assert (tmp_path / "dynamodb.json").exists()


#: tgkill(2), which sends a signal to one thread of a process (`kill` lets the kernel choose the thread).
_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())


@pytest.mark.skipif(_TGKILL is None, reason="tgkill's syscall number is known for x86_64 and aarch64 only")
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_landing_on_a_worker_thread_still_stops_the_server(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    """LOC-1: `kill` or Ctrl-C stops `make run` whichever of its threads the kernel hands the signal to
    (a busy server once ignored a SIGTERM that went to a background thread and had to be killed)."""
    # Given a running server, and one of its threads that is not the main thread
    server = ServerProcess(tmp_path).start()
    assert server.proc is not None
    pid = server.proc.pid
    workers = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)
    assert workers, "the server runs no thread besides its main thread"
    # When the stop signal is sent to that thread alone
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(_TGKILL, pid, workers[-1], int(stop_signal)) == 0, os.strerror(ctypes.get_errno())
    # Then the server saves and exits cleanly, as if the signal had reached the main thread
    with contextlib.suppress(subprocess.TimeoutExpired):  # still running: the stop below kills it
        server.proc.wait(timeout=30)
    code = server.stop(signal.SIGKILL, timeout_s=5.0)
    assert code == 0, f"the server did not stop on the signal ({code}):\n{server.output[-3000:]}"


def test_snapshot_on_an_interval_survives_a_hard_kill(tmp_path: Path) -> None:
    """Persistence: changes are snapshotted soon after they happen; SIGKILL loses at most that interval."""
    # Given a server that stored a conversation and then snapshotted it
    first = ServerProcess(tmp_path).start()
    with first.client("erin") as api:
        conversation_id = api.post("/conversations", json={"title": "survivor"}).json()["conversation_id"]
    _wait_for_file_containing(tmp_path / "dynamodb.json", conversation_id)
    # When the server is killed without a chance to save
    first.stop(signal.SIGKILL)
    second = ServerProcess(tmp_path).start()
    try:
        # Then the conversation is still there
        with second.client("erin") as api:
            detail = api.get(f"/conversations/{conversation_id}")
    finally:
        second.stop()
    assert detail.status_code == 200
    assert detail.json()["title"] == "survivor"


def test_a_corrupt_snapshot_stops_the_start_instead_of_losing_it(tmp_path: Path) -> None:
    """Nothing lost on failure: an unreadable snapshot is never overwritten by an empty table."""
    # Given a corrupt snapshot file
    snapshot = tmp_path / "dynamodb.json"
    snapshot.write_text("{not json", encoding="utf-8")
    # When the server starts
    result = subprocess.run(
        [console_script("chat-local-server"), "--port", "0", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        check=False,
    )
    # Then it refuses with a clear message and leaves the file alone
    assert result.returncode == 2
    assert "cannot read" in result.stderr
    assert snapshot.read_text(encoding="utf-8") == "{not json"


def test_offline_model_is_announced_in_the_banner_and_in_every_reply(tmp_path: Path) -> None:
    """LOC-1: without LLM_BASE_URL a built-in offline model answers, said so loudly."""
    # Given a server started without LLM_BASE_URL
    server = ServerProcess(tmp_path).start()
    try:
        # When a message is posted
        with server.client("fay") as api:
            reply = api.post("/messages", json={"content": "anyone there?"}).json()["assistant_message"]
    finally:
        server.stop()
    # Then the banner and the reply both say it is the offline model
    assert "OFFLINE MODEL" in server.output
    assert "offline model" in reply["content"]


def test_port_in_use_is_a_clear_message(tmp_path: Path) -> None:
    """`make run` twice: the second one says the port is taken and how to choose another."""
    # Given a port that is already taken
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        # When the server is started on it
        result = subprocess.run(
            [console_script("chat-local-server"), "--port", str(port), "--data-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=child_env(),
            check=False,
        )
    # Then it exits 2 with a hint
    assert result.returncode == 2
    assert f"PORT={port + 1} make run" in result.stderr


def test_stream_functions_receive_the_tables_stream_records(tmp_path: Path) -> None:
    """LOC-1: stream-triggered functions of the template get the embedded table's records in-process,
    filtered by the function's FilterCriteria, with partial batch failures retried."""
    # Given the test-only template: a writer route and a stream-triggered audit function
    server = ServerProcess(tmp_path, args=["--template", str(FIXTURE_TEMPLATE)]).start()
    try:
        with server.client(None) as api:
            endpoint = api.get("/_local/health").json()["dynamodb_endpoint"]
            # When two items are written through the API, one failing once in the stream function
            assert api.post("/items", json={"pk": "ITEM#1", "sk": "A"}).status_code == 201
            assert api.post("/items", json={"pk": "ITEM#2", "sk": "B", "fail_once": 1}).status_code == 201
            # Then both are audited (the failed one after a retry), and the audit items themselves are not
            dynamodb = local_client(endpoint)
            deadline = time.monotonic() + 20
            audited: list[str] = []
            health: dict[str, Any] = {}
            while time.monotonic() < deadline:
                items = dynamodb.query(
                    TableName="chat-history-local",
                    KeyConditionExpression="pk = :p",
                    ExpressionAttributeValues={":p": {"S": "AUDIT#INSERT"}},
                )["Items"]
                audited = sorted(i["sk"]["S"].split("#")[1] for i in items)
                health = api.get("/_local/health").json()
                # Done once both are audited and the audit items' own INSERT records were filtered out
                if len(audited) >= 2 and health["streams"][0]["filtered_out"] >= 2:
                    break
                time.sleep(0.2)
    finally:
        server.stop()
    assert audited == ["1|A", "2|B"]
    stream = health["streams"][0]
    assert stream["subscription"] == "AuditFunction.TableStream"
    assert stream["failures"] == 1
    assert stream["filtered_out"] >= 2  # the audit items' own INSERT records
    assert "STREAM" in server.output
    record = json.loads(items[0]["record"]["S"])
    assert record["eventSource"] == "aws:dynamodb"
    assert record["eventSourceARN"].startswith("arn:aws:dynamodb:us-east-1:")


def test_two_servers_cannot_share_a_data_dir(tmp_path: Path) -> None:
    """Nothing lost: a second server on the same data dir is refused instead of overwriting the snapshot."""
    # Given a running server
    first = ServerProcess(tmp_path).start()
    try:
        # When a second one starts on the same data dir (another port)
        result = subprocess.run(
            [console_script("chat-local-server"), "--port", "0", "--data-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=child_env(),
            check=False,
        )
    finally:
        first.stop()
    # Then it exits 2 and says why
    assert result.returncode == 2
    assert "in use by another chat-local-server" in result.stderr


def test_external_dynamodb_endpoint_gets_the_table_and_keeps_the_data(tmp_path: Path) -> None:
    """LOC-1: DYNAMODB_ENDPOINT (DynamoDB Local, a real table) is used instead of the embedded store,
    the table is created there when missing, and no local snapshot is written.

    A standalone moto server plays the external endpoint here (DynamoDB Local needs Java)."""
    # Given an external DynamoDB-compatible endpoint
    # (port 0: it binds a free port and names it, so no other process can take the port first)
    external = subprocess.Popen(
        [console_script("moto_server"), "-H", "127.0.0.1", "-p", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        endpoint = _moto_server_url(external)
        client = local_client(endpoint)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.list_tables()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        env = {"DYNAMODB_ENDPOINT": endpoint, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
        # When the local server runs against it, stores a conversation, and restarts
        first = ServerProcess(tmp_path, env=env).start()
        with first.client("gil") as api:
            conversation_id = api.post("/messages", json={"content": "external"}).json()["conversation_id"]
        first.stop()
        second = ServerProcess(tmp_path, env=env).start()
        with second.client("gil") as api:
            detail = api.get(f"/conversations/{conversation_id}")
        second.stop()
        tables = client.list_tables()["TableNames"]
    finally:
        external.terminate()
        external.wait(timeout=10)
    # Then the table was created there, the data lives there, and nothing was snapshotted locally
    assert "external endpoint" in first.output
    assert "created now" in first.output
    assert "(existing)" in second.output
    assert tables == ["chat-history-local"]
    assert detail.status_code == 200
    assert not (tmp_path / "dynamodb.json").exists()


def test_stopping_under_load_is_bounded_and_keeps_the_questions(tmp_path: Path) -> None:
    """A server stopped (SIGTERM) while posts wait on a slow model exits promptly with its data saved:
    the questions already stored are there after a restart. docs/local-development.md: stopping takes at
    most a few seconds whatever is running; the bound asserted here is generous for a busy machine."""
    with OpenAIStandin(mode="ok") as model:
        env = {"LLM_BASE_URL": model.base_url, "LLM_API_KEY": "sk-test", "LLM_MAX_RETRIES": "0"}
        server = ServerProcess(tmp_path, env=env).start()
        with server.client("ella") as api:
            assert api.post("/messages", json={"content": "opening"}).status_code == 201
        # Given three posts waiting for the model
        answers: list[int] = []

        def ask(n: int) -> None:
            try:
                with httpx.Client(base_url=server.url, headers={"X-User-Id": "ella"}, timeout=120) as client:
                    answers.append(client.post("/messages", json={"content": f"pending {n}"}).status_code)
            except httpx.HTTPError:
                answers.append(0)

        model.configure(mode="slow", slow_seconds=60.0, reset=True)
        threads = [threading.Thread(target=ask, args=(n,), daemon=True) for n in range(3)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(model.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(model.requests) == 3
        # When the server is told to stop
        started = time.monotonic()
        assert server.stop(signal.SIGTERM, timeout_s=30) == 0
        took = time.monotonic() - started
        assert "data saved in" in server.output, server.output
        # Then it stopped on its own (not killed), and the questions asked are kept
        restarted = ServerProcess(tmp_path).start()
        try:
            with restarted.client("ella") as api:
                listed = api.get("/conversations").json()["items"]
                titles = sorted(c["title"] for c in listed)
        finally:
            restarted.stop()
        assert titles == sorted(["opening", "pending 0", "pending 1", "pending 2"]), (took, titles)
