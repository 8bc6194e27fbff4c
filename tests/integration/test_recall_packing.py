"""MEM-53/54: what recall packs into its budget: a hit with the turns around it, tool calls whole, and a
turn too long for the budget skipped and reported, never cut."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import functions as api
from tests.support.recall import run_stream
from tests.support.stream_records import TableStream

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TABLE = "chat-history-it"
FILLER = [{"role": "user", "content": f"small talk number {n} about the weather in town"} for n in range(20)]


def conversation(first: list[dict[str, Any]]) -> str:
    """`first` then 20 turns of small talk, indexed by the stream."""
    stream = TableStream(TABLE)
    created = api.create()
    assert created.status == 201, created.body
    cid = str(created.body["conversation_id"])
    answer = api.append(cid, [*first, *FILLER])
    assert answer.status == 201, answer.body
    run_stream(stream)
    return cid


def entries_by_seq(answer: api.Answer) -> dict[int, dict[str, Any]]:
    return {int(e["seq"]): e for e in answer.body["inspect"]["entries"] if e.get("seq")}


def test_mem53_a_recalled_question_brings_its_answer(chat_service: None) -> None:
    # Given an old question whose answer shares no word with what is asked later
    cid = conversation(
        [
            {"role": "user", "content": "Guess which city my sister moved to last spring?"},
            {"role": "assistant", "content": "Lisbon, by the river, you said so before."},
        ]
    )
    # When the window of a question about the sister is built with recall on
    answer = api.window(
        cid, "where did my sister move?", window_policy={"max_messages": 4, "recall": {"max_tokens": 300}}
    )
    assert answer.status == 200, answer.body
    entries = entries_by_seq(answer)
    # Then the question is recalled as a hit and its answer beside it, marked as its neighbour
    assert entries[1]["state"] == "recalled"
    assert "neighbour_of" not in entries[1]
    assert entries[2]["state"] == "recalled"
    assert entries[2]["neighbour_of"] == 1
    assert any("Lisbon" in str(m["content"]) for m in answer.body["messages"])
    assert answer.body["stats"]["recall"]["neighbours"] >= 1


def test_mem53_a_neighbouring_tool_call_comes_with_all_its_results(chat_service: None) -> None:
    # Given an old question answered by a tool call with two results
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "fx", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "fy", "arguments": "{}"}},
    ]
    cid = conversation(
        [
            {"role": "user", "content": "What is the exchange rate of the zloty today?"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c1", "content": "4.31"},
            {"role": "tool", "tool_call_id": "c2", "content": "4.29"},
        ]
    )
    # When a later question about the zloty is windowed with recall on
    answer = api.window(
        cid, "the zloty rate again?", window_policy={"max_messages": 4, "recall": {"max_tokens": 400}}
    )
    assert answer.status == 200, answer.body
    entries = entries_by_seq(answer)
    # Then the question, the call and both results are sent, in their original order
    assert [entries[s]["state"] for s in (1, 2, 3, 4)] == ["recalled"] * 4
    roles = [m["role"] for m in answer.body["messages"] if m["role"] != "system"][:4]
    assert roles == ["user", "assistant", "tool", "tool"]


def test_mem54_a_hit_too_long_for_the_budget_is_reported_not_cut(chat_service: None) -> None:
    # Given an old message about the zloty far longer than recall's budget
    long_text = "The zloty history: " + " ".join(f"fact{n} about prices" for n in range(200))
    cid = conversation([{"role": "user", "content": long_text}])
    # When a question about the zloty is windowed with a small recall budget
    answer = api.window(
        cid, "zloty history?", window_policy={"max_messages": 4, "recall": {"max_tokens": 100}}
    )
    assert answer.status == 200, answer.body
    # Then no part of it is sent, and the stats say it did not fit
    assert not any("fact1 " in str(m["content"]) for m in answer.body["messages"])
    skipped = answer.body["stats"]["recall"]["did_not_fit"]
    assert skipped[0]["seqs"] == [1]
    assert skipped[0]["tokens"] > 100


def test_mem54_recall_takes_only_the_room_left_by_what_the_window_always_carries(
    chat_service: None,
) -> None:
    # Given a long system prompt and eight old turns about the sister's moves, then small talk
    stream = TableStream(TABLE)
    rules = " ".join(f"Rule {n}: be brief and kind." for n in range(15))
    prompt = f"You are a patient travel assistant. {rules}"
    created = api.create(system_prompt=prompt)
    assert created.status == 201, created.body
    cid = str(created.body["conversation_id"])
    moves = [
        {"role": "user", "content": f"My sister moved to city number {n} when her job changed again."}
        for n in range(8)
    ]
    assert api.append(cid, [*moves, *FILLER]).status == 201
    run_stream(stream)
    # When a question about the sister is windowed in 300 tokens with recall's default share (90%)
    answer = api.window(cid, "where did my sister move?", window_policy={"max_tokens": 300, "recall": True})
    assert answer.status == 200, answer.body
    # Then recall found some of those turns, and every turn it chose is in the window: none is dropped
    # afterwards for room the system prompt and the current message had already taken
    recalled = [e for e in answer.body["inspect"]["entries"] if e.get("recalled")]
    assert recalled
    assert [e["seq"] for e in recalled if e["state"] != "recalled"] == []
    assert answer.body["stats"]["tokens_used"] <= 300
