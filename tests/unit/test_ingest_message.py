"""PERF-1 (cold start): the ingestion function checks its queue messages by hand, exactly as the model.

`chat_core.http.ingest_message.parse_ingest_message` must accept exactly the JSON texts that
`IngestMessageIn.model_validate_json` accepts, and give the handler the same values: compared here over
valid messages and a few hundred broken ones (each field missing, null, of the wrong type, at and past
its limits; extra fields; text that is not JSON or not valid Unicode).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from chat_core.dialogue.entries import MAX_ENTRIES_PER_REQUEST
from chat_core.http.dialogue_schemas import IngestMessageIn
from chat_core.http.ingest_message import InvalidIngestMessage, parse_ingest_message
from chat_core.store.dialogues import (
    MAX_ENTRY_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_PARTICIPANT_ID_CHARS,
    MAX_PARTICIPANTS,
)
from pydantic import ValidationError

_FULL_ENTRY = {
    "participant_id": "a",
    "role": "user",
    "content": "hello",
    "game_tick": 7,
    "name": "Alice",
    "entry_id": "e-1",
    "audience": ["a", "b"],
    "visibility": "public",
    "kind": "line",
}
BASES: list[dict[str, Any]] = [
    {
        "owner": "alice",
        "world_id": "w1",
        "participants": ["a", "b"],
        "entry": {"participant_id": "a", "game_tick": 1},
    },
    {
        "owner": "alice",
        "world_id": "w1",
        "dialogue_id": "d-1",
        "entries": [_FULL_ENTRY, {"participant_id": "b", "game_tick": 2}],
    },
    {"owner": "bob", "world_id": "w2", "participants": ["a"], "present": ["a"], "entries": [_FULL_ENTRY]},
]

_STRINGS = {
    "owner": 512,
    "world_id": 64,
    "dialogue_id": 2100,
}
_ENTRY_STRINGS = {
    "participant_id": MAX_PARTICIPANT_ID_CHARS,
    "role": 32,
    "name": MAX_NAME_CHARS,
    "entry_id": MAX_ENTRY_ID_CHARS,
}
_ODD = [None, "", "x", 0, 1, -1, 1.0, 1.5, True, False, [], ["a"], {}, {"a": 1}, 10**30, "é" * 3, "\x00"]


def _values(limit: int | None) -> list[Any]:
    extra = ["x" * limit, "x" * (limit + 1), "é" * limit, "é" * (limit + 1)] if limit else []
    return [*_ODD, *extra]


def _variants() -> Iterator[dict[str, Any]]:
    for base in BASES:
        yield base
        for name in (
            "owner",
            "world_id",
            "participants",
            "dialogue_id",
            "present",
            "entry",
            "entries",
            "zzz",
        ):
            missing = copy.deepcopy(base)
            missing.pop(name, None)
            yield missing
            for value in _values(_STRINGS.get(name)):
                changed = copy.deepcopy(base)
                changed[name] = value
                yield changed
        for name in ("participants", "present"):
            for value in (
                ["a"] * MAX_PARTICIPANTS,
                ["a"] * (MAX_PARTICIPANTS + 1),
                ["a", 1],
                ["a", ""],
                ["a", "x" * MAX_PARTICIPANT_ID_CHARS],
                ["a", "x" * (MAX_PARTICIPANT_ID_CHARS + 1)],
                ["a", None],
            ):
                changed = copy.deepcopy(base)
                changed[name] = value
                yield changed
        entries_key = "entries" if "entries" in base else "entry"
        for limit in (MAX_ENTRIES_PER_REQUEST, MAX_ENTRIES_PER_REQUEST + 1):
            changed = copy.deepcopy(base)
            changed.pop("entry", None)
            changed["entries"] = [{"participant_id": "a", "game_tick": n} for n in range(limit)]
            yield changed
        for name in [*_FULL_ENTRY, "zzz"]:
            for value in [
                "__missing__",
                *_values(_ENTRY_STRINGS.get(name)),
                "public",
                "whisper",
                "join",
                "leave",
            ]:
                changed = copy.deepcopy(base)
                target = changed[entries_key][0] if entries_key == "entries" else changed["entry"]
                if value == "__missing__":
                    target.pop(name, None)
                else:
                    target[name] = value
                yield changed
            for audience in (["a"] * MAX_PARTICIPANTS, ["a"] * (MAX_PARTICIPANTS + 1), ["a", 2], [""]):
                changed = copy.deepcopy(base)
                target = changed[entries_key][0] if entries_key == "entries" else changed["entry"]
                target["audience"] = audience
                yield changed


_HEAD = '{"owner": "a", "world_id": "w", "dialogue_id": "d", "entry": '
_TEXTS = [
    "not json",
    "",
    "[]",
    "null",
    '"text"',
    '{"owner": "alice"}',
    _HEAD + '{"participant_id": "a", "game_tick": 1}} x',
    " " + _HEAD + '{"participant_id": "a", "game_tick": 1}}\n',
    _HEAD + '{"participant_id": "a", "game_tick": 1e3}}',
    _HEAD + '{"participant_id": "a", "game_tick": NaN}}',
    _HEAD + '{"participant_id": "a", "content": "\\ud800", "game_tick": 1}}',
    _HEAD + '{"participant_id": "a", "content": "\\ud83d\\ude00", "game_tick": 1}}',
    '{"owner": "a", "owner": "b", "world_id": "w", "dialogue_id": "d", "entry": {"participant_id": "a", '
    '"game_tick": 1}}',
]


def _outcome(text: str) -> tuple[str, Any]:
    try:
        model = IngestMessageIn.model_validate_json(text)
    except ValidationError:
        expected: tuple[str, Any] = ("rejected", None)
    else:
        expected = ("ok", (model.owner, model.world_id, model.target(), model.entry_dicts(), model.present))
    try:
        message = parse_ingest_message(text)
    except InvalidIngestMessage:
        got: tuple[str, Any] = ("rejected", None)
    else:
        got = (
            "ok",
            (message.owner, message.world_id, message.target(), message.entry_dicts(), message.present),
        )
    assert got == expected, text[:300]
    return got


def test_the_hand_check_accepts_exactly_what_the_model_accepts() -> None:
    """PERF-1: same verdict and same values as IngestMessageIn over valid and broken messages."""
    # Given valid messages, each field broken in turn, and texts that are not JSON objects
    texts = [json.dumps(v, ensure_ascii=False) for v in _variants()] + _TEXTS
    # When both check each one
    outcomes = [_outcome(text)[0] for text in texts]
    # Then they agree on every one (checked in _outcome), over both verdicts
    assert outcomes.count("ok") > 50
    assert outcomes.count("rejected") > 300


@pytest.mark.parametrize("base", BASES)
def test_a_valid_message_gives_the_handler_what_the_model_gives(base: dict[str, Any]) -> None:
    """PERF-1: owner, world, dialogue, entries (absent fields left out) and who is present."""
    # Given a valid message
    text = json.dumps(base)
    # When it is checked by hand
    message = parse_ingest_message(text)
    # Then it carries the model's values
    model = IngestMessageIn.model_validate_json(text)
    assert message.entry_dicts() == model.entry_dicts()
    assert message.target() == model.target()
    assert (message.owner, message.world_id, message.present) == (model.owner, model.world_id, model.present)
