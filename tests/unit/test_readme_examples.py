"""The README's Python examples run as pasted (the README is the product's front door)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
#: A block that starts with this line talks to `make run`; tests/e2e/test_openai_sdk_e2e.py runs it
#: against a real local server.
NEEDS_SERVER = "# needs: make run\n"
ALL_BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
BLOCKS = [block for block in ALL_BLOCKS if not block.startswith(NEEDS_SERVER)]
SERVER_BLOCKS = [block for block in ALL_BLOCKS if block.startswith(NEEDS_SERVER)]


def test_readme_has_python_examples() -> None:
    """There are library examples to run (the sections for tokens and windows)."""
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_example_runs(block: str, capsys: pytest.CaptureFixture[str]) -> None:
    """TOK-1..7 and WIN-1..5 examples in the README execute without error, offline."""
    # Given a Python block from the README
    # When it runs in a fresh namespace
    exec(compile(block, str(README), "exec"), {"__name__": "readme_example"})
    # Then it finished (any exception fails the test)
    capsys.readouterr()
