"""Memory items (MEM-20..29): an owner's JSON memories by namespace and key, for LangGraph's `BaseStore`
(clients/python `ChatHistoryStore`) and any agent that keeps memories of its own.

Put, get and delete one memory; search a namespace prefix (a filter on the values' fields and a query
text ranked by a case-insensitive term match over the values' strings, see engine/memory_match.py);
list the namespaces in use. Each caller sees only their own memories. Times are ISO 8601 UTC; `ttl` is
in minutes, as LangGraph counts it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from chat_core.chat.rules import now_iso
from chat_core.engine import memory_match
from chat_core.errors import InvalidInput, NotFound, PayloadTooLarge
from chat_core.store import memory_items as store
from chat_core.store.memory_items import MAX_SORT_KEY_BYTES, MemoryRecord

#: A namespace has 1..MAX_DEPTH labels (a search prefix 0..MAX_DEPTH).
MAX_DEPTH: Final = 10
MAX_LABEL_CHARS: Final = 128
MAX_KEY_CHARS: Final = 512
#: The most a value may take as compact JSON (UTF-8 bytes): well within DynamoDB's 400 KB item.
MAX_VALUE_BYTES: Final = 64 * 1024
#: TTL in minutes: above zero, at most ten years.
MAX_TTL_MINUTES: Final = 10 * 365 * 24 * 60
#: Namespace labels are joined by "." in a query string (GET/DELETE ?namespace=a.b), so a label holds none.
SEPARATOR: Final = "."
#: What LangGraph refuses in a label besides "." (every other character, newlines and spaces included, is
#: part of the label and matched exactly).
_NUL: Final = "\x00"
MAX_SEARCH_LIMIT: Final = 100
MAX_OFFSET: Final = 10_000
MAX_QUERY_CHARS: Final = 1_000
#: How many memories one search reads at most (in sort-key order under its prefix): the answer says
#: `truncated` when there were more. A namespace listing reads sort keys only, up to MAX_LISTED.
MAX_SCANNED: Final = 5_000
MAX_LISTED: Final = 50_000
MAX_NAMESPACES_LIMIT: Final = 1_000


class MemoryItemNotFound(NotFound):
    """No live memory of the caller under this namespace and key (404)."""

    code = "memory_item_not_found"


def label_problem(label: str) -> str | None:
    """Why `label` cannot be a namespace label, or None."""
    if not label:
        return "a namespace label cannot be empty"
    if len(label) > MAX_LABEL_CHARS:
        return f"a namespace label has at most {MAX_LABEL_CHARS} characters"
    if SEPARATOR in label:
        return "a namespace label cannot contain '.'"
    if _NUL in label:
        return "a namespace label cannot contain NUL"
    return None


def check_namespace(
    labels: Sequence[str], *, field: str = "namespace", empty_ok: bool = False
) -> tuple[str, ...]:
    """The namespace as a tuple; InvalidInput (400) naming `field` when it is not a valid one."""
    if not labels and not empty_ok:
        raise InvalidInput("a namespace needs at least one label", field=field)
    if len(labels) > MAX_DEPTH:
        raise InvalidInput(f"a namespace has at most {MAX_DEPTH} labels", field=field)
    for label in labels:
        problem = label_problem(label)
        if problem is not None:
            raise InvalidInput(problem, field=field)
    return tuple(labels)


def parse_namespace(text: str, *, field: str = "namespace") -> tuple[str, ...]:
    """A namespace written as its labels joined by "." (`users.alice`)."""
    return check_namespace(text.split(SEPARATOR), field=field)


def check_key(namespace: Sequence[str], key: str) -> str:
    if not key or len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"key must have 1..{MAX_KEY_CHARS} characters", field="key")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        raise InvalidInput("key cannot contain control characters", field="key")
    if store.sort_key_bytes(namespace, key) > MAX_SORT_KEY_BYTES - 8:
        raise InvalidInput("namespace and key together are too long (about 1,000 bytes at most)", field="key")
    return key


def _iso(epoch: int | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def view(record: MemoryRecord, score: float | None = None, *, scored: bool = False) -> dict[str, Any]:
    """The wire form of a memory (a search result carries its `score`)."""
    answer: dict[str, Any] = {
        "namespace": list(record.namespace),
        "key": record.key,
        "value": record.value,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "ttl": record.ttl_minutes,
        "expires_at": _iso(record.expires_at),
    }
    if scored:
        answer["score"] = score
    return answer


def put_item(
    owner: str, namespace: Sequence[str], key: str, value: Mapping[str, Any], ttl: float | None = None
) -> dict[str, Any]:
    """PUT /memory/items: store `value` (a JSON object) as `key` of `namespace`, created or replaced
    (`created_at` kept on replace); `ttl` minutes from now it expires (None: never)."""
    labels = check_namespace(namespace)
    check_key(labels, key)
    if not isinstance(value, Mapping):
        raise InvalidInput("value must be a JSON object", field="value")
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    size = len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise PayloadTooLarge(f"value takes {size} bytes as JSON; the limit is {MAX_VALUE_BYTES}")
    if ttl is not None and not 0 < ttl <= MAX_TTL_MINUTES:
        raise InvalidInput(f"ttl is in minutes: above 0, at most {MAX_TTL_MINUTES}", field="ttl")
    record = store.put(owner, labels, key, text, now=now_iso(), ttl_minutes=ttl)
    return view(record)


def get_item(owner: str, namespace: str, key: str, *, refresh_ttl: bool = True) -> dict[str, Any]:
    """GET /memory/items?namespace=&key=: the memory, its expiry pushed back when it has a TTL and
    `refresh_ttl`; MemoryItemNotFound (404) when there is none (or it expired)."""
    labels = parse_namespace(namespace)
    check_key(labels, key)
    record = store.get(owner, labels, key)
    if record is None:
        raise MemoryItemNotFound(f"no memory {key!r} in namespace {namespace!r}")
    if refresh_ttl:
        record = store.refresh(owner, record)
    return view(record)


def delete_item(owner: str, namespace: str, key: str) -> None:
    """DELETE /memory/items?namespace=&key=: gone at once (deleting what is not there is no error)."""
    labels = parse_namespace(namespace)
    store.delete(owner, labels, check_key(labels, key))


def _newest_first(records: list[MemoryRecord]) -> list[MemoryRecord]:
    records.sort(key=lambda r: (r.namespace, r.key))
    records.sort(key=lambda r: r.updated_at, reverse=True)
    return records


def search(
    owner: str,
    namespace_prefix: Sequence[str] = (),
    *,
    query: str | None = None,
    filter: Mapping[str, Any] | None = None,
    limit: int = 10,
    offset: int = 0,
    refresh_ttl: bool = True,
) -> dict[str, Any]:
    """POST /memory/items/search: the memories under `namespace_prefix` meeting `filter`; with `query`,
    only those sharing a term with it, best score first, else newest `updated_at` first; then `offset`
    skipped and `limit` kept. `{"items": [...], "truncated": bool}`."""
    labels = check_namespace(namespace_prefix, field="namespace_prefix", empty_ok=True)
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInput(f"limit must be 1..{MAX_SEARCH_LIMIT}", field="limit")
    if not 0 <= offset <= MAX_OFFSET:
        raise InvalidInput(f"offset must be 0..{MAX_OFFSET}", field="offset")
    try:
        filter = memory_match.decode_numbers(filter)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="filter") from exc
    unknown = memory_match.unknown_operators(filter or {})
    if unknown:
        known = ", ".join(sorted(memory_match.OPERATORS))
        raise InvalidInput(f"unknown filter operator {unknown[0]}; use one of {known}", field="filter")
    query_terms = memory_match.terms(query or "")
    if query is not None and (len(query) > MAX_QUERY_CHARS or not query_terms):
        raise InvalidInput(f"query must hold a word, in at most {MAX_QUERY_CHARS} characters", field="query")
    scanned = 0
    kept: list[MemoryRecord] = []
    for record in store.scan(owner, labels, max_items=MAX_SCANNED):
        scanned += 1
        if memory_match.matches_filter(record.value, filter):
            kept.append(record)
    if query_terms:
        scored = [(memory_match.query_score(query_terms, r.value), r) for r in kept]
        ranked = [(s, r) for s, r in scored if s > 0]
        ranked.sort(key=lambda pair: pair[1].updated_at, reverse=True)
        ranked.sort(key=lambda pair: pair[0], reverse=True)
        page: list[tuple[float | None, MemoryRecord]] = list(ranked[offset : offset + limit])
    else:
        page = [(None, r) for r in _newest_first(kept)[offset : offset + limit]]
    at = time.time()
    items = [
        view(store.refresh(owner, r, at=at) if refresh_ttl else r, score, scored=True) for score, r in page
    ]
    return {"items": items, "truncated": scanned >= MAX_SCANNED}


def list_namespaces(
    owner: str,
    *,
    prefix: Sequence[str] | None = None,
    suffix: Sequence[str] | None = None,
    max_depth: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> dict[str, Any]:
    """POST /memory/items/namespaces: the distinct namespaces of the caller's memories that start with
    `prefix` and end with `suffix` ("*" matches any one label), cut to `max_depth` labels, sorted;
    `offset` skipped, `limit` kept. `{"namespaces": [[label, ...], ...]}`."""
    for field, labels in (("prefix", prefix), ("suffix", suffix)):
        check_namespace([x for x in labels or () if x != memory_match.WILDCARD], field=field, empty_ok=True)
        if labels is not None and len(labels) > MAX_DEPTH:
            raise InvalidInput(f"{field} has at most {MAX_DEPTH} labels", field=field)
    if max_depth is not None and not 1 <= max_depth <= MAX_DEPTH:
        raise InvalidInput(f"max_depth must be 1..{MAX_DEPTH}", field="max_depth")
    if not 1 <= limit <= MAX_NAMESPACES_LIMIT:
        raise InvalidInput(f"limit must be 1..{MAX_NAMESPACES_LIMIT}", field="limit")
    if not 0 <= offset <= MAX_OFFSET:
        raise InvalidInput(f"offset must be 0..{MAX_OFFSET}", field="offset")
    stored = store.namespaces(owner, memory_match.literal_prefix(prefix), max_items=MAX_LISTED)
    found = memory_match.list_namespaces(
        stored, prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
    )
    return {"namespaces": [list(namespace) for namespace in found]}
