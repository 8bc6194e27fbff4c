"""Seed 004 PromptFactoryService: layout, readable times, roles and names, budget dropping order (DLG-1)."""

from __future__ import annotations

import re

import pytest
from chat_core.dialogue.entries import HistoricalContext
from chat_core.dialogue.prompt import CurrentLine, PromptBuildConfig, build_structured_prompt, openai_name
from chat_core.engine.window import WindowPolicy, count_window_tokens
from chat_core.errors import InvalidInput
from chat_core.store.dialogues import EntryRecord
from hypothesis import given, settings
from hypothesis import strategies as st

DAY, HOUR = 60_000, 2_500
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def entry(dialogue_id: str, who: str, text: str, tick: int, seq: int, name: str | None = None) -> EntryRecord:
    return EntryRecord(
        dialogue_id=dialogue_id,
        entry_id=f"{dialogue_id}-{seq}",
        participant_id=who,
        role="character",
        content=text,
        game_tick=tick,
        seq=seq,
        created_at=f"2025-01-01T00:00:{seq:02d}.000000Z",
        name=name,
    )


def zorg_history(n_primary: int = 3, n_ancillary: int = 3) -> HistoricalContext:
    """player and Zorg 1v1 (primary) plus a past group chat with a trader (ancillary)."""
    primary = [
        entry("player+zorg", "player" if i % 2 == 0 else "zorg", f"primary line {i}", 4 * DAY + i * HOUR, i)
        for i in range(n_primary)
    ]
    ancillary = [
        entry("player+trader+zorg", ["trader", "player", "zorg"][i % 3], f"group line {i}", DAY + i * HOUR, i)
        for i in range(n_ancillary)
    ]
    return HistoricalContext(
        participants=("player", "zorg"),
        dialogue_id="player+zorg",
        primary=primary,
        ancillary=ancillary,
        ancillary_dialogues=["player+trader+zorg"] if ancillary else [],
    )


def config(**changes: object) -> PromptBuildConfig:
    base: dict[str, object] = {
        "world_id": "save1",
        "participants": ("player", "zorg"),
        "system_prompt": "You are Zorg, a grumpy mechanoid hunter.",
        "ai_participant": "zorg",
        "scene": {"location": "colony kitchen", "event": "dinner"},
        "other_data": {"weather": "rain"},
        "names": {"player": "Player", "zorg": "Zorg", "trader": "Trader Vex"},
        "token_method": "estimate",
    }
    base.update(changes)
    return PromptBuildConfig(**base)  # type: ignore[arg-type]


def test_seed004_payload_layout_roles_names_and_times() -> None:
    """Seed 004 §3.3: system, one [Background] message, a context message, then primary chat messages
    with readable times and names; the voiced NPC is assistant, everyone else user."""
    # Given player/Zorg history with a past group chat, and a scene
    payload = build_structured_prompt(config(), history=zorg_history())
    msgs = payload.messages
    # Then the order is system, background, context, primary x3
    assert [m["role"] for m in msgs] == ["system", "system", "system", "user", "assistant", "user"]
    assert msgs[0]["content"] == "You are Zorg, a grumpy mechanoid hunter."
    background = msgs[1]["content"]
    assert background.startswith("[Background]\n")
    assert "[Time: 5500 Aprimay 2, 0h] Trader Vex: group line 0" in background
    assert "[Time: 5500 Aprimay 2, 2h] Zorg: group line 2" in background
    assert msgs[2]["content"] == (
        "[Context]\nScene:\n- location: colony kitchen\n- event: dinner\nOther data:\n- weather: rain"
    )
    assert msgs[3] == {
        "role": "user",
        "content": "[Time: 5500 Aprimay 5, 0h] primary line 0",
        "name": "Player",
    }
    assert msgs[4] == {
        "role": "assistant",
        "content": "[Time: 5500 Aprimay 5, 1h] primary line 1",
        "name": "Zorg",
    }
    assert all(set(m) <= {"role", "content", "name"} for m in msgs)
    assert payload.stats.primary_kept == 3
    assert payload.stats.ancillary_kept == 3


def test_seed004_chinese_rendering() -> None:
    """Seed 004 example: with the Chinese calendar the timestamps and labels are Chinese."""
    payload = build_structured_prompt(config(calendar="rimworld_zh"), history=zorg_history())
    assert payload.messages[1]["content"].startswith("[背景参考资料]\n")
    assert payload.messages[2]["content"].startswith("[场景与其他信息]\n场景：")
    assert payload.messages[3]["content"] == "[时间: 5500年 春季第5天, 0时] primary line 0"


