"""COST-5 / EVT-1: a post's turn-log events ride on the message items it writes (no EventItem), and the
log reads back exactly as the events were built, old EventItems and message-borne events merged."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from chat_core.engine.turnlog import LogEvent
from chat_core.runtime import current
from chat_core.store import conversations as store
from chat_core.store import repair, turn_log, turn_reads
from chat_core.store.keys import EVENT_SK_PREFIX

from tests.support import functions as api
from tests.support.agent_api import full_log
from tests.support.agent_api import turn_log as read_log
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

CALL_ID = "call_standin_1"


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[LogEvent]:
    """Every event a write hands the store, as built (the log must read back exactly these)."""
    events: list[LogEvent] = []
    split = turn_log.split

    def spy(message: Any, batch: Any) -> tuple[str | None, list[LogEvent]]:
        events.extend(batch)
        return split(message, batch)

    monkeypatch.setattr(turn_log, "split", spy)
    return events


def _event_keys(conversation_id: str) -> list[str]:
    client = boto3.client("dynamodb", region_name="us-east-1")
    settings = current().settings
    conversation = store.get_conversation("alice", conversation_id)
    assert conversation is not None
    raw = client.query(
        TableName=settings.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :evt)",
        ExpressionAttributeValues={":pk": {"S": conversation.pk}, ":evt": {"S": EVENT_SK_PREFIX}},
    )
    return [item["sk"]["S"] for item in raw["Items"]]


def _pages(conversation_id: str, limit: int, **query: str) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    cursor = None
    while True:
        answer = read_log(conversation_id, limit=str(limit), **query | ({"cursor": cursor} if cursor else {}))
        assert answer.status == 200, answer.error
        lines += answer.lines
        cursor = answer.next_cursor
        if cursor is None:
            return lines


def _session_start(events: list[LogEvent]) -> list[LogEvent]:
    return [e for e in events if e.type == "session_start"]


def test_cost5_a_normal_post_writes_no_event_item_and_its_log_reads_back_exactly(
    standin_llm: OpenAIStandin, written: list[LogEvent]
) -> None:
    """COST-5: turn_start rides on the user message, the reply's steps on the reply; the route, its
    pages, `?turn=n` and a repair's read give back exactly the events the posts built."""
    # Given a conversation created empty, then three posts, the second asking for a tool and answered
    conversation_id = api.create(title="carried").body["conversation_id"]
    assert api.post("first", conversation_id).status == 201
    standin_llm.set_mode("tool_call")
    asked = api.post("Weather in Paris?", conversation_id)
    standin_llm.set_mode("ok")
    assert asked.status == 201
    result = {"role": "tool", "tool_call_id": CALL_ID, "content": "18°C, sunny"}
    assert api.post(None, conversation_id, messages=[result]).status == 201
    assert api.post("third", conversation_id).status == 201
    # Then the only EventItem is the conversation's session_start
    assert _event_keys(conversation_id) == [f"{EVENT_SK_PREFIX}{0:010d}#0000"]
    # And the log reads back exactly the events built, in (turn, index) order
    expected = [e.to_line(conversation_id) for e in written]
    assert full_log(conversation_id) == expected
    assert [line["type"] for line in expected].count("action") == 1
    assert [line["type"] for line in expected].count("observation") == 1
    # And page by page (every page size), following the cursor
    for limit in (1, 2, 3, 5):
        assert _pages(conversation_id, limit) == expected
    # And one turn at a time
    for turn in (1, 2, 3):
        one = [line for line in expected if line["turn"] == turn]
        assert _pages(conversation_id, 2, turn=str(turn)) == one
        assert full_log_of_turn(conversation_id, turn) == one
    # And a repair's read finds the turn of a message from the message that carries it
    conversation = store.get_conversation("alice", conversation_id)
    assert conversation is not None
    user_id = asked.body["user_message"]["message_id"]
    found = repair.read_turn_of(conversation, user_id)
    assert found is not None
    assert [e.to_line(conversation_id) for e in found] == [line for line in expected if line["turn"] == 2]


def full_log_of_turn(conversation_id: str, turn: int) -> list[dict[str, Any]]:
    answer = read_log(conversation_id, limit="1000", turn=str(turn))
    assert answer.status == 200, answer.error
    return answer.lines


def test_cost5_old_event_items_and_carried_events_read_as_one_log(
    standin_llm: OpenAIStandin, written: list[LogEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """EVT-1: a conversation logged as EventItems (every event an item, as before) and continued with
    message-borne events reads as one log, in order, in pages and by turn: no migration."""
    # Given two posts written the old way (every event its own item, no message carries any)
    monkeypatch.setattr(
        turn_log, "split", lambda message, batch: (written.extend(batch), (None, list(batch)))[1]
    )
    conversation_id = api.post("old one").body["conversation_id"]
    assert api.post("old two", conversation_id).status == 201
    monkeypatch.undo()
    split = turn_log.split

    def spy(message: Any, batch: Any) -> tuple[str | None, list[LogEvent]]:
        written.extend(batch)
        return split(message, batch)

    monkeypatch.setattr(turn_log, "split", spy)
    # And the conversation item of that time had no `log_from`: remove it, as if written then
    conversation = store.get_conversation("alice", conversation_id)
    assert conversation is not None
    boto3.client("dynamodb", region_name="us-east-1").update_item(
        TableName=current().settings.table_name,
        Key={"pk": {"S": conversation.pk}, "sk": {"S": conversation.sk}},
        UpdateExpression="REMOVE log_from",
    )
    # When two more posts are written now
    assert api.post("new three", conversation_id).status == 201
    assert api.post("new four", conversation_id).status == 201
    # Then the old turns are EventItems, the new ones none
    keys = _event_keys(conversation_id)
    assert len(keys) == 1 + 4 + 4
    # And the log is every event built, in order, whole, in pages and by turn
    expected = [e.to_line(conversation_id) for e in written]
    assert [line["turn"] for line in expected] == [None, *[1] * 4, *[2] * 4, *[3] * 4, *[4] * 4]
    assert full_log(conversation_id) == expected
    for limit in (1, 4, 6):
        assert _pages(conversation_id, limit) == expected
    for turn in (1, 2, 3, 4):
        assert _pages(conversation_id, 3, turn=str(turn)) == [
            line for line in expected if line["turn"] == turn
        ]
    stored = store.get_conversation("alice", conversation_id)
    assert stored is not None
    assert [e.to_line(conversation_id) for e in turn_reads.turn_events(stored, 2)] == expected[5:9]
