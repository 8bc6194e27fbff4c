"""The Python examples of the README and of every page in docs/ run as pasted (DOC-1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The README is the front door; the reference it links to lives in docs/ and is checked the same way.
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
#: A block that starts with this line talks to `make run`; tests/e2e/test_openai_sdk_e2e.py runs it
#: against a real local server.
NEEDS_SERVER = "# needs: make run\n"


class Example(NamedTuple):
    """One ```python block and the document it is in."""

    path: Path
    code: str

    @property
    def name(self) -> str:
        return str(self.path.relative_to(ROOT))


ALL_BLOCKS = [
    Example(path, code)
    for path in DOCUMENTS
    for code in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)
]
BLOCKS = [block for block in ALL_BLOCKS if not block.code.startswith(NEEDS_SERVER)]
SERVER_BLOCKS = [block for block in ALL_BLOCKS if block.code.startswith(NEEDS_SERVER)]


def test_the_documents_have_python_examples() -> None:
    """DOC-1: there are library examples to run (tokens and windows) and examples for a local server."""
    assert len(BLOCKS) >= 2
    assert SERVER_BLOCKS


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.name}-block{i}" for i, b in enumerate(BLOCKS)])
def test_documented_python_example_runs(block: Example, capsys: pytest.CaptureFixture[str]) -> None:
    """DOC-1: TOK-1..7 and WIN-1..5 examples in the README and docs/ execute without error, offline."""
    # Given a Python block from the README or a page of docs/
    # When it runs in a fresh namespace
    exec(compile(block.code, str(block.path), "exec"), {"__name__": "readme_example"})
    # Then it finished (any exception fails the test)
    capsys.readouterr()
