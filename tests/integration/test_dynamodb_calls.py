"""API-4 / DES-1: a post is one Query and two TransactWrites, whatever the conversation's length."""

from __future__ import annotations

from collections import Counter
from typing import Any

import botocore.session
import pytest

from tests.support import functions as api
from tests.support import usage_feed
from tests.support.agent_api import turn_log
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _conversation_with(messages: int) -> str:
    conversation_id = api.post("turn 0").body["conversation_id"]
    for turn in range(1, messages // 2):
        assert api.post(f"turn {turn}", conversation_id).status == 201
    assert len(api.detail(conversation_id).body["messages"]) == messages
    return str(conversation_id)


def test_post_does_the_same_dynamodb_work_at_6_and_60_messages(
    chat_service: None, dynamo_calls: Counter[str]
) -> None:
    """API-4: DynamoDB calls of a post do not grow with history (1 Query + 2 TransactWriteItems)."""
    # Given a short and a long conversation
    short = _conversation_with(6)
    long = _conversation_with(60)
    # When one message is posted to each, counting DynamoDB calls
    dynamo_calls.clear()
    assert api.post("next", short).status == 201
    at_short = Counter(dynamo_calls)
    dynamo_calls.clear()
    assert api.post("next", long).status == 201
    at_long = Counter(dynamo_calls)
    # Then both posts made exactly the same calls: one Query, two TransactWriteItems
    assert at_short == at_long == Counter({"Query": 1, "TransactWriteItems": 2})


def test_first_message_needs_no_read(chat_service: None, dynamo_calls: Counter[str]) -> None:
    """API-1 + DES-1: creating on the first message is two TransactWrites and no read."""
    # Given nothing
    # When a first message is posted
    assert api.post("hello").status == 201
    # Then the conversation and both messages took two TransactWriteItems and nothing else
    assert dynamo_calls == Counter({"TransactWriteItems": 2})


def test_window_route_reads_once_and_writes_nothing(chat_service: None, dynamo_calls: Counter[str]) -> None:
    """API-4 for POST /window: one Query, no write, at any length."""
    # Given a conversation of 20 messages
    conversation_id = _conversation_with(20)
    dynamo_calls.clear()
    # When a window is built
    assert api.window(conversation_id, "what if").status == 200
    # Then one Query was made and nothing written
    assert dynamo_calls == Counter({"Query": 1})


def test_idempotent_post_adds_only_its_record_calls(chat_service: None, dynamo_calls: Counter[str]) -> None:
    """API-6: with an Idempotency-Key a post adds the record's put and update, still flat in history."""
    # Given a conversation
    conversation_id = _conversation_with(10)
    dynamo_calls.clear()
    # When a post carries an Idempotency-Key
    assert api.post("keyed", conversation_id, idempotency_key="flat-1").status == 201
    # Then the turn's calls are unchanged plus the idempotency record's PutItem and UpdateItem
    assert dynamo_calls == Counter({"Query": 1, "TransactWriteItems": 2, "PutItem": 1, "UpdateItem": 1})


def _transact_items(monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, Any]]]:
    """The items of every TransactWriteItems made from now on, one list per call."""
    seen: list[list[dict[str, Any]]] = []
    original = botocore.client.BaseClient._make_api_call

    def recording(self: Any, operation_name: str, api_params: Any) -> Any:
        if operation_name == "TransactWriteItems":
            seen.append(list(api_params["TransactItems"]))
        return original(self, operation_name, api_params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
    return seen


def _usage_updates(call: list[dict[str, Any]]) -> list[str]:
    keys = [next(iter(item.values()))["Key"] for item in call if "Update" in item]
    return [key["sk"]["S"] for key in keys if key["pk"]["S"].endswith("#USAGE")]


def test_budgets_add_one_query_and_one_update_in_the_replys_transaction(
    chat_service: None, dynamo_calls: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: with budgets on a post makes one Query more (the check) and its TransactWrite #2 one
    Update more (the reply's usage, in a shard of the day); the number of calls stays 1 + 1 Query and
    2 TransactWriteItems. With budgets off the transactions hold no usage item."""
    # Given a conversation, and every transaction's items recorded
    conversation_id = _conversation_with(10)
    written = _transact_items(monkeypatch)
    # When a post is made without budgets, then with them
    dynamo_calls.clear()
    assert api.post("off", conversation_id).status == 201
    without, off_items = Counter(dynamo_calls), list(written)
    monkeypatch.setenv("BUDGETS_ENABLED", "true")
    renew()
    usage_feed.deliver()  # the stream consumer's calls are not the post's (COST-3)
    dynamo_calls.clear()
    written.clear()
    assert api.post("on", conversation_id).status == 201
    # Then budgets add one Query and, in the reply's transaction, one update of a usage shard
    assert without == Counter({"Query": 1, "TransactWriteItems": 2})
    assert dynamo_calls == Counter({"Query": 2, "TransactWriteItems": 2})
    assert [_usage_updates(call) for call in off_items] == [[], []]
    [first, second] = [_usage_updates(call) for call in written]
    assert first == []
    assert len(second) == 1
    assert second[0].startswith("DAY#")
    assert second[0].count("#") == 3
    assert len(written[1]) == len(off_items[1]) + 1


def test_a_process_opens_one_dynamodb_client_for_every_kind_of_item(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PERF-1: a fresh process's first requests open one DynamoDB client, not one per kind of item
    (conversation, message, name, summary, usage...) and another for transactions: each costs tens of
    milliseconds of CPU on a cold start."""
    # Given a fresh runtime (as a new Lambda container has), counting the DynamoDB clients created
    renew()
    created: list[str] = []
    original = botocore.session.Session.create_client

    def counting(self: botocore.session.Session, service_name: str, *args: Any, **kwargs: Any) -> object:
        created.append(service_name)
        return original(self, service_name, *args, **kwargs)

    monkeypatch.setattr(botocore.session.Session, "create_client", counting)
    # When it creates a conversation by a first post, posts again, reads it back and lists
    first = api.post("hello")
    conversation_id = first.body["conversation_id"]
    assert api.post("again", conversation_id).status == 201
    assert api.detail(conversation_id).status == 200
    assert api.listing().status == 200
    # Then one DynamoDB client served every item and transaction
    assert created.count("dynamodb") == 1


def test_a_page_of_the_turn_log_reads_what_it_returns(chat_service: None, dynamo_calls: Counter[str]) -> None:
    """COST-5 / API-8: a page of GET /events is one GetItem and two Queries (event items, then the
    messages that carry events from the cursor on) at any length; `?turn=n` finds its turn's first
    message by a binary search of small Queries, never a read of the whole conversation."""
    # Given a conversation of 60 messages (30 turns, their events on the messages)
    conversation_id = _conversation_with(60)
    # When a page of 10 events is read, first and then following its cursor
    dynamo_calls.clear()
    first = turn_log(conversation_id, limit="10")
    assert first.status == 200
    assert len(first.lines) == 10
    assert first.next_cursor
    at_first = Counter(dynamo_calls)
    dynamo_calls.clear()
    assert len(turn_log(conversation_id, limit="10", cursor=first.next_cursor).lines) == 10
    at_next = Counter(dynamo_calls)
    # Then each page made one GetItem and two Queries
    assert at_first == at_next == Counter({"GetItem": 1, "Query": 2})
    # And one turn's events take about log2(60) small Queries more, not one per message
    dynamo_calls.clear()
    turn = turn_log(conversation_id, turn="17")
    assert [line["type"] for line in turn.lines] == ["turn_start", "assistant", "final", "turn_end"]
    assert dynamo_calls["Query"] <= 2 + 7
