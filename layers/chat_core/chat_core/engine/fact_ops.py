"""Long-term facts (MEM-30..37): the extraction answer's operations, validated, and what they change.

The extraction call is shown the owner's current facts and the new messages of one conversation, and
answers with operations as JSON: `{"operations": [...]}`, each `add` (a new fact), `update` (a new text
that supersedes a current fact) or `delete` (a current fact that no longer holds). The answer is taken
whole or not at all: `parse_operations` raises MalformedOperations on anything it cannot trust, and
`plan` turns a valid answer into the facts to write. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

KINDS: Final = ("fact", "preference")
#: The longest text a fact may have (characters).
MAX_FACT_CHARS: Final = 500
#: The most operations one answer may carry (each is a write of the transaction that stores them).
MAX_OPERATIONS: Final = 20
#: A fact's states: current, replaced by a newer fact (`superseded_by`), or withdrawn by a `delete`.
ACTIVE: Final = "active"
SUPERSEDED: Final = "superseded"
RETRACTED: Final = "retracted"

Op = Literal["add", "update", "delete"]


class MalformedOperations(ValueError):
    """The model's answer is not a valid list of operations; nothing of it may be stored."""


@dataclass(frozen=True)
class Source:
    """A message a fact was taken from."""

    conversation_id: str
    message_id: str
    seq: int

    def to_dict(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "message_id": self.message_id, "seq": self.seq}

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> Source:
        return cls(str(value["conversation_id"]), str(value["message_id"]), int(value["seq"]))


@dataclass(frozen=True)
class Fact:
    """One long-term fact or preference of an owner, with where it came from."""

    fact_id: str
    text: str
    kind: str
    sources: tuple[Source, ...]
    created_at: str
    updated_at: str
    status: str = ACTIVE
    superseded_by: str | None = None
    supersedes: str | None = None
    model: str | None = None

    @property
    def active(self) -> bool:
        return self.status == ACTIVE


@dataclass(frozen=True)
class Operation:
    """One validated operation of an extraction answer."""

    op: Op
    fact_id: str | None = None
    text: str | None = None
    kind: str | None = None
    source_ids: tuple[str, ...] = ()


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def _json_object(answer: str) -> Mapping[str, Any]:
    text = answer.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise MalformedOperations(f"the answer is not JSON: {exc}") from exc
    if isinstance(value, list):
        value = {"operations": value}
    if not isinstance(value, Mapping) or not isinstance(value.get("operations"), list):
        raise MalformedOperations('the answer is not an object with an "operations" list')
    return value


def _text(raw: Mapping[str, Any], index: int) -> str:
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise MalformedOperations(f"operation {index}: text must be a non-empty string")
    text = " ".join(text.split())
    if len(text) > MAX_FACT_CHARS:
        raise MalformedOperations(f"operation {index}: text is longer than {MAX_FACT_CHARS} characters")
    return text


def _kind(raw: Mapping[str, Any], index: int, default: str | None) -> str:
    kind = raw.get("kind", default)
    if kind not in KINDS:
        raise MalformedOperations(f"operation {index}: kind must be one of {', '.join(KINDS)}")
    return str(kind)


def _sources(
    raw: Mapping[str, Any], index: int, message_ids: frozenset[str], required: bool
) -> tuple[str, ...]:
    given = raw.get("sources", [])
    if not isinstance(given, list) or not all(isinstance(s, str) for s in given):
        raise MalformedOperations(f"operation {index}: sources must be a list of message ids")
    unknown = [s for s in given if s not in message_ids]
    if unknown:
        raise MalformedOperations(f"operation {index}: sources name messages not shown: {unknown[:3]}")
    if required and not given:
        raise MalformedOperations(f"operation {index}: sources must name at least one message")
    return tuple(dict.fromkeys(given))


