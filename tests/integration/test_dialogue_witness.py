"""DLG-3 on the template's table in moto: NPCs remember only what they perceived (audiences, whispers,
joining and leaving), witness queries stay cheap, and older entries keep their behaviour."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass

import pytest
from chat_core.dialogue import transfer
from chat_core.dialogue.entries import (
    EntryRecord,
    add_entries,
    add_entry,
    get_historical_context,
    get_witnessed,
)
from chat_core.dialogue.prompt import PromptBuildConfig, build_structured_prompt
from chat_core.errors import InvalidInput
from chat_core.store import dialogues as dialogue_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

OWNER = "gm"
POOL = ("A", "B", "C", "D")


@pytest.fixture
def table(chat_service: None) -> None:
    """The template's table in moto (tests/integration/conftest.py)."""


def world() -> str:
    return f"w-{uuid.uuid4().hex[:10]}"


def line(who: str, text: str, tick: int, **kw: object) -> dict[str, object]:
    return {"participant_id": who, "role": "character", "content": text, "game_tick": tick, **kw}


def contents(entries: list[EntryRecord]) -> list[str]:
    return [e.content for e in entries]


def prompt_text(w: str, participants: list[str], ai: str, **kw: object) -> str:
    config = PromptBuildConfig(
        world_id=w, participants=tuple(participants), system_prompt="sys", ai_participant=ai, **kw
    )
    payload = build_structured_prompt(config, owner=OWNER)
    return "\n".join(str(m["content"]) for m in payload.messages)


# ------------------------------------------------------------------------------ whisper property


@dataclass(frozen=True)
class Said:
    members: tuple[str, ...]
    speaker: str
    mode: str  # public / private / whisper / audience
    audience: tuple[str, ...]
    tick: int


@st.composite
def said(draw: st.DrawFn) -> Said:
    members = tuple(sorted(draw(st.sets(st.sampled_from(POOL), min_size=2, max_size=4))))
    speaker = draw(st.sampled_from(members))
    others = [p for p in members if p != speaker]
    mode = draw(st.sampled_from(["public", "private", "whisper", "audience"]))
    if mode == "whisper" and speaker in ("A", "B") and {"A", "B"} <= set(members):
        audience = ("B",) if speaker == "A" else ("A",)  # the A-B whisper the property is about
    elif mode == "whisper":
        audience = (draw(st.sampled_from(others)),)
    elif mode == "audience":
        audience = tuple(sorted(draw(st.sets(st.sampled_from(others), max_size=len(others)))))
    else:
        audience = ()
    return Said(members, speaker, mode, audience, draw(st.integers(0, 40)))


def perceivers(s: Said) -> set[str]:
    """The model: who perceived a line."""
    if s.mode == "public":
        return set(s.members)
    return {s.speaker, *s.audience}


def request(s: Said, text: str) -> dict[str, object]:
    if s.mode == "public":
        return line(s.speaker, text, s.tick)
    if s.mode == "private":
        return line(s.speaker, text, s.tick, visibility="private")
    if s.mode == "whisper":
        return line(s.speaker, text, s.tick, visibility="whisper", audience=list(s.audience))
    return line(s.speaker, text, s.tick, audience=list(s.audience))


def is_ab_whisper(s: Said) -> bool:
    return s.mode == "whisper" and {s.speaker, *s.audience} == {"A", "B"}


