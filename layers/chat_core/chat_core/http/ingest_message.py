"""One queue message of the batch ingestion function, checked by hand (PERF-1, cold start).

The message is `IngestMessageIn` of `chat_core.http.dialogue_schemas` (strict, unknown fields an error)
read from its JSON text, and this module accepts exactly what that model accepts from JSON, with the
same values (tests/unit/test_ingest_message.py compares the two over valid and broken messages). The
queue's records are small and every one is validated; building pydantic for them was a third of the
function's cold start. Direct invocations (one message, no `Records`) still use the model: a rare path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chat_core.dialogue.entries import ENTRY_FIELDS, MAX_ENTRIES_PER_REQUEST
from chat_core.store.dialogues import (
    MAX_ENTRY_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_PARTICIPANT_ID_CHARS,
    MAX_PARTICIPANTS,
)


class InvalidIngestMessage(ValueError):
    """The message is not one `IngestMessageIn` accepts; the text names the field."""


#: (min, max) characters of each text field; `None` max: unbounded.
_ENTRY_TEXT: dict[str, tuple[int, int | None]] = {
    "participant_id": (1, MAX_PARTICIPANT_ID_CHARS),
    "role": (1, 32),
    "content": (0, None),
    "name": (1, MAX_NAME_CHARS),
    "entry_id": (1, MAX_ENTRY_ID_CHARS),
}
_CHOICES = {"visibility": ("public", "private", "whisper"), "kind": ("line", "join", "leave")}
_ENTRY_REQUIRED = ("participant_id", "game_tick")
_MESSAGE_FIELDS = frozenset(
    {"owner", "world_id", "participants", "dialogue_id", "present", "entry", "entries"}
)


@dataclass(frozen=True)
class IngestMessage:
    """What `IngestMessageIn` gives the handler: whose world, the dialogue, the entries, who is present."""

    owner: str
    world_id: str
    participants: list[str] | None
    dialogue_id: str | None
    present: list[str] | None
    entries: list[dict[str, Any]]

    def target(self) -> str | list[str]:
        """The dialogue id, or the participant list."""
        return self.dialogue_id if self.dialogue_id is not None else list(self.participants or [])

    def entry_dicts(self) -> list[dict[str, Any]]:
        """The entries as plain mappings, absent optional fields left out."""
        return [dict(e) for e in self.entries]


def parse_ingest_message(body: str) -> IngestMessage:
    """The message in `body` (JSON text); InvalidIngestMessage naming the first problem otherwise."""
    try:
        data = json.loads(body)
    except ValueError as exc:  # not JSON, or text that is not valid Unicode
        raise InvalidIngestMessage(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidIngestMessage("the message must be a JSON object")
    _no_extra(data, _MESSAGE_FIELDS, "")
    owner = _required_text(data, "owner", 1, 512)
    world_id = _required_text(data, "world_id", 1, 64)
    participants = _participant_list(data, "participants")
    dialogue_id = _text(data, "dialogue_id", 1, 2100)
    present = _participant_list(data, "present")
    entry = data.get("entry")
    entries = data.get("entries")
    parsed: list[dict[str, Any]] = []
    if entry is not None:
        parsed.append(_entry(entry, "entry"))
    if entries is not None:
        if not isinstance(entries, list):
            raise InvalidIngestMessage("entries: must be a list")
        if not 1 <= len(entries) <= MAX_ENTRIES_PER_REQUEST:
            raise InvalidIngestMessage(f"entries: 1..{MAX_ENTRIES_PER_REQUEST} items")
        parsed += [_entry(item, f"entries.{n}") for n, item in enumerate(entries)]
    if (participants is None) == (dialogue_id is None):
        raise InvalidIngestMessage("give exactly one of participants or dialogue_id")
    if (entry is None) == (entries is None):
        raise InvalidIngestMessage("give exactly one of entry or entries")
    return IngestMessage(
        owner=owner,
        world_id=world_id,
        participants=participants,
        dialogue_id=dialogue_id,
        present=present,
        entries=parsed,
    )


def _no_extra(data: dict[str, Any], allowed: frozenset[str] | Sequence[str], where: str) -> None:
    for name in data:
        if name not in allowed:
            raise InvalidIngestMessage(f"{where}{name}: extra inputs are not permitted")


def _check_text(value: Any, low: int, high: int | None, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidIngestMessage(f"{where}: must be a string")
    if len(value) < low or (high is not None and len(value) > high):
        raise InvalidIngestMessage(f"{where}: {low}..{high} characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape in the JSON: not valid Unicode text
            raise InvalidIngestMessage(f"{where}: not valid Unicode text") from None
    return value


def _required_text(data: dict[str, Any], name: str, low: int, high: int) -> str:
    if name not in data:
        raise InvalidIngestMessage(f"{name}: field required")
    return _check_text(data[name], low, high, name)


def _text(data: dict[str, Any], name: str, low: int, high: int) -> str | None:
    value = data.get(name)
    return None if value is None else _check_text(value, low, high, name)


def _ids(value: Any, low: int, where: str) -> list[str]:
    if not isinstance(value, list):
        raise InvalidIngestMessage(f"{where}: must be a list")
    if not low <= len(value) <= MAX_PARTICIPANTS:
        raise InvalidIngestMessage(f"{where}: {low}..{MAX_PARTICIPANTS} participants")
    return [_check_text(item, 1, MAX_PARTICIPANT_ID_CHARS, f"{where}.{n}") for n, item in enumerate(value)]


def _participant_list(data: dict[str, Any], name: str) -> list[str] | None:
    value = data.get(name)
    return None if value is None else _ids(value, 1, name)


def _entry(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidIngestMessage(f"{where}: must be an object")
    _no_extra(value, ENTRY_FIELDS, f"{where}.")
    for name in _ENTRY_REQUIRED:
        if name not in value:
            raise InvalidIngestMessage(f"{where}.{name}: field required")
    out: dict[str, Any] = {}
    for name in ENTRY_FIELDS:
        item = value.get(name)
        if item is None:
            if name in _ENTRY_REQUIRED:
                raise InvalidIngestMessage(f"{where}.{name}: must not be null")
            continue
        if name in _ENTRY_TEXT:
            low, high = _ENTRY_TEXT[name]
            out[name] = _check_text(item, low, high, f"{where}.{name}")
        elif name == "game_tick":
            if type(item) is not int:  # strict: not a bool, not a float such as 1.0
                raise InvalidIngestMessage(f"{where}.game_tick: must be an integer")
            out[name] = item
        elif name == "audience":
            out[name] = _ids(item, 0, f"{where}.audience")
        elif item not in _CHOICES[name]:
            raise InvalidIngestMessage(f"{where}.{name}: one of {', '.join(_CHOICES[name])}")
        else:
            out[name] = item
    return out