def parse_operations(
    answer: str, *, current: Mapping[str, Fact], message_ids: Sequence[str]
) -> list[Operation]:
    """The operations of an extraction answer, each checked: `add` needs a text and the ids of the
    shown messages it comes from; `update` and `delete` name a current fact (each fact once); kinds are
    "fact" or "preference". Raises MalformedOperations on the first thing wrong."""
    operations = _json_object(answer)["operations"]
    if len(operations) > MAX_OPERATIONS:
        raise MalformedOperations(f"more than {MAX_OPERATIONS} operations")
    shown = frozenset(message_ids)
    touched: set[str] = set()
    parsed: list[Operation] = []
    for index, raw in enumerate(operations):
        if not isinstance(raw, Mapping):
            raise MalformedOperations(f"operation {index} is not an object")
        op = raw.get("op")
        if op == "add":
            parsed.append(
                Operation(
                    "add",
                    text=_text(raw, index),
                    kind=_kind(raw, index, "fact"),
                    source_ids=_sources(raw, index, shown, required=True),
                )
            )
            continue
        if op not in ("update", "delete"):
            raise MalformedOperations(f'operation {index}: op must be "add", "update" or "delete"')
        fact_id = raw.get("id")
        if not isinstance(fact_id, str) or fact_id not in current:
            raise MalformedOperations(f"operation {index}: id names no current fact")
        if fact_id in touched:
            raise MalformedOperations(f"operation {index}: fact {fact_id} is changed twice")
        touched.add(fact_id)
        if op == "update":
            parsed.append(
                Operation(
                    "update",
                    fact_id=fact_id,
                    text=_text(raw, index),
                    kind=_kind(raw, index, current[fact_id].kind),
                    source_ids=_sources(raw, index, shown, required=True),
                )
            )
        else:
            parsed.append(Operation("delete", fact_id=fact_id, source_ids=_sources(raw, index, shown, False)))
    return parsed


@dataclass(frozen=True)
class Plan:
    """What an answer changes: facts to create, and current facts to mark superseded or retracted."""

    created: list[Fact] = field(default_factory=list)
    changed: list[Fact] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.created and not self.changed


def plan(
    operations: Sequence[Operation],
    *,
    current: Mapping[str, Fact],
    messages: Mapping[str, Source],
    now: str,
    new_id: Callable[[], str],
    model: str | None = None,
) -> Plan:
    """The writes of validated operations. An `update` creates a new fact and marks the one it replaces
    superseded by it (the old one is kept, hidden by default, for why the new one exists); a `delete`
    marks a fact retracted. An `add` whose text equals a current fact's (case and spaces aside) is
    dropped: the same thing said again is not a new fact."""
    known = {" ".join(f.text.lower().split()) for f in current.values() if f.active}
    created: list[Fact] = []
    changed: list[Fact] = []
    for operation in operations:
        sources = tuple(messages[i] for i in operation.source_ids)
        if operation.op == "add":
            key = " ".join((operation.text or "").lower().split())
            if key in known:
                continue
            known.add(key)
            created.append(
                Fact(new_id(), operation.text or "", operation.kind or "fact", sources, now, now, model=model)
            )
            continue
        old = current[operation.fact_id or ""]
        if operation.op == "update":
            fresh = Fact(
                new_id(),
                operation.text or "",
                operation.kind or old.kind,
                sources,
                now,
                now,
                supersedes=old.fact_id,
                model=model,
            )
            created.append(fresh)
            changed.append(replace(old, status=SUPERSEDED, superseded_by=fresh.fact_id, updated_at=now))
        else:
            changed.append(replace(old, status=RETRACTED, updated_at=now))
    return Plan(created, changed)


def render_block(facts: Sequence[Fact], fits: Callable[[str], bool]) -> tuple[str, list[Fact]] | None:
    """The window's labelled block of `facts` (newest first as given), as many as `fits` the budget:
    the block's text and the facts it holds, or None when not even one fits."""
    header = "Known facts about the user (remembered from earlier conversations):"
    kept: list[Fact] = []
    text = ""
    for fact in facts:
        label = "preference" if fact.kind == "preference" else "fact"
        lines = [
            header,
            *(f"- ({'preference' if f.kind == 'preference' else 'fact'}) {f.text}" for f in kept),
        ]
        candidate = "\n".join([*lines, f"- ({label}) {fact.text}"])
        if not fits(candidate):
            break
        kept.append(fact)
        text = candidate
    return (text, kept) if kept else None
