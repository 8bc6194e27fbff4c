"""Run a command several times in a row while another process keeps one core busy (`make test-stress`).

A test that passes only on an idle machine fails in CI at random; this shows it before CI does. Each
round's outcome and duration is printed; the exit status is non-zero if any round failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time


def _spin() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="how many times to run the command")
    parser.add_argument("--busy", type=int, default=1, help="processes spinning on a core meanwhile")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    results: list[tuple[int, float]] = []
    try:
        for number in range(1, args.rounds + 1):
            print(f"== round {number}/{args.rounds} (with {args.busy} busy core(s)): {' '.join(command)}")
            sys.stdout.flush()
            started = time.monotonic()
            code = subprocess.call(command)
            results.append((code, time.monotonic() - started))
            print(f"== round {number}: {'passed' if code == 0 else f'FAILED (exit {code})'}")
    finally:
        for spinner in spinners:
            spinner.terminate()
    passed = sum(1 for code, _ in results if code == 0)
    print(f"== {passed}/{args.rounds} rounds passed under load")
    for number, (code, seconds) in enumerate(results, 1):
        print(f"   round {number}: {'passed' if code == 0 else 'failed'} in {seconds:.0f} s")
    return 0 if passed == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
