"""`python -m bench`: run every bench/bench_*.py, print markdown tables, write bench/RESULTS.md.

A section may carry an optional "summary": rows of [area, figure, goal, met]; they are gathered into one
summary table printed last and placed at the top of RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import pkgutil
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench import Section, progress

HERE = Path(__file__).resolve().parent


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render(section: Section) -> str:
    """One section as a markdown heading, table and notes."""
    columns = [str(c) for c in section["columns"]]
    lines = [f"### {section['title']}", ""]
    lines.append("| " + " | ".join(_cell(c) for c in columns) + " |")
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    for row in section["rows"]:
        if len(row) != len(columns):
            raise ValueError(
                f"section {section['title']!r}: row {row!r} has {len(row)} cells, not {len(columns)}"
            )
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    if section.get("notes"):
        lines += ["", str(section["notes"]).strip()]
    return "\n".join(lines) + "\n"


SUMMARY_COLUMNS = ["area", "figure", "goal", "met"]


def _check(section: Any, module: str) -> Section:
    if not isinstance(section, dict) or not {"title", "columns", "rows"} <= set(section):
        raise TypeError(
            f"{module}.run() must return dicts with title, columns, rows (and notes); got {section!r}"
        )
    return section


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def discover(only: list[str]) -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules([str(HERE)]) if m.name.startswith("bench_"))
    if only:
        names = [n for n in names if any(o in n for o in only)]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("only", nargs="*", help="run only modules whose name contains one of these")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md", help="markdown file to write")
    args = parser.parse_args(argv)

    names = discover(args.only)
    header = [
        "# Benchmark results",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- commit: {_commit()}",
        f"- Python: {platform.python_version()} ({platform.python_implementation()})",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        f"- processor: {platform.processor() or 'n/a'}",
        "- times are medians over repeats, wall clock (perf_counter) unless a section says CPU time; "
        "the machine may be shared",
        "",
    ]
    print("\n".join(header))
    body: list[str] = []
    summary: list[list[Any]] = []
    failures: list[str] = []
    for name in names:
        progress(f"{name}: running")
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"bench.{name}")
            sections = [_check(s, name) for s in module.run()]
            text = "\n".join(render(s) for s in sections)
            summary += [row for s in sections for row in s.get("summary") or ()]
        except Exception as exc:  # one broken module must not hide the others' figures
            failures.append(name)
            traceback.print_exc(file=sys.stderr)
            text = f"### {name}: FAILED\n\n`{type(exc).__name__}: {exc}`\n"
            progress(f"{name}: FAILED ({type(exc).__name__}: {exc})")
        else:
            progress(f"{name}: done in {time.perf_counter() - started:.1f}s")
        block = f"## {name}\n\n{text}"
        print(block, flush=True)
        body.append(block)
    top = ""
    if summary:
        top = render(
            {
                "title": "Summary",
                "columns": SUMMARY_COLUMNS,
                "rows": summary,
                "notes": "Key figures from the sections below, measured in this run.",
            }
        )
        print(top, flush=True)
    args.output.write_text(
        "\n".join(header) + "\n" + top + ("\n" if top else "") + "\n".join(body), encoding="utf-8"
    )
    progress(f"wrote {args.output}")
    if failures:
        progress(f"failed modules: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