@pytest.mark.slow
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(said(), min_size=1, max_size=12))
def test_dlg3_a_whisper_between_a_and_b_never_reaches_c(table: None, script: list[Said]) -> None:
    """DLG-3 property: over random dialogues with random audiences, a whisper between A and B is in no
    history, witness list or prompt built for C, and every participant is given exactly what it perceived."""
    # Given random lines in random dialogues of one world, some whispered between A and B
    w = world()
    texts = {}
    for n, s in enumerate(script):
        text = f"{'SECRET-AB' if is_ab_whisper(s) else 'line'}-{n}~"  # ~ ends it: line-1~ is not in line-11~
        texts[text] = s
        add_entry(OWNER, w, list(s.members), request(s, text))
    dialogues = {s.members for s in script}
    for viewer in POOL:
        knows = {t for t, s in texts.items() if viewer in perceivers(s)}
        # When what the viewer witnessed is read: exactly what it perceived, in game-time order
        witnessed = get_witnessed(OWNER, w, viewer, 100)
        assert sorted(contents(witnessed)) == sorted(knows)
        assert [e.game_tick for e in witnessed] == sorted(e.game_tick for e in witnessed)
        for members in dialogues:
            if viewer not in members:
                continue
            # When history and a prompt are built for the viewer in each dialogue it is in
            ctx = get_historical_context(OWNER, w, list(members), 100, viewer)
            own = {t for t in knows if texts[t].members == members}
            assert set(contents(ctx.primary)) == own
            assert set(contents(ctx.ancillary)) <= knows
            text = prompt_text(w, list(members), viewer, history_limit=100)
            # Then nothing it did not perceive is there; for C, no A-B whisper at all
            for t in texts:
                if t not in knows:
                    assert t not in text
            if viewer == "C":
                assert "SECRET-AB" not in text
                assert not any("SECRET-AB" in e.content for e in ctx.primary + ctx.ancillary)


# ------------------------------------------------------------------------------ join / leave


def test_dlg3_a_late_joiner_perceives_nothing_from_before_it_joined(table: None) -> None:
    """DLG-3: C, absent when A and B started, sees none of their earlier lines; after a leave it misses
    what is said until it joins again; A perceived all of it."""
    w = world()
    # Given A and B talk in dialogue A+B+C before C arrives
    add_entries(
        OWNER, w, ["A", "B", "C"], [line("A", "before-1", 10), line("B", "before-2", 20)], present=["A", "B"]
    )
    # When C joins, talks, leaves, and A and B go on, then C comes back
    add_entries(
        OWNER,
        w,
        "A+B+C",
        [
            {"participant_id": "C", "kind": "join", "game_tick": 30},
            line("C", "hello-all", 40),
            {"participant_id": "C", "kind": "leave", "game_tick": 50, "content": "C walks out."},
            line("A", "while-away", 60),
            {"participant_id": "C", "kind": "join", "game_tick": 70},
            line("B", "after-return", 80),
        ],
    )
    # Then C's memory starts at its join and has a gap while it was away
    c_view = contents(get_historical_context(OWNER, w, ["A", "B", "C"], 100, "C").primary)
    assert c_view == ["C joined.", "hello-all", "C walks out.", "C joined.", "after-return"]
    assert contents(get_witnessed(OWNER, w, "C", 100)) == c_view
    assert "before-1" not in prompt_text(w, ["A", "B", "C"], "C")
    # And A perceived everything, its prompt included
    a_view = contents(get_historical_context(OWNER, w, ["A", "B", "C"], 100, "A").primary)
    assert a_view == ["before-1", "before-2", *c_view[:3], "while-away", *c_view[3:]]
    assert "while-away" in prompt_text(w, ["A", "B", "C"], "A")


def test_dlg3_an_absent_participant_cannot_speak_or_be_whispered_to(table: None) -> None:
    """DLG-3: clear 400s instead of silently wrong memories; a bad entry stores none of its batch."""
    w = world()
    add_entries(OWNER, w, ["A", "B", "C"], [line("A", "hi", 1)], present=["A", "B"])
    cases = [
        ([line("C", "I am not here", 2)], "participant_id", "not present"),
        ([line("A", "psst", 2, visibility="whisper", audience=["C"])], "audience", "not present"),
        ([line("A", "psst", 2, visibility="whisper")], "audience", "needs an audience"),
        ([line("A", "psst", 2, audience=["Z"])], "audience", "not a participant"),
        ([line("A", "hear ye", 2, visibility="public", audience=["A"])], "audience", "public"),
        ([{"participant_id": "C", "kind": "join", "game_tick": 2, "audience": ["A"]}], "audience", "join"),
        (
            [line("A", "ok", 2), {"participant_id": "B", "kind": "leave", "game_tick": 3}, line("B", "x", 4)],
            "participant_id",
            "not present",
        ),
    ]
    for batch, field, words in cases:
        with pytest.raises(InvalidInput) as caught:
            add_entries(OWNER, w, "A+B+C", batch)
        assert caught.value.details.get("field") == field, batch
        assert words in caught.value.message, caught.value.message
    # Nothing of the refused batches was stored
    assert contents(get_historical_context(OWNER, w, ["A", "B", "C"], 100).primary) == ["hi"]


