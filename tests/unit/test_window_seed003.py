"""WIN-2 / seed 003: the post-message window, 10 messages / 5000 characters counting the current message."""

from __future__ import annotations

from typing import Any

from chat_core.engine.window import MAX_CHARS, MAX_MESSAGES, SEED_003_POLICY, select_window

SYSTEM = {"role": "system", "content": "You are helpful. " * 100}  # 1700 characters, never counted


def _history(sizes: list[int]) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": chr(65 + i % 26) * size,
            "message_id": f"m{i}",
        }
        for i, size in enumerate(sizes)
    ]


def _current(size: int) -> dict[str, Any]:
    return {"role": "user", "content": "q" * size}


def test_win2_seed003_exactly_5000_characters_fit() -> None:
    # Given history of 3000 + 1000 + 900 characters and a 100-character question (5000 in all)
    history = _history([3000, 1000, 900])

    # When the seed-003 window is built
    result = select_window(history=history, policy=SEED_003_POLICY, system=SYSTEM, current=_current(100))

    # Then everything is sent, the system prompt not counted against the 5000
    assert [len(m["content"]) for m in result.messages] == [1700, 3000, 1000, 900, 100]
    assert result.stats.chars_used == 5000
    assert result.stats.dropped == ()


def test_win2_seed003_one_character_over_drops_the_oldest() -> None:
    # Given the same window with one more character in the question (5001)
    history = _history([3000, 1000, 900])

    # When the seed-003 window is built
    result = select_window(history=history, policy=SEED_003_POLICY, system=SYSTEM, current=_current(101))

    # Then the oldest message no longer fits and is dropped for the character cap
    assert [len(m["content"]) for m in result.messages] == [1700, 1000, 900, 101]
    assert [(d.ref, d.reason) for d in result.stats.dropped] == [("m0", MAX_CHARS)]


def test_win2_seed003_ten_messages_counting_the_current_one() -> None:
    # Given 9 short history messages and a question: 10 messages
    history = _history([5] * 9)

    # When the seed-003 window is built
    result = select_window(history=history, policy=SEED_003_POLICY, system=SYSTEM, current=_current(5))

    # Then all 9 are sent with the system prompt and the question
    assert len(result.messages) == 11
    assert result.stats.kept_history == 9


def test_win2_seed003_eleven_messages_drop_the_oldest() -> None:
    # Given 10 short history messages and a question: 11 messages
    history = _history([5] * 10)

    # When the seed-003 window is built
    result = select_window(history=history, policy=SEED_003_POLICY, system=SYSTEM, current=_current(5))

    # Then the oldest history message is dropped for the message cap
    assert result.messages[1]["content"] == history[1]["content"]
    assert result.stats.kept_history == 9
    assert [(d.ref, d.reason) for d in result.stats.dropped] == [("m0", MAX_MESSAGES)]


def test_win2_seed003_a_big_old_message_blocks_everything_older() -> None:
    # Given a 4900-character message with small messages before and after it
    history = _history([10, 10, 4900, 10, 10])

    # When the seed-003 window is built with a 100-character question
    result = select_window(history=history, policy=SEED_003_POLICY, system=SYSTEM, current=_current(100))

    # Then the walk stops at the big message: the two small older ones are not sent although they'd fit
    assert [m.get("content") for m in result.messages[1:-1]] == [history[3]["content"], history[4]["content"]]
    assert [(d.ref, d.reason) for d in result.stats.dropped] == [
        ("m0", MAX_CHARS),
        ("m1", MAX_CHARS),
        ("m2", MAX_CHARS),
    ]


def test_win2_seed003_current_message_always_included() -> None:
    # Given a 5000-character question (the longest a post accepts) and some history
    history = _history([10, 10])

    # When the seed-003 window is built
    result = select_window(history=history, policy=SEED_003_POLICY, system=SYSTEM, current=_current(5000))

    # Then the question is sent with the system prompt, and no history fits beside it
    assert [m["role"] for m in result.messages] == ["system", "user"]
    assert result.messages[-1]["content"] == "q" * 5000


def test_win2_seed003_sends_oldest_first_with_openai_keys_only() -> None:
    # Given history items carrying storage bookkeeping
    history = [
        {"role": "user", "content": "hi", "message_id": "m1", "seq": 1, "tokens": 1, "created_at": "x"},
        {"role": "assistant", "content": "hello", "message_id": "m2", "seq": 2, "tokens": 2},
    ]

    # When the seed-003 window is built
    result = select_window(history=history, policy=SEED_003_POLICY, current=_current(3))

    # Then messages are oldest first and carry role/content only
    assert result.messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "qqq"},
    ]
