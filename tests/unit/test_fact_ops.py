"""MEM-36: the extraction answer's operations are validated whole, and an update supersedes."""

from __future__ import annotations

import itertools
import json

import pytest
from chat_core.engine.fact_ops import (
    RETRACTED,
    SUPERSEDED,
    Fact,
    MalformedOperations,
    Source,
    parse_operations,
    plan,
    render_block,
)
from chat_core.llm import offline_facts

SOURCE = Source("C1", "M1", 1)
OLD = Fact("F1", "The user lives in Paris", "fact", (SOURCE,), "2026-01-01", "2026-01-01")
CURRENT = {"F1": OLD}


def _answer(*operations: dict[str, object]) -> str:
    return json.dumps({"operations": list(operations)})


def test_a_valid_answer_parses_and_an_update_supersedes_the_old_fact() -> None:
    # Given an answer that updates a current fact and adds a preference (in a fenced block)
    answer = (
        "```json\n"
        + _answer(
            {"op": "update", "id": "F1", "text": "The user lives in Berlin", "sources": ["M2"]},
            {"op": "add", "text": "The user prefers tea", "kind": "preference", "sources": ["M2"]},
        )
        + "\n```"
    )
    # When it is parsed and planned
    operations = parse_operations(answer, current=CURRENT, message_ids=["M2"])
    ids = (f"N{i}" for i in itertools.count())
    changes = plan(
        operations, current=CURRENT, messages={"M2": Source("C1", "M2", 2)}, now="t", new_id=lambda: next(ids)
    )
    # Then the new fact replaces the old one, which is kept as superseded by it
    assert [f.text for f in changes.created] == ["The user lives in Berlin", "The user prefers tea"]
    assert changes.created[0].supersedes == "F1"
    assert changes.changed[0].status == SUPERSEDED
    assert changes.changed[0].superseded_by == changes.created[0].fact_id
    assert changes.created[1].kind == "preference"


@pytest.mark.parametrize(
    "answer",
    [
        "not json",
        json.dumps({"ops": []}),
        _answer({"op": "add", "text": "x"}),  # no sources
        _answer({"op": "add", "text": "x", "sources": ["M9"]}),  # a message not shown
        _answer({"op": "add", "text": "", "sources": ["M2"]}),
        _answer({"op": "add", "text": "x" * 501, "sources": ["M2"]}),
        _answer({"op": "add", "text": "x", "kind": "secret", "sources": ["M2"]}),
        _answer({"op": "update", "id": "F9", "text": "x", "sources": ["M2"]}),  # no such fact
        _answer({"op": "delete", "id": "F1"}, {"op": "delete", "id": "F1"}),  # twice
        _answer({"op": "merge", "id": "F1"}),
        _answer(*[{"op": "add", "text": f"t{i}", "sources": ["M2"]} for i in range(21)]),
    ],
)
def test_a_malformed_answer_is_refused_whole(answer: str) -> None:
    with pytest.raises(MalformedOperations):
        parse_operations(answer, current=CURRENT, message_ids=["M2"])


def test_a_delete_retracts_and_a_repeated_fact_is_not_added_twice() -> None:
    operations = parse_operations(
        _answer(
            {"op": "delete", "id": "F1", "sources": []},
            {"op": "add", "text": "the user  LIVES in paris", "sources": ["M2"]},
        ),
        current=CURRENT,
        message_ids=["M2"],
    )
    changes = plan(
        operations, current=CURRENT, messages={"M2": Source("C1", "M2", 2)}, now="t", new_id=lambda: "N"
    )
    assert [f.status for f in changes.changed] == [RETRACTED]
    assert changes.created == []


def test_the_block_holds_the_facts_that_fit() -> None:
    facts = [OLD, Fact("F2", "The user likes jazz", "preference", (SOURCE,), "t", "t")]
    text, kept = render_block(facts, lambda t: len(t) < 120) or ("", [])
    assert text.startswith("Known facts about the user")
    assert [f.fact_id for f in kept] == ["F1"]
    assert render_block(facts, lambda t: False) is None


def test_the_offline_model_answers_an_update_for_a_contradiction() -> None:
    # Given the extraction prompt with a current fact and a message contradicting it
    request = {
        "current_facts": [{"id": "F1", "text": "The user lives in Paris", "kind": "fact"}],
        "messages": [{"id": "M2", "role": "user", "text": "I live in Berlin now. I like jazz."}],
    }
    messages = [
        {"role": "system", "content": offline_facts.FACTS_PROMPT_MARKER + " ..."},
        {"role": "user", "content": json.dumps(request)},
    ]
    # When the offline model answers, Then it is an update of F1 and an added preference, and valid
    assert offline_facts.is_extraction(messages)
    answer = offline_facts.answer(messages)
    operations = parse_operations(answer, current=CURRENT, message_ids=["M2"])
    assert [(o.op, o.fact_id, o.text) for o in operations] == [
        ("update", "F1", "The user lives in Berlin now"),
        ("add", None, "The user likes jazz"),
    ]
