"""Seed 004 / DLG-1 pure logic: dialogue ids from participant sets, entry validation, newest-first merge."""

from __future__ import annotations

import pytest
from chat_core.dialogue.entries import parse_entry
from chat_core.errors import InvalidGameTick, InvalidInput, MessageTooLong
from chat_core.store.dialogues import (
    EntryRecord,
    dialogue_key,
    merge_newest,
    normalize_participants,
    validate_dialogue_id,
)
from chat_core.store.keys import escape_owner
from hypothesis import given
from hypothesis import strategies as st


def rec(dialogue_id: str, tick: int, seq: int, created: str = "2025-01-01T00:00:00Z") -> EntryRecord:
    return EntryRecord(
        dialogue_id, f"{dialogue_id}-{seq}", "A", "user", f"{dialogue_id}@{tick}", tick, seq, created
    )


def test_seed004_dialogue_id_is_the_sorted_set() -> None:
    """Seed 004 §2.4: the id comes from sorting the participant ids; order and duplicates don't matter."""
    assert dialogue_key(normalize_participants(["B", "A"])) == "A+B"
    assert dialogue_key(normalize_participants(["C", "A", "B", "A"])) == "A+B+C"


def test_ids_with_underscores_cannot_collide() -> None:
    """The joiner '+' is forbidden inside ids, so {a_b, c} and {a, b_c} get different dialogue ids."""
    first = dialogue_key(normalize_participants(["a_b", "c"]))
    second = dialogue_key(normalize_participants(["a", "b_c"]))
    assert first != second


def test_long_sets_use_a_stable_digest() -> None:
    """Long participant sets get `~<sha256>`: stable, independent of order, never a readable id."""
    group = [f"colonist-{i:02d}-" + "y" * 50 for i in range(10)]
    key = dialogue_key(normalize_participants(group))
    assert key == dialogue_key(normalize_participants(list(reversed(group))))
    assert key.startswith("~")
    assert validate_dialogue_id(key) == key


@pytest.mark.parametrize("bad", ["B+A", "A+A", "A++B", "~xyz", "", "A#B"])
def test_malformed_dialogue_ids_are_refused(bad: str) -> None:
    """A dialogue id must be a sorted, unique '+'-join of valid ids (or a digest); others are 400."""
    with pytest.raises(InvalidInput):
        validate_dialogue_id(bad)


def test_owner_escaping_keeps_owners_apart() -> None:
    """'%' and '#' are escaped in owners, so no owner can write another owner's key prefix."""
    assert escape_owner("a#b") == "a%23b"
    assert escape_owner("a%23b") == "a%2523b"
    assert escape_owner("a#b") != escape_owner("a%23b")


def test_parse_entry_accepts_the_seed_fields() -> None:
    """Seed 004 ConversationEntry: participant_id, role, content, game tick (+ optional name, entry_id)."""
    entry = parse_entry(
        {"participant_id": "zorg", "role": "assistant", "content": "Hm.", "game_tick": 0, "name": " Zorg "}
    )
    assert (entry.participant_id, entry.role, entry.content, entry.game_tick, entry.name) == (
        "zorg",
        "assistant",
        "Hm.",
        0,
        "Zorg",
    )


@pytest.mark.parametrize(
    ("data", "error", "fragment"),
    [
        ({"participant_id": "a", "role": "user", "content": "x"}, InvalidInput, "game_tick"),
        ({"participant_id": "a", "role": "user", "content": "x", "game_tick": -1}, InvalidGameTick, ">= 0"),
        (
            {"participant_id": "a", "role": "user", "content": "x", "game_tick": 1.0},
            InvalidGameTick,
            "integer",
        ),
        ({"participant_id": "a", "role": "user", "content": "  ", "game_tick": 1}, InvalidInput, "content"),
        (
            {"participant_id": "a", "role": "user", "content": "x" * 5001, "game_tick": 1},
            MessageTooLong,
            "5000",
        ),
        ({"participant_id": "a", "role": "1x", "content": "x", "game_tick": 1}, InvalidInput, "role"),
        (
            {"participant_id": "a", "role": "user", "content": "x", "game_tick": 1, "entry_id": "a b"},
            InvalidInput,
            "entry_id",
        ),
        (
            {"participant_id": "a", "role": "user", "content": "x", "game_tick": 1, "extra": 1},
            InvalidInput,
            "extra",
        ),
        ("not an object", InvalidInput, "object"),
    ],
)
def test_parse_entry_errors_name_the_problem(data: object, error: type[Exception], fragment: str) -> None:
    """Each bad entry is refused with a message that says which field is wrong."""
    with pytest.raises(error) as err:
        parse_entry(data)  # type: ignore[arg-type]
    assert fragment in str(err.value)


def test_merge_newest_picks_the_newest_across_dialogues_in_tick_order() -> None:
    """Ancillary merge: newest `limit` entries over all superset dialogues, returned oldest first."""
    abc = [rec("A+B+C", t, i) for i, t in enumerate([1, 4, 9])]
    abd = [rec("A+B+D", t, i) for i, t in enumerate([2, 3, 10])]
    merged = merge_newest([abc, abd], 4)
    assert [e.game_tick for e in merged] == [3, 4, 9, 10]
    assert merge_newest([abc, abd], 0) == []
    assert merge_newest([], 5) == []


def test_merge_orders_equal_ticks_by_arrival() -> None:
    """Equal ticks in different dialogues keep the order they were written in."""
    late = rec("A+B+C", 5, 0, created="2025-01-01T00:00:02Z")
    early = rec("A+B+D", 5, 0, created="2025-01-01T00:00:01Z")
    assert merge_newest([[late], [early]], 10) == [early, late]


@given(
    st.lists(st.lists(st.integers(0, 50), max_size=8), max_size=5),
    st.integers(0, 12),
)
def test_property_merge_equals_sort_and_slice(ticks: list[list[int]], limit: int) -> None:
    """Property: the heap merge returns exactly the newest `limit` of all entries, in order."""
    streams = [[rec(f"d{i}", t, j) for j, t in enumerate(sorted(ts))] for i, ts in enumerate(ticks)]
    everything = sorted((e for s in streams for e in s), key=EntryRecord.sort_key)
    expected = everything[-limit:] if limit else []
    assert merge_newest(streams, limit) == expected
