"""`chat-replay`: play a recorded RimWorld-style session file into a world over the HTTP API (DLG-7).

A session file is JSON Lines, one event per line (blank lines and lines starting with `#` are skipped):

    {"tick": 60000, "participants": ["Zorg", "Mira"], "speaker": "Zorg", "text": "Stay close."}
    {"tick": 60100, "participants": ["Zorg", "Mira", "Kai"], "speaker": "Mira", "text": "Psst.",
     "visibility": "whisper", "audience": ["Zorg"]}
    {"tick": 60200, "participants": ["Zorg", "Mira", "Kai"], "speaker": "Kai", "kind": "join"}
    {"tick": 62000, "save": "autosave-1"}
    {"load": "autosave-1"}

A line event may also carry `name`, `role` (default "character") and `present` (who is there when the
event's dialogue starts). Consecutive lines of one dialogue go in one request (at most 100 entries).
Every entry gets the id `replay-<line number>`, so replaying the same file again stores nothing twice.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from chat_local.client import DEFAULT_API, ApiError, ChatApi, ServerUnreachable

BATCH = 100
_LINE_KEYS = {
    "tick",
    "participants",
    "speaker",
    "text",
    "name",
    "role",
    "kind",
    "audience",
    "visibility",
    "present",
}


class SessionError(ValueError):
    """A session file line that is not a valid event (its number and what is wrong)."""


@dataclass
class _Batch:
    participants: tuple[str, ...] = ()
    present: list[str] | None = None
    entries: list[dict[str, Any]] = field(default_factory=list)


def _events(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            try:
                event = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise SessionError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(event, dict):
                raise SessionError(f"{path}:{number}: each line must be a JSON object")
            yield number, event


def _entry(number: int, event: dict[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(event) - _LINE_KEYS)
    if unknown:
        raise SessionError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key in ("tick", "participants", "speaker"):
        if key not in event:
            raise SessionError(f"{where}: a line event needs {key!r}")
    entry: dict[str, Any] = {
        "entry_id": f"replay-{number}",
        "participant_id": event["speaker"],
        "game_tick": event["tick"],
    }
    if "kind" in event:
        entry["kind"] = event["kind"]
    if "text" in event:
        entry["content"] = event["text"]
    if "kind" not in event or "text" in event:
        entry["role"] = event.get("role", "character")
    for key in ("name", "audience", "visibility"):
        if key in event:
            entry[key] = event[key]
    return entry


class Replay:
    """Sends a session's events in order; `out` gets one progress line per request."""

    def __init__(self, api: ChatApi, world: str, out: TextIO, pace_s: float = 0.0) -> None:
        self.api, self.world, self.out, self.pace_s = api, world, out, pace_s
        self.pending = _Batch()
        self.counts = {"entries": 0, "duplicates": 0, "saves": 0, "loads": 0, "requests": 0}

    def run(self, path: Path) -> dict[str, int]:
        for number, event in _events(path):
            where = f"{path}:{number}"
            if "save" in event:
                self.flush()
                self.call(
                    "POST",
                    f"/worlds/{self.world}/saves",
                    {"save_id": event["save"], "game_tick": event.get("tick")},
                )
                self.counts["saves"] += 1
                self.say(f"line {number}: saved {event['save']!r} at tick {event.get('tick')}")
            elif "load" in event:
                self.flush()
                self.call("POST", f"/worlds/{self.world}/saves/{event['load']}/load", None)
                self.counts["loads"] += 1
                self.say(f"line {number}: loaded {event['load']!r}")
            else:
                self.add(number, event, where)
            if self.pace_s:
                self.flush()
                time.sleep(self.pace_s)
        self.flush()
        return self.counts

    def add(self, number: int, event: dict[str, Any], where: str) -> None:
        entry = _entry(number, event, where)
        participants = tuple(sorted(event["participants"]))
        if participants != self.pending.participants or len(self.pending.entries) >= BATCH:
            self.flush()
            self.pending = _Batch(participants, event.get("present"))
        self.pending.entries.append(entry)

    def flush(self) -> None:
        batch = self.pending
        if not batch.entries:
            return
        body: dict[str, Any] = {"participants": list(batch.participants), "entries": batch.entries}
        if batch.present is not None:
            body["present"] = batch.present
        answer = self.call("POST", f"/worlds/{self.world}/dialogues/entries", body)
        self.counts["entries"] += int(answer.get("created", 0))
        self.counts["duplicates"] += int(answer.get("duplicates", 0))
        self.say(
            f"{answer['dialogue_id']}: {answer.get('created', 0)} stored, {answer.get('duplicates', 0)} "
            f"already there (total {self.counts['entries']})"
        )
        self.pending = _Batch()

    def call(self, method: str, path: str, body: Any) -> Any:
        self.counts["requests"] += 1
        return self.api.request(method, path, json=body)

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chat-replay",
        description="Replay a recorded RimWorld-style session (JSON Lines) into a dialogue world.",
    )
    parser.add_argument("session", type=Path, help="the session file (JSON Lines)")
    parser.add_argument("--world", required=True, help="the world id to replay into")
    parser.add_argument("--api", default=DEFAULT_API, help=f"the API's base URL (default {DEFAULT_API})")
    parser.add_argument("--user", default="replay", help="X-User-Id for the local server (default 'replay')")
    parser.add_argument("--token", help="a JWT for a deployed API (sent as Authorization: Bearer)")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds to wait between events (live demos)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.session.is_file():
        print(f"chat-replay: no such file: {args.session}", file=sys.stderr)
        return 2
    api = ChatApi(args.api, user=None if args.token else args.user, token=args.token)
    try:
        counts = Replay(api, args.world, sys.stdout, args.pace).run(args.session)
    except SessionError as exc:
        print(f"chat-replay: {exc}", file=sys.stderr)
        return 2
    except ApiError as exc:
        print(f"chat-replay: the API refused: {exc.status} {exc.code}: {exc}", file=sys.stderr)
        return 1
    except ServerUnreachable as exc:
        print(f"chat-replay: {exc}", file=sys.stderr)
        return 1
    finally:
        api.close()
    print(
        f"replayed into {args.world}: {counts['entries']} entries stored, {counts['duplicates']} already "
        f"there, {counts['saves']} saves, {counts['loads']} loads, {counts['requests']} requests"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
