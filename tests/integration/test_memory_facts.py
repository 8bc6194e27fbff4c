"""Long-term facts through the handlers on moto (MEM-31..37): the offline model extracts on the
turn-ended stream record, a contradiction supersedes, deletion cascades, the window carries the block."""

from __future__ import annotations

from typing import Any

import pytest
from chat_core.store import ledger

from tests.support import events
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.runtime import renew
from tests.support.stream_records import TableStream, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TABLE = "chat-history-it"
SUMMARIZER = "SummarizeConversationFunction"


@pytest.fixture
def facts_on(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> TableStream:
    monkeypatch.setenv("FACTS_EXTRACTION", "all")
    renew()
    return TableStream(TABLE)


def _turn(stream: TableStream, content: str, conversation_id: str | None = None, **fields: Any) -> str:
    answer = api.post(content, conversation_id, **fields)
    assert answer.status == 201, answer.body
    batch = for_function(SUMMARIZER, stream.read())
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    api.load("summarize_conversation").lambda_handler(event(batch), context)
    return str(answer.body["conversation_id"])


def _memory(user: str = "alice", **query: str) -> api.Answer:
    return api.invoke("memory_facts", events.http_event("GET", "/memory", user=user, query=query or None))


def _forget(fact_id: str, user: str = "alice") -> api.Answer:
    return api.invoke(
        "memory_facts",
        events.http_event(
            "DELETE",
            f"/memory/{fact_id}",
            route="/memory/{fact_id}",
            path_parameters={"fact_id": fact_id},
            user=user,
        ),
    )


def test_facts_appear_after_a_turn_and_a_contradiction_supersedes(facts_on: TableStream) -> None:
    # Given a turn in which the user says where they live
    cid = _turn(facts_on, "Hello. I live in Paris.")
    # Then the fact is listed with its source message
    [fact] = _memory().body["facts"]
    assert fact["text"] == "The user lives in Paris"
    assert fact["kind"] == "fact"
    assert fact["status"] == "active"
    assert fact["sources"][0]["conversation_id"] == cid
    # When a later turn contradicts it
    _turn(facts_on, "I live in Berlin, and I like jazz", cid)
    # Then the new fact supersedes the old, which is hidden unless asked for
    current = {f["text"]: f for f in _memory().body["facts"]}
    assert set(current) == {"The user lives in Berlin", "The user likes jazz"}
    assert current["The user lives in Berlin"]["supersedes"] == fact["id"]
    everything = {f["id"]: f for f in _memory(include_superseded="true").body["facts"]}
    assert everything[fact["id"]]["status"] == "superseded"
    assert everything[fact["id"]]["superseded_by"] == current["The user lives in Berlin"]["id"]
    # And a replay of the same stream batch extracts nothing again (each turn once)
    assert len(_memory(include_superseded="true").body["facts"]) == 3


def test_the_extraction_calls_are_charged_to_the_owner(facts_on: TableStream) -> None:
    _turn(facts_on, "My name is Alice.")
    days = ledger.read_days("alice", "2000-01-01", "2999-12-31")
    # The reply and the extraction call: two calls of the offline model
    assert sum(d.calls for d in days) == 2


def test_deleting_every_source_message_deletes_the_fact(facts_on: TableStream) -> None:
    cid = _turn(facts_on, "I prefer green tea.")
    [fact] = _memory().body["facts"]
    message_id = fact["sources"][0]["message_id"]
    # When its only source message is deleted
    assert api.delete_message(cid, message_id).status == 200
    # Then the fact is gone at once, and for good
    assert _memory(include_superseded="true").body["facts"] == []
    assert _forget(fact["id"]).status == 404


def test_deleting_the_conversation_deletes_its_facts(facts_on: TableStream) -> None:
    cid = _turn(facts_on, "I work as a baker.")
    assert len(_memory().body["facts"]) == 1
    assert api.delete(cid).status == 204
    assert _memory().body["facts"] == []


def test_delete_memory_is_the_owners_only(facts_on: TableStream) -> None:
    _turn(facts_on, "I live in Rome.")
    [fact] = _memory().body["facts"]
    # Another user neither sees nor deletes it
    assert _memory(user="bob").body["facts"] == []
    assert _forget(fact["id"], user="bob").status == 404
    # Its owner deletes it
    assert _forget(fact["id"]).status == 204
    assert _memory(include_superseded="true").body["facts"] == []


def test_the_window_carries_the_known_facts_block(facts_on: TableStream) -> None:
    cid = _turn(facts_on, "I live in Oslo.")
    # When a window is built with facts in its policy
    window = api.window(cid, "where do I live?", window_policy={"max_messages": 10, "facts": True})
    assert window.status == 200, window.body
    # Then the block follows the system prompt, within the window's budget
    blocks = [m for m in window.body["messages"] if str(m.get("content", "")).startswith("Known facts")]
    assert len(blocks) == 1
    assert "The user lives in Oslo" in blocks[0]["content"]
    assert window.body["stats"]["facts"]["included"] == 1
    # And the inspector shows the block as a row of its own, kept, with its tokens (WIN-6)
    rows = [e for e in window.body["inspect"]["entries"] if e.get("block")]
    assert [(r["reason"], r["state"], r["block"]) for r in rows] == [
        ("facts", "kept", {"kind": "facts", "items": 1})
    ]
    assert rows[0]["tokens"] == window.body["stats"]["facts"]["tokens"]
    assert "Oslo" in rows[0]["preview"]
    # And without it, there is none
    plain = api.window(cid, "where do I live?")
    assert not [m for m in plain.body["messages"] if str(m.get("content", "")).startswith("Known facts")]
    assert "facts" not in plain.body["stats"]
    assert not [e for e in plain.body["inspect"]["entries"] if e.get("block")]


def test_extraction_is_off_by_default(chat_service: None) -> None:
    stream = TableStream(TABLE)
    _turn(stream, "I live in Lima.")
    assert _memory().body["facts"] == []


def test_opt_in_extracts_only_from_conversations_whose_policy_asks(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FACTS_EXTRACTION", "opt_in")
    renew()
    stream = TableStream(TABLE)
    # Given a conversation without facts in its policy, and one with
    _turn(stream, "I live in Nice.")
    asked = api.create(window_policy={"max_messages": 10, "facts": True}).body["conversation_id"]
    assert _memory().body["facts"] == []
    # When a turn of the second says something durable, Then only that one is extracted
    _turn(stream, "I work as a pilot.", asked)
    assert [f["text"] for f in _memory().body["facts"]] == ["The user works as pilot"]


def test_a_conversation_may_opt_out_when_all_are_extracted(facts_on: TableStream) -> None:
    quiet = api.create(window_policy={"max_messages": 10, "facts": {"extract": False}})
    _turn(facts_on, "I live in Turin.", quiet.body["conversation_id"])
    assert _memory().body["facts"] == []


def test_a_store_false_turn_is_never_extracted(facts_on: TableStream) -> None:
    """MEM-34 + RSP-9: the answer of a `store: false` response is marked; a stream batch that delivers it
    before its request has deleted the partition (the extraction could still read the turn) extracts
    nothing from it, so no fact of a turn never kept is written."""
    # Given a turn whose stream batch carries its answer marked as a store: false response's
    answer = api.post("Hello. I live in Oslo.")
    assert answer.status == 201, answer.body
    batch = for_function(SUMMARIZER, facts_on.read())
    marked = 0
    for record in batch:
        image = record["dynamodb"].get("NewImage") or {}
        if image.get("role", {}).get("S") == "assistant":
            image["settings"] = {"S": '{"store":false}'}
            marked += 1
    assert marked == 1
    # When the summarizer's stream function handles it while the partition is still there
    context = LambdaContext(function_name="summarize_conversation", remaining_ms=120_000)
    api.load("summarize_conversation").lambda_handler(event(batch), context)
    # Then no fact was taken from it
    assert _memory(include_superseded="true").body["facts"] == []