def test_no_background_or_context_when_there_is_none() -> None:
    """Without ancillary history there is no [Background]; without scene/other data no context message."""
    payload = build_structured_prompt(
        config(scene=None, other_data=None), history=zorg_history(n_primary=2, n_ancillary=0)
    )
    assert [m["role"] for m in payload.messages] == ["system", "user", "assistant"]


def test_free_text_scene_and_user_context_role() -> None:
    """Scene may be free text; context_role='user' puts background and context in user messages."""
    payload = build_structured_prompt(
        config(scene="A storm rages outside.", other_data=None, context_role="user"), history=zorg_history()
    )
    assert payload.messages[1]["role"] == "user"
    assert payload.messages[2] == {"role": "user", "content": "[Context]\nScene:\nA storm rages outside."}


def test_several_ancillary_groups_are_labelled() -> None:
    """When the background merges several group chats, each line says which group it came from."""
    history = zorg_history(n_primary=1, n_ancillary=1)
    extra = entry("doc+player+zorg", "doc", "patch him up", DAY + 5 * HOUR, 0)
    history = HistoricalContext(
        history.participants,
        history.dialogue_id,
        history.primary,
        [*history.ancillary, extra],
        ["doc+player+zorg", "player+trader+zorg"],
    )
    background = build_structured_prompt(config(), history=history).messages[1]["content"]
    assert "(Player, Trader Vex, Zorg) Trader Vex: group line 0" in background
    assert "(doc, Player, Zorg) doc: patch him up" in background


@pytest.mark.parametrize(
    ("display", "fallback", "expected"),
    [
        ("Zorg", "zorg_id", "Zorg"),
        ("Zorg the Great!", "zorg_id", "Zorg_the_Great"),
        ("佐格", "zorg_id", "zorg_id"),
        ("Dr. Ōkami", "x", "Dr_kami"),
        ("x" * 80, "x", "x" * 64),
    ],
)
def test_openai_name_is_sanitized(display: str, fallback: str, expected: str) -> None:
    """OpenAI `name` must match ^[a-zA-Z0-9_-]{1,64}$: other characters become '_', too long is cut."""
    assert openai_name(display, fallback) == expected
    assert NAME_RE.fullmatch(openai_name(display, fallback))


def test_unrepresentable_names_stay_distinct() -> None:
    """Two speakers whose name and id are both non-Latin get distinct, valid names."""
    a, b = openai_name("佐格", "佐格"), openai_name("玩家", "玩家")
    assert a != b
    assert NAME_RE.fullmatch(a)
    assert NAME_RE.fullmatch(b)


def test_speaker_in_text_when_name_cannot_carry_it() -> None:
    """A Chinese display name can't live in `name`, so the user line says who spoke."""
    history = zorg_history(n_primary=1, n_ancillary=0)
    payload = build_structured_prompt(config(names={"player": "玩家"}), history=history)
    assert payload.messages[-1]["content"] == "[Time: 5500 Aprimay 5, 0h] 玩家: primary line 0"
    assert payload.messages[-1]["name"] == "player"


def test_group_primary_labels_every_human_speaker() -> None:
    """In a group (more than two participants), user lines carry the speaker's name in the text."""
    group = ("doc", "player", "zorg")
    history = HistoricalContext(
        group, "doc+player+zorg", [entry("doc+player+zorg", "doc", "hold still", 10, 0)], [], []
    )
    payload = build_structured_prompt(config(participants=group), history=history)
    assert payload.messages[-1]["content"] == "[Time: 5500 Aprimay 1, 0h] doc: hold still"


def test_current_line_is_last_and_always_kept() -> None:
    """The line being answered comes last and survives any budget."""
    payload = build_structured_prompt(
        config(max_prompt_tokens=1, current=_current("player", "Zorg, help!", 5 * DAY)),
        history=zorg_history(),
    )
    assert payload.messages[-1] == {
        "role": "user",
        "content": "[Time: 5500 Aprimay 6, 0h] Zorg, help!",
        "name": "Player",
    }
    assert payload.messages[0]["role"] == "system"
    assert payload.stats.over_budget


def _current(who: str, text: str, tick: int) -> CurrentLine:
    return CurrentLine(participant_id=who, content=text, game_tick=tick)


def _full_tokens(history: HistoricalContext, **changes: object) -> int:
    return build_structured_prompt(config(**changes), history=history).stats.tokens_used


