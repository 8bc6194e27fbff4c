"""Memory items (MEM-20..29): which stored values a search or a namespace listing answers, and in what order.

Pure functions over plain values: the filter of a search (LangGraph's `filter`: exact matches and the
comparison operators `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`, nested objects compared field by field;
the numbers JSON cannot write, infinity and NaN, arrive as {"$numberDouble": "Infinity"} and compare as
Python's floats do, as in LangGraph's own stores: NaN equals nothing, infinity is above every number),
its query text (a case-insensitive term match over the value's strings: the share of the query's
distinct terms a value holds; Chinese, Japanese and Korean characters are terms one by one, since those
languages put no spaces between words), and the namespace conditions of a listing (prefix and suffix,
`*` matching any one label, `max_depth` truncating).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

#: A term: a run of letters, digits or underscores, or one CJK character (Han, kana, Hangul syllables).
_CJK: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TERM: Final = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
#: The filter operators LangGraph's stores take.
OPERATORS: Final = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
WILDCARD: Final = "*"
#: A number JSON cannot write, spelled as MongoDB's Extended JSON does: {"$numberDouble": "NaN"}.
NUMBER_DOUBLE: Final = "$numberDouble"
_NON_FINITE: Final = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
#: How much of a value's text is searched (its strings, depth first), so one huge value costs a bound.
MAX_TEXT_CHARS: Final = 100_000


_WORD: Final = re.compile(r"\w+")
_HAS_CJK: Final = re.compile(f"[{_CJK}]")


def terms(text: str) -> list[str]:
    """The terms of `text`, case-folded, in order."""
    folded = text.casefold()
    if not _HAS_CJK.search(folded):
        return _WORD.findall(folded)
    return _TERM.findall(folded)


def text_of(value: Any, limit: int = MAX_TEXT_CHARS) -> str:
    """Every string inside `value` (object values, list items; not the object keys), joined by spaces."""
    parts: list[str] = []
    size = 0
    pending: list[Any] = [value]
    while pending and size < limit:
        current = pending.pop()
        if isinstance(current, str):
            parts.append(current)
            size += len(current) + 1
        elif isinstance(current, Mapping):
            pending.extend(reversed(list(current.values())))
        elif isinstance(current, list | tuple):
            pending.extend(reversed(current))
    return " ".join(parts)[:limit]


def query_score(query_terms: Sequence[str], value: Any) -> float:
    """The share (0..1) of the query's distinct terms found in `value`'s text; 0 for an empty query."""
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    text = text_of(value).casefold()
    # A term absent as a substring is absent as a term: most values are ruled out without tokenizing.
    present = {term for term in wanted if term in text}
    if not present:
        return 0.0
    found = present & set(terms(text))
    return round(len(found) / len(wanted), 6)


def _compare(actual: Any, operator: str, expected: Any) -> bool:
    if operator == "$eq":
        return bool(actual == expected)
    if operator == "$ne":
        return bool(actual != expected)
    try:
        if operator == "$gt":
            return bool(actual > expected)
        if operator == "$gte":
            return bool(actual >= expected)
        if operator == "$lt":
            return bool(actual < expected)
        if operator == "$lte":
            return bool(actual <= expected)
    except TypeError:
        return False  # a string against a number: no order between them, so no match
    return False


def _matches(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if expected and all(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_compare(actual, op, operand) for op, operand in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_matches(actual.get(k), v) for k, v in expected.items())
    return bool(actual == expected)


def matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """True when `value` meets every condition of a search's `filter` (None or {} meets all)."""
    if not conditions:
        return True
    return all(_matches(value.get(field), expected) for field, expected in conditions.items())


def decode_numbers(conditions: Any) -> Any:
    """The filter with each {"$numberDouble": "Infinity" | "-Infinity" | "NaN"} read as that float;
    ValueError for a "$numberDouble" spelling anything else (finite numbers travel as JSON numbers)."""
    if isinstance(conditions, Mapping):
        if len(conditions) == 1 and NUMBER_DOUBLE in conditions:
            spelled = conditions[NUMBER_DOUBLE]
            if not isinstance(spelled, str) or spelled not in _NON_FINITE:
                raise ValueError(f'{NUMBER_DOUBLE} is "Infinity", "-Infinity" or "NaN", not {spelled!r}')
            return _NON_FINITE[spelled]
        return {key: decode_numbers(inner) for key, inner in conditions.items()}
    if isinstance(conditions, list):
        return [decode_numbers(inner) for inner in conditions]
    return conditions


def unknown_operators(conditions: Any) -> list[str]:
    """The `$...` keys of a filter that are not operators LangGraph knows (a typo is refused, not
    silently matching nothing)."""
    found: list[str] = []
    pending: list[Any] = [conditions]
    while pending:
        current = pending.pop()
        if isinstance(current, Mapping):
            for key, inner in current.items():
                if isinstance(key, str) and key.startswith("$") and key not in OPERATORS:
                    found.append(key)
                pending.append(inner)
    return sorted(set(found))


def _path_matches(labels: Sequence[str], pattern: Sequence[str]) -> bool:
    return len(labels) >= len(pattern) and all(
        p in (WILDCARD, label) for label, p in zip(labels, pattern, strict=False)
    )


def namespace_matches(
    namespace: Sequence[str], prefix: Sequence[str] | None = None, suffix: Sequence[str] | None = None
) -> bool:
    """Whether `namespace` starts with `prefix` and ends with `suffix` (`*` matches any one label)."""
    if prefix and not _path_matches(namespace, prefix):
        return False
    return not (suffix and not _path_matches(list(reversed(namespace)), list(reversed(suffix))))


def list_namespaces(
    namespaces: Iterable[Sequence[str]],
    *,
    prefix: Sequence[str] | None = None,
    suffix: Sequence[str] | None = None,
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[tuple[str, ...]]:
    """The distinct namespaces meeting the conditions, truncated to `max_depth` labels, sorted, then
    `offset` skipped and at most `limit` kept (as LangGraph's stores answer `list_namespaces`)."""
    found: set[tuple[str, ...]] = set()
    for namespace in namespaces:
        if namespace_matches(namespace, prefix, suffix):
            labels = tuple(namespace)
            found.add(labels[:max_depth] if max_depth is not None else labels)
    return sorted(found)[offset : offset + limit]


def literal_prefix(prefix: Sequence[str] | None) -> tuple[str, ...]:
    """The labels of `prefix` before its first wildcard: what a key-range read can narrow to."""
    labels: list[str] = []
    for label in prefix or ():
        if label == WILDCARD:
            break
        labels.append(label)
    return tuple(labels)
