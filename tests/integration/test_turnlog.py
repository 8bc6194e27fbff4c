"""Seed 002 turn log (EVT-1, AGT-1): every post is a Turn of Steps, exported as JSONL."""

from __future__ import annotations

from collections import Counter
from typing import Any

import botocore.client
import pytest
from chat_core.store import conversations as store
from chat_core.store import turn_reads

from tests.support import functions as api
from tests.support.agent_api import full_log, turn_log
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SEED_FIELDS = ["ts", "session_id", "turn", "step", "type", "content", "role", "meta"]


def test_seed002_a_turn_is_logged_in_order_with_the_seed_field_names(standin_llm: OpenAIStandin) -> None:
    """Seed 002 JSONL format: session_start, then turn_start, assistant, final, turn_end per post."""
    # Given a conversation created on its first message and a second post
    first = api.post("Read the README")
    conversation_id = first.body["conversation_id"]
    second = api.post("And the license?", conversation_id)
    # When its events are read
    answer = turn_log(conversation_id)
    # Then the body is JSONL, one event per line with exactly the seed's fields in order
    assert answer.status == 200
    assert answer.content_type.startswith("application/x-ndjson")
    assert answer.text.endswith("\n")
    assert len(answer.text.splitlines()) == len(answer.lines)
    assert all(list(line) == SEED_FIELDS for line in answer.lines)
    assert {line["session_id"] for line in answer.lines} == {conversation_id}
    # And the log reads session_start, then two complete turns
    turn = ["turn_start", "assistant", "final", "turn_end"]
    assert answer.types == ["session_start", *turn, *turn]
    assert [line["turn"] for line in answer.lines] == [None, 1, 1, 1, 1, 2, 2, 2, 2]
    assert [line["step"] for line in answer.lines] == [None, None, 0, 0, None, None, 0, 0, None]
    assert answer.lines[0]["meta"]["mode"] == "api"
    assert answer.lines[0]["meta"]["tokenizer"] == "o200k_base"
    # And the contents are the user's input and the model's answer
    start, assistant, final, _end = answer.lines[5:9]
    assert (start["content"], start["role"]) == ("And the license?", "user")
    reply = second.body["assistant_message"]
    assert assistant["content"] == final["content"] == reply["content"]
    assert assistant["meta"]["messageId"] == reply["message_id"]
    # And timestamps are ISO 8601 UTC and never go backwards
    stamps = [line["ts"] for line in answer.lines]
    assert all(ts.endswith("Z") and "T" in ts for ts in stamps)
    assert stamps == sorted(stamps)


def test_seed002_token_meta_per_step_turn_and_conversation(standin_llm: OpenAIStandin) -> None:
    """Seed 002 token budget: meta.tokens on turn_start, assistant and turn_end; conversation totals."""
    # Given two turns answered with usage
    conversation_id = api.post("one").body["conversation_id"]
    reply = api.post("two", conversation_id).body["assistant_message"]
    # When the second turn's events are read
    lines = turn_log(conversation_id, turn="2").lines
    start, assistant, _final, end = lines
    # Then turn_start carries the input's count, the assistant step the usage as reported plus the local
    # count, and turn_end the turn's tokens and the conversation's totals
    user = api.detail(conversation_id).body["messages"][2]
    assert user["content"] == "two"
    assert start["meta"]["tokens"]["prompt"] > 0
    usage = reply["usage"]
    step = assistant["meta"]["tokens"]
    assert (step["prompt"], step["completion"], step["total"]) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
        usage["total_tokens"],
    )
    assert step["local"]["prompt"] > 0
    assert step["source"] == "usage"
    assert end["meta"]["status"] == "ok"
    assert end["meta"]["stepCount"] == 1
    assert isinstance(end["meta"]["durationMs"], int)
    assert end["meta"]["durationMs"] >= 0
    assert end["meta"]["tokens"]["total"] == usage["total_tokens"]
    conversation = api.detail(conversation_id).body
    assert end["meta"]["conversationTokens"]["total"] == conversation["usage"]["total_tokens"]
    assert (
        end["meta"]["conversationTokens"]["local"]["prompt"] == conversation["local_usage"]["prompt_tokens"]
    )


