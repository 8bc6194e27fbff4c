"""The local server's log lines name the invocation that wrote them, with functions running at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from chat_local.lambda_runtime import FunctionRuntime
from chat_local.template import FunctionSpec

#: Both handlers wait here, so each logs again only after the other has started.
BARRIER = threading.Barrier(2)

HANDLER = """
from aws_lambda_powertools import Logger

from test_local_runtime_logs import BARRIER

logger = Logger(service="shared-service")


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
def lambda_handler(event, context):
    logger.info("started", who=event["who"])
    BARRIER.wait(timeout=60)
    logger.info("finished", who=event["who"])
    return {"ok": True}
"""


def _runtime(tmp_path: Path, name: str) -> FunctionRuntime:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "app.py").write_text(HANDLER, encoding="utf-8")
    spec = FunctionSpec(
        logical_id=name,
        code_uri=folder,
        handler="app.lambda_handler",
        timeout_s=30,
        memory_mb=256,
        environment={},
    )
    return FunctionRuntime(spec, region="us-east-1")


def test_each_log_line_names_its_own_function_and_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two functions sharing one process (and one Powertools logger) log at once: every line carries the
    function name, request id and correlation id of the invocation that wrote it."""
    runtimes = {name: _runtime(tmp_path, name) for name in ("PostMessageFunction", "SummarizeFunction")}
    request_ids: dict[str, str] = {}

    def run(name: str) -> None:
        event = {"who": name, "requestContext": {"requestId": f"corr-{name}"}}
        request_ids[name] = runtimes[name].invoke(event).request_id

    threads = [threading.Thread(target=run, args=(name,)) for name in runtimes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    mine = [line for line in lines if line.get("who")]
    assert len(mine) == 4
    for line in mine:
        assert line["function_name"] == line["who"], line
        assert line["function_request_id"] == request_ids[line["who"]], line
        assert line["correlation_id"] == f"corr-{line['who']}", line


def test_a_request_that_finds_every_container_busy_is_throttled_not_queued(tmp_path: Path) -> None:
    """A function whose only container stays busy answers the next invocation with Throttled after the
    runtime's wait (the local API turns it into 429 with Retry-After) instead of queueing without end."""
    from chat_local.lambda_runtime import Throttled

    folder = tmp_path / "Busy"
    folder.mkdir()
    (folder / "app.py").write_text(
        "from test_local_runtime_logs import HOLD\n"
        "def lambda_handler(event, context):\n"
        "    if event.get('hold'):\n"
        "        HOLD.wait(timeout=60)\n"
        "    return {}\n",
        encoding="utf-8",
    )
    spec = FunctionSpec(
        logical_id="Busy",
        code_uri=folder,
        handler="app.lambda_handler",
        timeout_s=30,
        memory_mb=128,
        environment={},
    )
    runtime = FunctionRuntime(spec, region="us-east-1", max_concurrency=1, max_wait_s=0.2)
    first = threading.Thread(target=runtime.invoke, args=({"hold": True},))
    first.start()
    try:
        with pytest.raises(Throttled):
            _ask_until_refused(runtime)
    finally:
        HOLD.set()
        first.join(timeout=60)


HOLD = threading.Event()


def _ask_until_refused(runtime: FunctionRuntime) -> None:
    """Invoke until the first invocation holds the only container (no fixed sleep): then Throttled."""
    for _ in range(600):
        runtime.invoke({"probe": True})
