"""Every requirement id the repository cites is defined in docs/requirements.md, with its source (DOC-3)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "docs" / "requirements.md"
#: Where ids are cited: code, tests, documents, the template, events and the build.
CITING = [
    *("README.md", "Makefile", "template.yaml", "pyproject.toml", "docs", "functions", "layers", "local"),
    *("clients", "tests", "bench", "scripts", "events"),
]
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".jsonl", ".toml", ".txt", ".js", ".html", ".css"}
#: Build output, environments, caches (any folder whose name starts with a dot) and data corpora: not
#: written by us, or not citations (tests/data holds token-counting corpora whose text may look like an id).
SKIPPED_DIRS = {"__pycache__", "node_modules", "build", "dist"}
SKIPPED_PATHS = [ROOT / "tests" / "data", ROOT / "layers" / "chat_core" / "chat_core" / "encodings"]
#: An id: 2-6 capitals, a hyphen, a number (a version such as `PDF-1.7` is not one). A range such as
#: `API-18..20` or `CON-1..CON-6` cites every id in it.
ID = re.compile(r"\b([A-Z]{2,6})-(\d+)\b(?!\.\d)(?:(?:\.\.|–)(?:\1-)?(\d+)\b)?")
#: Names that have the shape of an id and are not requirements.
NOT_REQUIREMENTS = {"SHA-256", "UTF-8"}


def cited_files() -> Iterator[Path]:
    for name in CITING:
        top = ROOT / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            parts = set(path.relative_to(ROOT).parts)
            if (
                path.is_file()
                and (path.suffix in TEXT_SUFFIXES or path.name == "Makefile")
                and not parts & SKIPPED_DIRS
                and not any(part.startswith(".") for part in parts)
                and not any(part.endswith(".egg-info") for part in parts)
                and not any(path.is_relative_to(skipped) for skipped in SKIPPED_PATHS)
            ):
                yield path


def ids_in(text: str) -> set[str]:
    found = set()
    for prefix, first, last in ID.findall(text):
        for number in range(int(first), int(last or first) + 1):
            found.add(f"{prefix}-{number}")
    return found - NOT_REQUIREMENTS


def defined() -> dict[str, list[str]]:
    """id -> the cells of its row, from the tables of docs/requirements.md."""
    text = REQUIREMENTS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([A-Z]{2,6}-\d+) \|(.*)\|$", text, flags=re.MULTILINE)
    return {rid: [cell.strip() for cell in rest.split(" | ")] for rid, rest in rows}


def test_every_cited_requirement_id_is_defined() -> None:
    """DOC-3: an id cited in code, tests or documents names a requirement a reader can look up."""
    # Given the ids docs/requirements.md defines
    known = defined()
    # When every text file of the repository is searched for ids
    undefined = {}
    for path in cited_files():
        for rid in ids_in(path.read_text(encoding="utf-8", errors="replace")) - known.keys():
            undefined.setdefault(rid, str(path.relative_to(ROOT)))
    # Then each is defined there
    assert undefined == {}


def test_every_requirement_has_a_meaning_and_a_source() -> None:
    """DOC-3: each id has a one-line meaning and says which seed it comes from, or that it is a product
    decision; the page says what each seed is."""
    known = defined()
    assert len(known) >= 70
    for rid, cells in known.items():
        assert len(cells) == 2, rid
        assert all(cells), rid
        assert re.search(r"\bseeds? 00[0-4]\b|product decision", cells[1]), rid
    text = REQUIREMENTS.read_text(encoding="utf-8")
    for seed in ("000", "001", "002", "003", "004"):
        assert re.search(rf"^\| seed {seed} \| .+ \|$", text, flags=re.MULTILINE), seed


def test_the_id_pattern_reads_ranges_and_skips_versions() -> None:
    """DOC-3: a range cites every id in it; versions and digests are not ids."""
    cons = {f"CON-{n}" for n in range(1, 7)}
    assert ids_in("API-18..20 and CON-1..CON-6") == {"API-18", "API-19", "API-20"} | cons
    assert ids_in("%PDF-1.7, SHA-256, UTF-8") == set()