def test_dlg3_private_lines_and_audiences_answer_what_was_stored(table: None) -> None:
    """DLG-3: an entry answers its audience when not everyone perceived it, and its visibility."""
    w = world()
    added = add_entries(
        OWNER,
        w,
        ["A", "B", "C"],
        [
            line("A", "thought", 1, visibility="private"),
            line("A", "to B", 2, visibility="whisper", audience=["B"]),
            line("A", "to all", 3),
        ],
    )
    stored = [a.entry.to_dict() for a in added]
    assert (stored[0]["audience"], stored[0]["visibility"]) == (["A"], "private")
    assert (stored[1]["audience"], stored[1]["visibility"]) == (["A", "B"], "whisper")
    assert not {"audience", "visibility"} & set(stored[2])
    assert contents(get_historical_context(OWNER, w, ["A", "B", "C"], 10, "B").primary) == ["to B", "to all"]
    assert contents(get_historical_context(OWNER, w, ["A", "B", "C"], 10).primary) == [
        "thought",
        "to B",
        "to all",
    ]


# ------------------------------------------------------------------------------ legacy data


def test_dlg3_entries_without_audiences_behave_as_before(table: None) -> None:
    """DLG-3: entries stored the way they were before audiences existed (no audience, no membership)
    are perceived by every participant: history and prompts for any participant equal today's."""
    w = world()
    for members, who, text, tick in [
        (("A", "B"), "A", "ab-1", 1),
        (("A", "B", "C"), "C", "abc-1", 2),
        (("A", "B"), "B", "ab-2", 3),
    ]:
        dialogue_store.create_dialogue(OWNER, w, members)
        record = dialogue_store.get_dialogue(OWNER, w, "+".join(members))
        assert record is not None
        # The store's write without an audience decision, as every entry was written before DLG-3
        dialogue_store.append_entry(OWNER, w, record, dialogue_store.NewEntry(who, "character", text, tick))
    before = get_historical_context(OWNER, w, ["A", "B"], 10)
    for viewer in ("A", "B"):
        ctx = get_historical_context(OWNER, w, ["A", "B"], 10, viewer)
        assert (ctx.primary, ctx.ancillary) == (before.primary, before.ancillary)
    assert (contents(before.primary), contents(before.ancillary)) == (["ab-1", "ab-2"], ["abc-1"])
    assert prompt_text(w, ["A", "B"], "A") == prompt_text(w, ["A", "B"], "A", viewer="B")


# ------------------------------------------------------------------------------ cost


def world_file(dialogues: dict[tuple[str, ...], int]) -> str:
    """A world export with these dialogues and this many public entries each (loaded in a few calls)."""
    lines: list[dict[str, object]] = []
    n = 0
    for members, count in dialogues.items():
        dialogue_id = "+".join(members)
        stamp = "2026-01-01T00:00:00.000000Z"
        lines.append(
            {
                "type": "dialogue",
                "dialogue_id": dialogue_id,
                "participants": list(members),
                "created_at": stamp,
                "updated_at": stamp,
                "next_seq": count,
                "entry_count": count,
            }
        )
        for seq in range(count):
            n += 1
            lines.append(
                {
                    "type": "entry",
                    "dialogue_id": dialogue_id,
                    "seq": seq,
                    "created_at": stamp,
                    "entry_id": f"e{n}",
                }
                | line(members[-1], f"{dialogue_id} {seq}", n)
            )
    header = {
        "type": "world",
        "format": transfer.EXPORT_FORMAT,
        "version": transfer.EXPORT_VERSION,
        "dialogues": len(dialogues),
        "entries": n,
    }
    return "\n".join(json.dumps(x) for x in [header, *lines])