def test_seed002_provider_500_ends_the_turn_with_status_error(standin_llm: OpenAIStandin) -> None:
    """Seed 002 turn_end status error + API-2: a provider 500 is an error step and an error turn."""
    # Given a conversation and a provider that answers 500
    conversation_id = api.post("fine").body["conversation_id"]
    standin_llm.set_mode("error500")
    # When the user posts
    answer = api.post("this one fails", conversation_id)
    # Then the post is 502 and the turn's log ends with status error and the provider's message
    assert answer.status == 502
    lines = turn_log(conversation_id, turn="2").lines
    assert [line["type"] for line in lines] == ["turn_start", "assistant", "turn_end"]
    step, end = lines[1], lines[2]
    assert step["meta"]["status"] == "error"
    assert step["meta"]["error"]["statusCode"] == 500
    assert step["meta"]["messageId"] == answer.body["assistant_message"]["message_id"]
    assert end["meta"]["status"] == "error"
    assert end["meta"]["stepCount"] == 1
    assert end["meta"]["errorMessage"] == answer.body["assistant_message"]["error"]["message"]
    assert end["meta"]["tokens"]["total"] == 0  # nothing reported (TOK-6), the local count beside it
    assert end["meta"]["tokens"]["local"]["prompt"] > 0


def test_seed002_session_start_on_create_and_session_end_on_delete(chat_service: None) -> None:
    """Seed 002 session_start / session_end: creation opens the log, delete closes it (kept in storage)."""
    # Given a conversation created empty
    created = api.create(title="session", system_prompt="Be brief.")
    conversation_id = created.body["conversation_id"]
    # Then its log holds session_start with the conversation's settings
    lines = full_log(conversation_id)
    assert [line["type"] for line in lines] == ["session_start"]
    assert lines[0]["meta"]["config"]["title"] == "session"
    assert lines[0]["meta"]["config"]["systemPrompt"] is True
    # When a turn is posted and the conversation deleted
    api.post("hi", conversation_id)
    assert api.delete(conversation_id).status == 204
    # Then the route answers 404 like every route of a deleted conversation
    assert turn_log(conversation_id).status == 404
    # And the stored log ends with session_end (read from the store: it stays until the retention purge)
    stored_conversation = store.get_conversation("alice", conversation_id)
    assert stored_conversation is not None
    page = turn_reads.page_events(stored_conversation, 100, None)
    stored = page.items
    assert [line["type"] for line in stored][-1] == "session_end"
    assert stored[-1]["meta"]["reason"] == "deleted"
    assert [line["type"] for line in stored][:2] == ["session_start", "turn_start"]


@pytest.mark.parametrize("case", ["other_user", "unknown", "malformed", "deleted"])
def test_events_route_is_404_for_what_the_caller_cannot_see(chat_service: None, case: str) -> None:
    """API-8 isolation on GET /events: another user's, unknown, malformed or deleted -> 404."""
    # Given a conversation of alice
    conversation_id = api.post("private").body["conversation_id"]
    target, user = conversation_id, "alice"
    if case == "other_user":
        user = "bob"
    elif case == "unknown":
        target = "01JD8ZQ5N6Y4T3W2V1S0R9P8QM"
    elif case == "malformed":
        target = "not-an-id"
    else:
        api.delete(conversation_id)
    # When the events are asked for
    answer = turn_log(target, user=user)
    # Then the answer is 404 in the one error shape, and no event leaks
    assert answer.status == 404
    assert answer.error is not None
    assert answer.error["code"] == "conversation_not_found"
    assert answer.lines == []


def test_events_route_without_identity_is_401(chat_service: None) -> None:
    """API-8: no identity is 401 on GET /events too."""
    conversation_id = api.post("hello").body["conversation_id"]
    answer = turn_log(conversation_id, user=None)
    assert answer.status == 401


