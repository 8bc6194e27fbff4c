"""RSP-2, RSP-8: a response's settings kept on its answer (compact, compressed when large, the largest
left out when the item would not fit) and its instructions for one turn's window only."""

from __future__ import annotations

from dataclasses import replace

from chat_core.chat import response_settings
from chat_core.store import sizes
from chat_core.store.records import ConversationRecord, MessageRecord

ANSWER = MessageRecord(
    owner="alice",
    conversation_id="c1",
    seq=2,
    message_id="m2",
    role="assistant",
    created_at="2026-01-01T00:00:00.000000Z",
    content="Hello",
    model="standin-model",
)
TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look a word up in the dictionary and answer with its definitions.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
}


def test_no_settings_keep_nothing() -> None:
    """A response made with no settings leaves its answer's item as a post's."""
    assert response_settings.encode({}) is None
    assert response_settings.attach(ANSWER, None) is ANSWER
    assert response_settings.attach(ANSWER, {}) is ANSWER
    assert response_settings.decode(None) == {}


def test_small_settings_are_compact_json_and_read_back() -> None:
    settings = {"temperature": 0.2, "metadata": {"k": "v"}, "instructions": "Be brief."}
    kept = response_settings.attach(ANSWER, settings)
    assert kept.settings is not None
    assert kept.settings.startswith("{")
    assert " " not in kept.settings.replace("Be brief.", "")
    assert response_settings.decode(kept.settings) == settings


def test_large_settings_are_compressed_and_read_back() -> None:
    tools = [{**TOOL, "name": f"lookup_{i}"} for i in range(20)]
    settings = {"tools": tools, "instructions": "Answer in one line. " * 40}
    stored = response_settings.encode(settings)
    assert stored is not None
    assert stored.startswith("z:")
    plain = len(str(settings))
    assert len(stored) * 3 < plain
    assert response_settings.decode(stored) == settings


def test_the_largest_settings_are_left_out_when_the_item_would_not_fit() -> None:
    """The answer is always kept; settings that would take the item over its budget are named instead."""
    big_reply = replace(ANSWER, content="x" * (sizes.ITEM_BUDGET_BYTES - 2_000))
    noise = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(30_000))  # does not compress
    kept = response_settings.attach(big_reply, {"instructions": noise, "temperature": 0.5})
    assert sizes.model_bytes(kept) <= sizes.ITEM_BUDGET_BYTES
    assert response_settings.decode(kept.settings) == {"temperature": 0.5, "omitted": ["instructions"]}


def test_instructions_are_one_turns_system_message_before_the_conversations() -> None:
    """RSP-8: the window's conversation has the instructions first; the stored one is unchanged."""
    conversation = ConversationRecord(
        owner="alice",
        conversation_id="c1",
        model="standin-model",
        created_at="t",
        updated_at="t",
        system_prompt="You help with maps.",
        system_tokens=9,
    )
    assert response_settings.for_turn(conversation, None, "standin-model") is conversation
    turn = response_settings.for_turn(conversation, "Be brief.", "standin-model")
    assert turn.system_prompt == "Be brief.\n\nYou help with maps."
    assert turn.system_tokens > conversation.system_tokens
    assert conversation.system_prompt == "You help with maps."
    bare = replace(conversation, system_prompt=None, system_tokens=0)
    assert response_settings.for_turn(bare, "Be brief.", "standin-model").system_prompt == "Be brief."


def test_a_chain_with_the_same_settings_keeps_them_once() -> None:
    """A response continuing one with the same settings keeps a reference to the answer holding them;
    other settings are kept whole."""
    settings = {"instructions": "Be brief.", "tools": [TOOL]}
    first = response_settings.attach(ANSWER, settings)
    second_keeps = response_settings.shared(settings, first)
    assert isinstance(second_keeps, str)
    assert response_settings.reference(second_keeps) == ANSWER.seq
    second = response_settings.attach(replace(ANSWER, seq=4, message_id="m4"), second_keeps)
    assert response_settings.shared(settings, second) == second_keeps  # still names the first
    assert response_settings.decode(second.settings) == {}
    other = {"instructions": "Be long."}
    assert response_settings.shared(other, first) == other
    assert response_settings.shared(other, second) == other
    assert response_settings.shared(settings, None) == settings
    assert response_settings.shared({}, first) == {}
