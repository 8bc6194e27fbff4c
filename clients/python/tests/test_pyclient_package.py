"""CLIENT-1: the client is a package of its own: it builds into a wheel that carries its modules, its
type marker, httpx as its one dependency and the framework extras."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_the_client_builds_into_a_wheel_with_its_extras(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(PACKAGE),
        ],
        check=True,
        timeout=240,
    )
    (wheel,) = tmp_path.glob("chat_history_client-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in (
        "__init__.py",
        "client.py",
        "agents.py",
        "langchain.py",
        "errors.py",
        "types.py",
        "py.typed",
    ):
        assert f"chat_history_client/{module}" in names
    assert not any(name.startswith(("tests/", "chat_core/")) for name in names)
    metadata = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist:")]
    assert any("httpx" in line and "extra" not in line for line in requires)
    assert any("openai-agents" in line and 'extra == "agents"' in line for line in requires)
    assert any("langchain-core" in line and 'extra == "langchain"' in line for line in requires)