def test_budget_drops_oldest_ancillary_first() -> None:
    """Budget: a little short of everything -> the oldest background lines go, primary stays whole."""
    history = zorg_history(n_primary=4, n_ancillary=6)
    full = _full_tokens(history)
    payload = build_structured_prompt(config(max_prompt_tokens=full - 12), history=history)
    background = payload.messages[1]["content"]
    assert "group line 0" not in background
    assert "group line 5" in background
    kept = [line for line in background.splitlines() if "group line" in line]
    assert kept == [line for line in kept if int(line.rsplit(" ", 1)[1]) >= 6 - len(kept)]
    assert payload.stats.primary_kept == 4
    assert 0 < payload.stats.ancillary_kept < 6
    assert payload.stats.tokens_used <= full - 12


def test_budget_drops_all_ancillary_before_any_primary() -> None:
    """Budget: when primary barely fits, there is no [Background] at all; below that, oldest primary goes."""
    history = zorg_history(n_primary=4, n_ancillary=6)
    no_background = HistoricalContext(history.participants, history.dialogue_id, history.primary, [], [])
    primary_only = _full_tokens(no_background)
    payload = build_structured_prompt(config(max_prompt_tokens=primary_only), history=history)
    assert [m["content"][:12] for m in payload.messages[:2]] == ["You are Zorg", "[Context]\nSc"]
    assert payload.stats.primary_kept == 4
    assert payload.stats.ancillary_kept == 0
    # When the budget is smaller still, the oldest primary lines go first
    tighter = build_structured_prompt(config(max_prompt_tokens=primary_only - 8), history=history)
    contents = [m["content"] for m in tighter.messages if m["role"] in ("user", "assistant")]
    assert "primary line 3" in contents[-1]
    assert not any("primary line 0" in c for c in contents)
    assert tighter.stats.primary_kept < 4
    assert tighter.stats.tokens_used <= primary_only - 8


def test_stats_report_what_was_dropped() -> None:
    """Stats: available/kept/dropped per history, budget, tokens used; JSON-ready."""
    history = zorg_history(n_primary=4, n_ancillary=6)
    stats = build_structured_prompt(config(max_prompt_tokens=10_000), history=history).stats.to_dict()
    assert stats["primary"] == {"available": 4, "kept": 4, "dropped": 0}
    assert stats["ancillary"]["available"] == 6
    assert stats["ancillary"]["dropped"] == 0
    assert stats["token_budget"] == 10_000
    assert stats["tokens_remaining"] == 10_000 - stats["tokens_used"]


def test_tokens_used_is_the_engine_count_of_what_is_sent() -> None:
    """tokens_used is the window engine's count of the final message list under the same policy."""
    history = zorg_history()
    payload = build_structured_prompt(config(), history=history)
    policy = WindowPolicy(name="check", method="estimate")
    assert payload.stats.tokens_used == count_window_tokens(payload.messages, policy)


@settings(max_examples=120, deadline=None)
@given(
    budget=st.integers(min_value=40, max_value=400),
    n_p=st.integers(0, 6),
    n_a=st.integers(0, 6),
    method=st.sampled_from(["estimate", "approx", "exact"]),
)
def test_property_fit_and_dropping_order(budget: int, n_p: int, n_a: int, method: str) -> None:
    """Property (every counting method): the payload fits whenever system+context fit; kept history is
    the newest of each list; an ancillary line is only kept if every primary line is kept."""
    history = zorg_history(n_primary=n_p, n_ancillary=n_a)
    payload = build_structured_prompt(config(max_prompt_tokens=budget, token_method=method), history=history)
    stats = payload.stats
    if stats.context_kept:
        assert stats.tokens_used <= budget
    if stats.ancillary_kept:
        assert stats.primary_kept == n_p
        background = payload.messages[1]["content"]
        kept = [int(line.rsplit(" ", 1)[1]) for line in background.splitlines() if "group line" in line]
        assert kept == list(range(n_a - stats.ancillary_kept, n_a))
    primary = [m["content"] for m in payload.messages if m["role"] in ("user", "assistant")]
    assert [int(c.rsplit(" ", 1)[1]) for c in primary] == list(range(n_p - stats.primary_kept, n_p))


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ai_participant": "trader"}, "ai_participant"),
        ({"scene": {"npc": {"nested": "x"}}}, "scene"),
        ({"history_limit": 1000}, "history_limit"),
        ({"max_prompt_tokens": 0}, "max_prompt_tokens"),
        ({"calendar": "mayan"}, "calendar"),
        ({"participants": ("a#b",)}, "participants"),
        ({"world_id": "bad world"}, "world_id"),
        ({"token_method": "guess"}, "token_method"),
    ],
)
def test_bad_config_is_a_clear_error(changes: dict[str, object], field: str) -> None:
    """Bad prompt configs are InvalidInput naming the field, never a crash."""
    with pytest.raises(InvalidInput) as err:
        config(**changes)
    assert err.value.details.get("field") == field


