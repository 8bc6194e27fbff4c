"""Run a command several times in a row while another process keeps one core busy (`make test-stress`).

A test that passes only on an idle machine fails in CI at random; this shows it before CI does. With
--fresh-clone REPO each round runs as CI does: in a new clone of REPO's committed HEAD, with its own venv
(`make venv` there; uv's cache makes it quick) and an empty bytecode cache (PYTHONPYCACHEPREFIX, as
the Makefile sets it, in the clone's venv), so first imports are as slow as on CI's first run; the clone
is deleted after its round. Each round's outcome and duration is printed; the exit status is
non-zero if any round failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _spin() -> None:
    while True:
        pass


def _say(text: str) -> None:
    print(f"== {text}", flush=True)


def _in_fresh_clone(repo: Path, number: int, command: list[str]) -> int:
    """Clone `repo`'s HEAD into a temp dir, `make venv` there, run `command` in it; the clone is removed."""
    with tempfile.TemporaryDirectory(prefix=f"stress-round{number}-") as scratch:
        clone = Path(scratch) / "repo"
        # The clone's own bytecode cache (this repo's make exported its own): empty, as on CI.
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(clone / ".venv" / "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        _say(f"round {number}: fresh clone of {head} in {clone}")
        code = subprocess.call(["git", "clone", "--quiet", str(repo), str(clone)])
        if code == 0:
            _say(f"round {number}: make venv in the clone")
            code = subprocess.call(["make", "--no-print-directory", "venv"], cwd=clone, env=env)
        if code != 0:
            _say(f"round {number}: could not prepare the clone (exit {code})")
            return code
        _say(f"round {number}: {' '.join(command)}")
        return subprocess.call(command, cwd=clone, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="how many times to run the command")
    parser.add_argument("--busy", type=int, default=1, help="processes spinning on a core meanwhile")
    parser.add_argument(
        "--fresh-clone",
        type=Path,
        metavar="REPO",
        help="run each round in a new clone of REPO's HEAD with its own venv (paths are the clone's)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    repo = args.fresh_clone.resolve() if args.fresh_clone is not None else None
    if repo is not None and shutil.which("git") is None:
        parser.error("--fresh-clone needs git")
    has_head = ["git", "-C", str(repo), "rev-parse", "HEAD"]
    if repo is not None and subprocess.call(has_head, stdout=subprocess.DEVNULL) != 0:
        parser.error(f"--fresh-clone: {repo} is not a git repository with a commit")
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    results: list[tuple[int, float]] = []
    try:
        for number in range(1, args.rounds + 1):
            where = "a fresh clone" if repo is not None else "this checkout"
            _say(f"round {number}/{args.rounds} in {where}, {args.busy} busy core(s): {' '.join(command)}")
            started = time.monotonic()
            code = _in_fresh_clone(repo, number, command) if repo is not None else subprocess.call(command)
            results.append((code, time.monotonic() - started))
            _say(f"round {number}: {'passed' if code == 0 else f'FAILED (exit {code})'}")
    finally:
        for spinner in spinners:
            spinner.terminate()
    passed = sum(1 for code, _ in results if code == 0)
    _say(f"{passed}/{args.rounds} rounds passed under load")
    for number, (code, seconds) in enumerate(results, 1):
        print(f"   round {number}: {'passed' if code == 0 else 'failed'} in {seconds:.0f} s")
    return 0 if passed == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
