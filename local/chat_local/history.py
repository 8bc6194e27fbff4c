"""Seed-002 JSONL session log: one event per line, fixed fields, `history/<session_id>.jsonl`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal, Protocol

EventType = Literal[
    "session_start", "turn_start", "assistant", "action", "observation", "final", "turn_end", "session_end"
]
#: Every line carries exactly these keys (null where they do not apply) so the file loads into a
#: table (ES, ClickHouse, pandas) without schema guessing.
FIELDS = ("ts", "session_id", "turn", "step", "type", "content", "role", "meta")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_event(
    session_id: str,
    type_: EventType,
    *,
    turn: int | None = None,
    step: int | None = None,
    content: str | None = None,
    role: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "ts": now_iso(),
        "session_id": session_id,
        "turn": turn,
        "step": step,
        "type": type_,
        "content": content,
        "role": role,
        "meta": dict(meta or {}),
    }


class HistorySink(Protocol):
    """Where session events go (seed 002 `HistorySink`: append(event) / flush())."""

    def append(self, event: Mapping[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class JsonlHistorySink:
    """Appends events to `<log_dir>/<session_id>.jsonl`, one JSON object per line, flushed per event.

    Append mode: resuming a session (`chat --conversation ID`) continues the same file.
    """

    def __init__(self, log_dir: Path, session_id: str) -> None:
        self.path = Path(log_dir) / f"{session_id}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")

    def append(self, event: Mapping[str, Any]) -> None:
        if self._fh is None:
            raise ValueError(f"history {self.path} is closed")
        self._fh.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._fh.flush()

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class MemoryHistorySink:
    """Keeps events in a list (tests, `--no-log`)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def append(self, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def read_events(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL history file back (blank lines skipped)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