def test_from_mapping_rejects_unknown_fields_and_builds_current() -> None:
    """The JSON form: unknown keys are refused; `current` becomes the last message."""
    with pytest.raises(InvalidInput, match="unknown field"):
        PromptBuildConfig.from_mapping("save1", {"participants": ["a", "b"], "system_prompt": "", "sytem": 1})
    cfg = PromptBuildConfig.from_mapping(
        "save1",
        {
            "participants": ["zorg", "player"],
            "system_prompt": "x",
            "ai_participant": "zorg",
            "current": {"participant_id": "player", "content": "hi"},
        },
    )
    assert cfg.participants == ("player", "zorg")
    assert cfg.current is not None
    assert cfg.current.content == "hi"


@pytest.mark.parametrize("method", ["exact", "approx"])
def test_budget_equal_to_the_full_prompt_keeps_everything(method: str) -> None:
    """Exact/approx budgets are tight: a budget of exactly the full prompt's count keeps every line,
    and one token less drops exactly the oldest background line."""
    history = zorg_history(n_primary=4, n_ancillary=6)
    full = build_structured_prompt(config(token_method=method), history=history).stats.tokens_used
    whole = build_structured_prompt(config(token_method=method, max_prompt_tokens=full), history=history)
    assert whole.stats.tokens_used == full
    assert whole.stats.ancillary_kept == 6
    short = build_structured_prompt(config(token_method=method, max_prompt_tokens=full - 1), history=history)
    assert short.stats.ancillary_kept == 5
    assert short.stats.primary_kept == 4
    assert "group line 0" not in short.messages[1]["content"]


def test_exact_tokens_used_matches_the_tokenizer() -> None:
    """With token_method=exact (the default), tokens_used is the tiktoken chat-format count (TOK-4)."""
    from chat_core.engine import tokens

    payload = build_structured_prompt(config(token_method="exact"), history=zorg_history())
    assert payload.stats.tokens_used == tokens.count_chat_tokens(payload.messages, method="exact")
    assert payload.stats.token_method == "exact"


def test_seed004_cross_dialogue_reference_joins_the_background() -> None:
    """Seed 004 requirement 4: a court scene references the suspect's earlier dialogue; its lines join
    the [Background] in tick order, labelled with their group, and are counted as references."""
    # Given a judge/suspect primary history and the suspect's earlier talk with a guard
    primary = [entry("judge+suspect", "judge", "State your name.", 10 * DAY, 0)]
    history = HistoricalContext(("judge", "suspect"), "judge+suspect", primary, [], [])
    statements = [
        entry("guard+suspect", "suspect", "I was in the freezer all night.", 2 * DAY, 0),
        entry("guard+suspect", "guard", "The freezer was locked.", 3 * DAY, 1),
    ]
    cfg = config(
        participants=("judge", "suspect"),
        ai_participant="suspect",
        names={},
        references=(("suspect", "guard"),),
        scene=None,
        other_data=None,
    )
    # When the prompt is built with those referenced entries
    payload = build_structured_prompt(cfg, history=history, references=statements)
    # Then the background holds them, oldest first, and stats count them as references
    background = payload.messages[1]["content"]
    assert background.startswith("[Background]\nEarlier conversations for reference")
    assert background.index("freezer all night") < background.index("was locked")
    assert "[Time: 5500 Aprimay 3, 0h] suspect: I was in the freezer all night." in background
    stats = payload.stats.to_dict()
    assert stats["references"] == {"available": 2, "kept": 2, "dropped": 0, "dialogues": ["guard+suspect"]}
    assert stats["ancillary"]["available"] == 0
    assert cfg.references == (("guard", "suspect"),)


def test_references_are_validated() -> None:
    """references: at most 5 participant lists of valid ids."""
    with pytest.raises(InvalidInput):
        config(references=(("a#b",),))
    with pytest.raises(InvalidInput):
        config(references=tuple((f"p{i}",) for i in range(6)))
