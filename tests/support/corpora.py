"""The TOK-7 calibration corpora (tests/data/tokens) and the one definition of a paragraph unit.

Shared by the fit (scripts/fit_approx_tokens.py), the tests and `make bench`, so the paragraph bands
they report are measured on the same units.
"""

from __future__ import annotations

import re
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parents[1] / "data" / "tokens"


def corpus(category: str, split: str) -> str:
    """The text of one corpus: `split` is "fit" or "holdout"."""
    return (CORPUS_DIR / f"{category}.{split}.txt").read_text(encoding="utf-8")


def paragraph_units(text: str, min_chars: int = 200) -> list[str]:
    """Paragraphs (blank-line separated), short ones merged forward until each has >= min_chars."""
    units: list[str] = []
    pending = ""
    for paragraph in (p for p in re.split(r"\n\s*\n", text) if p.strip()):
        pending = f"{pending}\n\n{paragraph}" if pending else paragraph
        if len(pending) >= min_chars:
            units.append(pending)
            pending = ""
    if pending:
        if units:
            units[-1] += "\n\n" + pending
        else:
            units.append(pending)
    return units
