"""Figures of the reliability runs (requests, faults injected, 5xx seen, messages lost) for RESULTS.md."""

from __future__ import annotations

import os
import platform
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

COLUMNS = (
    ("requests", "requests sent"),
    ("faults", "faults injected"),
    ("5xx", "5xx answered"),
    ("unexpected_5xx", "unexpected 5xx"),
    ("messages_posted", "messages posted"),
    ("messages_lost", "messages lost"),
)
NOTES = {
    "fuzz": "schemathesis on every route of the OpenAPI document, with and without identity",
    "concurrency": "20 clients on one conversation; concurrent deletes and posts; local server over HTTP",
    "dynamodb faults": "throttling, 5xx and connection errors injected into botocore; expected 5xx = 503",
    "crash": "turns interrupted between the two TransactWrites (raised in-process, SIGKILL of the server)",
    "provider faults": "timeouts within the remaining time, huge and failing replies; expected 5xx = 502",
    "isolation": "every route x {another user, deleted, nonexistent, malformed id}",
    "limits": "body size, field lengths, page sizes, tool-call sizes, item sizes",
}


class Figures:
    """Thread-safe counters per section; tests add what they sent, injected and saw."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sections: dict[str, Counter[str]] = {}

    def add(self, section: str, **counts: int) -> None:
        with self._lock:
            self.sections.setdefault(section, Counter()).update(counts)

    def response(self, section: str, status: int, *, expected_5xx: bool = False) -> None:
        """One request and its answer; a 5xx the test did not provoke is counted as unexpected."""
        counts = {"requests": 1}
        if status >= 500:
            counts["5xx"] = 1
            if not expected_5xx:
                counts["unexpected_5xx"] = 1
        self.add(section, **counts)

    def total(self, column: str) -> int:
        with self._lock:
            return sum(c[column] for c in self.sections.values())

    def markdown(self) -> str:
        header = "| section | " + " | ".join(title for _, title in COLUMNS) + " |"
        lines = [header, "|" + "---|" * (len(COLUMNS) + 1)]
        with self._lock:
            names = sorted(self.sections)
            for name in names:
                counts = self.sections[name]
                lines.append(f"| {name} | " + " | ".join(str(counts[key]) for key, _ in COLUMNS) + " |")
            totals = Counter[str]()
            for counts in self.sections.values():
                totals.update(counts)
        lines.append("| **total** | " + " | ".join(f"**{totals[key]}**" for key, _ in COLUMNS) + " |")
        notes = [f"- **{name}**: {NOTES[name]}" for name in names if name in NOTES]
        known = {key for key, _ in COLUMNS}
        with self._lock:
            extra = [
                f"- {name}: {key.replace('_', ' ')} = {value}"
                for name in names
                for key, value in sorted(self.sections[name].items())
                if key not in known
            ]
        tail = ["", "Other measurements:", "", *extra] if extra else []
        return "\n".join([*lines, "", *notes, *tail])


FIGURES = Figures()


#: Everything below this line in RESULTS.md is measured by other commands (soak, memory) and kept as is.
KEPT_MARKER = "<!-- measured separately: kept by make reliability -->"


def write_results(path: Path, *, passed: bool, duration_s: float) -> None:
    """RESULTS.md: the table, when and how it was produced; what follows KEPT_MARKER is kept."""
    kept = ""
    if path.exists():
        previous = path.read_text(encoding="utf-8")
        if KEPT_MARKER in previous:
            kept = previous[previous.index(KEPT_MARKER) :]
    budget = os.environ.get("FUZZ_MAX_EXAMPLES", "default")
    text = "\n".join(
        [
            "# Reliability results",
            "",
            f"Produced by `make reliability` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
            f"(Python {platform.python_version()}, {os.cpu_count()} CPUs, FUZZ_MAX_EXAMPLES={budget}, "
            f"{duration_s:.0f} s, {'all tests passed' if passed else 'SOME TESTS FAILED'}).",
            "",
            FIGURES.markdown(),
            "",
        ]
    )
    path.write_text(text + ("\n" + kept if kept else ""), encoding="utf-8")
