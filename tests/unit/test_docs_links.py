"""The README is a front door and its links into docs/ hold: every file and anchor resolves (DOC-2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
DOCUMENTS = [README, *sorted(DOCS.glob("*.md"))]
#: `[text](target)` or `![alt](target)`; a target has no spaces (titles are not used here).
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text outside fenced code blocks (a link inside a code block is code, not a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path.read_text(encoding="utf-8")), flags=re.MULTILINE):
        slug = anchor(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The relative link targets of a markdown file (web addresses are not checked here)."""
    targets = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"^[a-z]+:", t)]


def test_the_readme_is_a_front_door_of_at_most_400_lines() -> None:
    """DOC-2: the README sells and starts the product; the reference lives in docs/."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    for must in ("make run", "make test", "## Layout", "## Architecture", "## Documentation"):
        assert must in text, must


def test_the_readme_links_every_page_of_docs() -> None:
    """DOC-2: every page of docs/ is reachable from the README's contents."""
    linked = {(README.parent / target.split("#")[0]).resolve() for target in links(README)}
    assert [p.name for p in DOCUMENTS[1:] if p.resolve() not in linked] == []


@pytest.mark.parametrize("path", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p in DOCUMENTS])
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    """DOC-2: a link of the README or a page of docs/ names a file that exists and, with `#anchor`, one of
    its headings."""
    # Given the relative links of one document
    broken = []
    for target in links(path):
        file_part, _, fragment = target.partition("#")
        # When each is resolved from the document's folder
        linked = (path.parent / file_part).resolve() if file_part else path
        # Then the file exists, and the heading too when an anchor is named
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and (linked.suffix != ".md" or fragment not in anchors(linked)):
            broken.append(f"{target}: no heading with this anchor")
    assert broken == []


def test_anchor_follows_github() -> None:
    """DOC-2: the anchors this test computes are GitHub's (punctuation and backticks dropped)."""
    assert anchor("Web console (CON-1..CON-6)") == "web-console-con-1con-6"
    assert anchor("What `make run` serves") == "what-make-run-serves"
    assert anchor("Library: `chat_core`") == "library-chat_core"
