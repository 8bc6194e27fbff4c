"""MEM-45..47 on the template's table in moto: an NPC's prompt recalls older lines it perceived that bear on
the current line, beyond its history limit, within the recall budget, and never a line it did not perceive."""

from __future__ import annotations

import uuid

import pytest
from chat_core.dialogue.entries import add_entries
from chat_core.dialogue.prompt import PromptBuildConfig, PromptPayload, build_structured_prompt
from chat_core.errors import InvalidInput
from chat_core.http.dialogue_schemas import PromptIn
from pydantic import ValidationError

OWNER = "gm"
FILLER = [
    "The weather is fine today.",
    "Did you feed the horses?",
    "The market opens at dawn.",
    "I mended the fence by the mill.",
    "Pass me the bread, please.",
]


@pytest.fixture
def table(chat_service: None) -> None:
    """The template's table in moto (tests/integration/conftest.py)."""


def world() -> str:
    return f"w-{uuid.uuid4().hex[:10]}"


def line(who: str, text: str, tick: int, **kw: object) -> dict[str, object]:
    return {"participant_id": who, "role": "character", "content": text, "game_tick": tick, **kw}


def village(w: str, secret_for_guard: bool = False) -> None:
    """Sixty lines between the player and the smith: one early line about a hidden key, then small talk.
    In a second dialogue the smith tells the guard where a map is; the player is not there."""
    lines = [line("player", "I hid the silver key under the old oak by the well.", 1)]
    lines += [line("player" if n % 2 else "smith", FILLER[n % len(FILLER)], 2 + n) for n in range(59)]
    for start in range(0, len(lines), 50):
        add_entries(OWNER, w, ["player", "smith"], lines[start : start + 50])
    secret = line("smith", "The treasure map is sewn inside the silver saddle.", 70)
    if secret_for_guard:
        secret = {**secret, "visibility": "whisper", "audience": ["guard"]}
    add_entries(OWNER, w, ["guard", "smith"], [secret])


def prompt(w: str, viewer: str, question: str, **kw: object) -> PromptPayload:
    body = {
        "participants": sorted({"player", viewer}),
        "system_prompt": "You are a villager.",
        "ai_participant": viewer,
        "history_limit": 5,
        "current": {"participant_id": "player", "content": question},
        **kw,
    }
    return build_structured_prompt(PromptBuildConfig.from_mapping(w, body), owner=OWNER)


def text_of(payload: PromptPayload) -> str:
    return "\n".join(str(m["content"]) for m in payload.messages)


def test_mem45_an_old_relevant_line_comes_back_beyond_the_history_limit(table: None) -> None:
    # Given a long dialogue whose first line says where the key is
    w = world()
    village(w)
    # When the smith's prompt is built for a question about the key, with and without recall
    plain = prompt(w, "smith", "Where did I hide the silver key?", max_prompt_tokens=2000)
    recalled = prompt(w, "smith", "Where did I hide the silver key?", max_prompt_tokens=2000, recall=True)
    # Then only recall brings the old line, in a labelled block before the history, and says what it kept
    assert "old oak" not in text_of(plain)
    assert "recall" not in plain.stats.to_dict()
    block = [m for m in recalled.messages if str(m["content"]).startswith("[Recalled]")]
    assert len(block) == 1
    assert "old oak" in block[0]["content"]
    assert recalled.messages.index(block[0]) < len(recalled.messages) - 5
    stats = recalled.stats.to_dict()["recall"]
    assert stats["kept"] >= 1
    assert stats["entries"][0]["score"] > 0
    assert stats["tokens"] <= stats["max_tokens"] == 500
    assert recalled.stats.tokens_used <= 2000


def test_mem46_a_line_the_reader_did_not_perceive_is_never_recalled(table: None) -> None:
    # Given a line whispered to the guard only, in a dialogue the smith is in
    w = world()
    village(w, secret_for_guard=True)
    # When the smith and the guard are asked about it with recall on
    smith = prompt(w, "smith", "Where is the treasure map hidden?", recall={"max_tokens": 400})
    guard = prompt(w, "guard", "Where is the treasure map hidden?", recall={"max_tokens": 400})
    # Then the guard recalls it (it perceived it), and the smith, who spoke it as a whisper, does too, but
    # the player's own prompt never shows it
    assert "silver saddle" in text_of(guard)
    body = {
        "participants": ["player", "smith"],
        "system_prompt": "s",
        "for": "player",
        "history_limit": 5,
        "current": {"participant_id": "smith", "content": "Where is the treasure map hidden?"},
        "recall": True,
    }
    player = build_structured_prompt(PromptBuildConfig.from_mapping(w, body), owner=OWNER)
    assert "silver saddle" not in text_of(player)
    assert "silver saddle" in text_of(smith)


def test_mem47_recall_fits_its_cap_and_a_tight_budget(table: None) -> None:
    # Given the long dialogue
    w = world()
    village(w)
    # When the cap is too small for any line, and when the prompt budget is tight
    tiny = prompt(w, "smith", "Where did I hide the silver key?", recall={"max_tokens": 5})
    tight = prompt(w, "smith", "Where did I hide the silver key?", max_prompt_tokens=300, recall=True)
    # Then nothing is recalled rather than a cut line, and the tight prompt stays within its budget
    assert "[Recalled]" not in text_of(tiny)
    assert tiny.stats.to_dict()["recall"]["kept"] == 0
    assert tight.stats.tokens_used <= 300
    assert not tight.stats.over_budget
    assert tight.stats.to_dict()["recall"]["max_tokens"] == 75  # a quarter of the budget


@pytest.mark.parametrize(
    "value", [{"max_tokens": 0}, {"scan": 5000}, {"bogus": 1}, "yes", -3, {"max_tokens": True}]
)
def test_mem45_a_malformed_recall_option_is_a_clear_error(table: None, value: object) -> None:
    # Given a malformed recall option, when a prompt config is made from it, then it is refused by name
    with pytest.raises(InvalidInput) as raised:
        PromptBuildConfig(world_id=world(), participants=("a", "b"), system_prompt="s", recall=value)
    assert "recall" in str(raised.value.message)


def test_mem45_the_route_body_takes_the_recall_forms() -> None:
    # Given the prompt route's body model, when each documented form is given, then it is taken as asked
    base = {"participants": ["a", "b"], "system_prompt": "s"}
    assert PromptIn.model_validate({**base, "recall": True}).config_mapping()["recall"] is True
    assert PromptIn.model_validate({**base, "recall": 300}).config_mapping()["recall"] == 300
    mapped = PromptIn.model_validate({**base, "recall": {"max_tokens": 200}}).config_mapping()["recall"]
    assert mapped == {"max_tokens": 200, "scan": 500}
    with pytest.raises(ValidationError):
        PromptIn.model_validate({**base, "recall": {"scan": 0}})
