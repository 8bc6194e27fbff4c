"""Terms of a text for the recall index (MEM-1): words for spaced scripts, character bigrams for CJK.

NFKC then casefold; runs of Han, Hiragana, Katakana or Hangul become overlapping character bigrams (a
one-character run stands as itself), any other run of word characters is a word: English stopwords go,
a light stemmer folds plurals and possessives, digits stay. Terms are kept as 32-bit hashes (CRC32 of
their UTF-8) only: the index never holds readable text.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections import Counter
from typing import Final

_CJK: Final = (
    "\u1100-\u11ff\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
)
_TOKENS: Final = re.compile(f"([{_CJK}]+)|([^\\W{_CJK}_]+)")

#: A short English stopword list (function words that rank nothing); "s" and "t" are what an
#: apostrophe leaves behind ("user's", "don't").
STOPWORDS: Final = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "s",
        "she",
        "so",
        "t",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
    }
)


def stem(word: str) -> str:
    """A light English stemmer: plurals only ("cities" -> "city", "boxes" -> "box", "cats" -> "cat")."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order (repeats kept: their count is the term frequency)."""
    out: list[str] = []
    for match in _TOKENS.finditer(unicodedata.normalize("NFKC", text).casefold()):
        run = match.group(1)
        if run is not None:
            if len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
            continue
        word = match.group(2)
        if word in STOPWORDS:
            continue
        out.append(stem(word))
    return out


def term_hash(term: str) -> int:
    """The 32-bit hash a term is stored as."""
    return zlib.crc32(term.encode("utf-8"))


def analyse(text: str) -> Counter[int]:
    """Term hash -> frequency for one document (a message's text)."""
    return Counter(term_hash(t) for t in terms(text))


def query_terms(text: str) -> list[int]:
    """The distinct term hashes of a query, in first-seen order."""
    return list(dict.fromkeys(term_hash(t) for t in terms(text)))