def test_dlg3_a_witness_query_is_one_query_at_1_10_and_100_dialogues(
    table: None, dynamo_calls: Counter[str]
) -> None:
    """DLG-3: what P witnessed is one Query of P's witness partition and one BatchGetItem of the entries,
    whether P is in 1, 10 or 100 dialogues, however long the dialogues P was not in; P's history for a
    pair does not grow with them."""
    figures = {}
    for count, other_length in ((1, 1), (10, 1), (100, 1), (100, 300)):
        w = world()
        # Given P in `count` dialogues of 3 entries, and a dialogue of X and Y that P is not in
        dialogues = {("P", f"n{i:03d}"): 3 for i in range(count)} | {("X", "Y"): other_length}
        transfer.import_world_jsonl(OWNER, w, world_file(dialogues))
        dynamo_calls.clear()
        # When what P witnessed is read
        witnessed = get_witnessed(OWNER, w, "P", 10)
        figures[count, other_length] = dict(dynamo_calls)
        assert len(witnessed) == min(10, 3 * count)
        assert contents(witnessed)[-1] == f"P+n{count - 1:03d} 2"
        # And P's history with its first partner
        dynamo_calls.clear()
        ctx = get_historical_context(OWNER, w, ["P", "n000"], 10, "P")
        assert contents(ctx.primary) == ["P+n000 0", "P+n000 1", "P+n000 2"]
        figures[count, other_length, "history"] = dict(dynamo_calls)
    # Then each is a fixed number of calls: 1 Query + 1 BatchGetItem for the witness list (and the
    # GetItem that checks the world was not deleted, DLG-4), whatever the world holds
    one = {"GetItem": 1, "Query": 1, "BatchGetItem": 1}
    assert {k: v for k, v in figures.items() if len(k) == 2} == {
        (1, 1): one,
        (10, 1): one,
        (100, 1): one,
        (100, 300): one,
    }
    history = {v.get("Query", 0) + v.get("BatchGetItem", 0) for k, v in figures.items() if len(k) == 3}
    assert history == {3}, figures


# ------------------------------------------------------------------------------ save and load


def test_dlg3_audiences_and_presence_survive_export_and_import(table: None) -> None:
    """DLG-3 + DLG-1: an exported world re-imports with its audiences, joins and absent participants, so
    every participant perceives the same after the load."""
    w, copy = world(), world()
    add_entries(OWNER, w, ["A", "B", "C"], [line("A", "early", 1)], present=["A", "B"])
    add_entries(
        OWNER,
        w,
        "A+B+C",
        [
            line("A", "psst", 2, visibility="whisper", audience=["B"]),
            {"participant_id": "C", "kind": "join", "game_tick": 3},
            {"participant_id": "B", "kind": "leave", "game_tick": 4},
        ],
    )
    text = transfer.export_world_jsonl(OWNER, w)
    transfer.import_world_jsonl(OWNER, copy, text)
    assert transfer.export_world_jsonl(OWNER, copy).split("\n")[1:] == text.split("\n")[1:]
    for viewer in ("A", "B", "C"):
        assert contents(get_witnessed(OWNER, copy, viewer, 100)) == contents(
            get_witnessed(OWNER, w, viewer, 100)
        )
    # B left in the original, so B is still absent after the load
    with pytest.raises(InvalidInput, match="not present"):
        add_entry(OWNER, copy, "A+B+C", line("B", "back?", 5))
