"""DLG-7: `chat-replay` plays the recorded RimWorld-style session (events/rimworld_session.jsonl) into a
world of the real local server: every line stored once, the whisper and the raid left out of the
memories they must not be in, progress printed as it goes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.local_server import ServerProcess, child_env, console_script

pytestmark = pytest.mark.e2e

SESSION = Path(__file__).resolve().parents[2] / "events" / "rimworld_session.jsonl"


def replay(
    server: ServerProcess, world: str, *extra: str, session: Path = SESSION
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            console_script("chat-replay"),
            str(session),
            "--world",
            world,
            "--api",
            server.url,
            "--user",
            "gm",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        check=False,
    )


def witnessed(api: httpx.Client, world: str, who: str) -> list[str]:
    answer = api.get(
        f"/worlds/{world}/history", params={"for": who, "limit": 100}, headers={"X-User-Id": "gm"}
    )
    assert answer.status_code == 200, answer.text
    return [e["content"] for e in answer.json()["witnessed"]]


def test_dlg7_the_sample_session_replays_into_a_world(server: ServerProcess, api: httpx.Client) -> None:
    """DLG-7: the sample session's lines are stored (10), its save made and loaded; Kai (late, not
    whispered to) remembers neither the whisper nor anything from before joining; nobody remembers the
    raid the load undid; replaying again stores nothing twice."""
    done = replay(server, "demo-1")
    assert done.returncode == 0, done.stderr
    assert "replayed into demo-1: 10 entries stored, 0 already there, 1 saves, 1 loads" in done.stdout
    assert "line 8: saved 'autosave-1' at tick 182000" in done.stdout
    kai = witnessed(api, "demo-1", "kai")
    assert kai[0] == "Kai joined."
    assert not any("food stores" in line or "caravan" in line for line in kai)
    assert any("turrets" in line for line in kai)
    zorg = witnessed(api, "demo-1", "zorg")
    assert any("food stores" in line for line in zorg)
    assert not any("Raid" in line for line in zorg)
    again = replay(server, "demo-1")
    assert again.returncode == 0, again.stderr
    assert "0 entries stored, 10 already there" in again.stdout


def test_dlg7_a_bad_session_line_is_named(server: ServerProcess, tmp_path: Path) -> None:
    """DLG-7: a malformed line stops the replay with the file and line number; an event the API refuses
    says why."""
    broken = tmp_path / "broken.jsonl"
    lines = SESSION.read_text(encoding="utf-8").splitlines()
    broken.write_text("\n".join([lines[1], "{oops", *lines[2:]]) + "\n", encoding="utf-8")
    result = replay(server, "demo-2", session=broken)
    assert result.returncode == 2
    assert f"{broken}:2: not valid JSON" in result.stderr
    refused = tmp_path / "refused.jsonl"
    event = {"tick": 1, "participants": ["a", "b"], "speaker": "c", "text": "who am I?"}
    refused.write_text(json.dumps(event) + "\n", encoding="utf-8")
    result = replay(server, "demo-3", session=refused)
    assert result.returncode == 1
    assert "the API refused: 400" in result.stderr
