"""pytest plugin: CPU seconds per test file, the worker's own and its finished child processes' (local
servers, builds, browsers), written as JSON lines to $CPU_BY_FILE (one line per file, each xdist worker
appends). Wall time says what a file waited for on a busy machine; CPU says what it costs the suite
wherever it runs. Enable with `-p tests.support.cpu_by_file`; `python -m tests.support.cpu_by_file F`
prints the files that cost the most. A child's CPU is counted when it is reaped: one a test left unwaited
is billed to the file whose next subprocess reaps it, so a file's figure can hold another's."""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> float:
    own = time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Servers forked by the worker's forking parent are its children, not the worker's: it reports them.
    local_server = sys.modules.get("tests.support.local_server")
    forked = local_server.forked_servers_cpu_s() if local_server else 0.0
    return own + children.ru_utime + children.ru_stime + forked


class _Meter:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.file: str | None = None
        self.started = 0.0
        self.wall = 0.0

    def switch(self, file: str | None) -> None:
        now, wall = _cpu(), time.monotonic()
        if self.file is not None:
            cpu, elapsed = round(now - self.started, 2), round(wall - self.wall, 2)
            line = {
                "file": self.file,
                "cpu": cpu,
                "wall": elapsed,
                "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
                # Threads still alive when the next file starts: a busy one left behind would bill its
                # CPU to every later file of this worker.
                "threads": sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()),
            }
            with self.out.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        self.file, self.started, self.wall = file, now, wall


_meter: _Meter | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _meter
    out = os.environ.get("CPU_BY_FILE")
    if out:
        _meter = _Meter(Path(out))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> None:
    if _meter is not None and _meter.file != str(item.path):
        _meter.switch(str(item.path))


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _meter is not None:
        _meter.switch(None)  # module-scoped teardowns ran before this


def main(path: str, top: int = 25) -> None:
    rows: dict[str, list[float]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        cpu, wall = rows.setdefault(row["file"], [0.0, 0.0]), row["wall"]
        cpu[0] += row["cpu"]
        cpu[1] += wall
    total = sum(cpu for cpu, _ in rows.values())
    print(f"{total:.0f} CPU s over {len(rows)} files")
    for file, (cpu, wall) in sorted(rows.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{cpu:7.1f} cpu {wall:7.1f} wall  {os.path.relpath(file)}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