def test_events_are_paginated_with_an_opaque_cursor_header(chat_service: None) -> None:
    """API-8 pagination on GET /events: `limit` + X-Next-Cursor; pages join up to the whole log."""
    # Given a conversation of three turns (1 + 3 * 4 = 13 events)
    conversation_id = api.post("a").body["conversation_id"]
    api.post("b", conversation_id)
    api.post("c", conversation_id)
    whole = full_log(conversation_id)
    assert len(whole) == 13
    # When it is read 5 events at a time, following the cursor header
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    while True:
        query = {"limit": "5"} | ({"cursor": cursor} if cursor else {})
        answer = turn_log(conversation_id, **query)
        assert answer.status == 200
        pages.append(answer.lines)
        cursor = answer.next_cursor
        if cursor is None:
            break
    # Then the pages are 5, 5, 3 and together are exactly the whole log
    assert [len(p) for p in pages] == [5, 5, 3]
    assert [line for page in pages for line in page] == whole


@pytest.mark.parametrize(
    "query",
    [
        {"limit": "0"},
        {"limit": "1001"},
        {"limit": "x"},
        {"cursor": "garbage"},
        {"turn": "-1"},
        {"turn": "two"},
    ],
)
def test_events_route_bad_query_is_a_clear_4xx(chat_service: None, query: dict[str, str]) -> None:
    """API-5 on GET /events: bad limit, cursor or turn -> 4xx JSON error, never a 500."""
    conversation_id = api.post("hello").body["conversation_id"]
    answer = turn_log(conversation_id, **query)
    assert 400 <= answer.status < 500
    assert answer.error is not None
    assert answer.error["message"]


def test_a_cursor_of_another_conversation_is_refused(chat_service: None) -> None:
    """API-5: an events cursor is bound to its conversation (and listing); elsewhere it is 400."""
    # Given a cursor from one conversation's events
    first = api.post("one").body["conversation_id"]
    api.post("two", first)
    cursor = turn_log(first, limit="2").next_cursor
    assert cursor is not None
    second = api.post("other").body["conversation_id"]
    # When it is used on another conversation
    answer = turn_log(second, cursor=cursor)
    # Then it is refused as an invalid cursor
    assert answer.status == 400
    assert answer.error is not None
    assert answer.error["code"] == "invalid_cursor"


def test_post_query_never_reads_turn_log_events(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """API-4 with the turn log: the post's one Query returns the conversation item and messages only."""
    # Given a short conversation (fewer messages than the window, so a Query could run on into events)
    conversation_id = api.post("one").body["conversation_id"]
    returned: list[list[str]] = []
    original = botocore.client.BaseClient._make_api_call

    def spy(self: Any, operation: str, params: Any) -> Any:
        result = original(self, operation, params)
        if operation == "Query":
            returned.append([item["sk"]["S"] for item in result.get("Items", [])])
        return result

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", spy)
    # When the user posts again
    assert api.post("two", conversation_id).status == 201
    # Then one Query ran and it returned the conversation item and the two messages, no event
    assert len(returned) == 1
    assert returned[0][0] == "~META"
    assert all(sk.startswith("MSG#") for sk in returned[0][1:])
    assert len(returned[0]) == 3


def test_turn_log_keeps_the_post_at_one_query_and_two_transactions(
    chat_service: None, dynamo_calls: Counter[str]
) -> None:
    """API-4 / DES-1: the turn's events ride in the post's two TransactWrites (no extra round trip)."""
    # Given a conversation with a few turns logged
    conversation_id = api.post("one").body["conversation_id"]
    api.post("two", conversation_id)
    dynamo_calls.clear()
    # When another turn is posted
    assert api.post("three", conversation_id).status == 201
    # Then the calls are still one Query and two TransactWriteItems, and the turn is fully logged
    assert dynamo_calls == Counter({"Query": 1, "TransactWriteItems": 2})
    assert [line["type"] for line in turn_log(conversation_id, turn="3").lines] == [
        "turn_start",
        "assistant",
        "final",
        "turn_end",
    ]
