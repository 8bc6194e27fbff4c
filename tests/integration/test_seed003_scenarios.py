"""Seed 003 (chat-history-api), every scenario by name, through the Lambda handlers on a moto table."""

from __future__ import annotations

from collections import Counter
from typing import Any

import boto3
import pytest

from tests.integration.conftest import TABLE
from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

#: API-18 adds `parent_id` (the message before it; null for a conversation's first message).
USER_FIELDS = {"message_id", "conversation_id", "role", "content", "status", "created_at", "parent_id"}
ASSISTANT_FIELDS = USER_FIELDS | {"model", "usage"}


def _table_items() -> list[dict[str, Any]]:
    # Test-only check of everything stored; the service itself never scans.
    return boto3.client("dynamodb", region_name="us-east-1").scan(TableName=TABLE)["Items"]


def test_create_conversation_on_first_message(chat_service: None) -> None:
    """Seed 003 "Create conversation on first message" (API-1): no id -> conversation created, id returned."""
    # Given no conversation yet
    # When the user sends a first message without a conversation_id
    answer = api.post("What is DynamoDB?")
    # Then a conversation is created with the user message saved, and its id is returned
    assert answer.status == 201
    conversation_id = answer.body["conversation_id"]
    assert answer.body["user_message"]["conversation_id"] == conversation_id
    assert answer.body["user_message"]["content"] == "What is DynamoDB?"
    detail = api.detail(conversation_id)
    assert detail.status == 200
    assert [m["role"] for m in detail.body["messages"]] == ["user", "assistant"]
    # And the id lets the user append to the same conversation
    follow_up = api.post("And how is it priced?", conversation_id)
    assert follow_up.status == 201
    assert follow_up.body["conversation_id"] == conversation_id
    assert len(api.detail(conversation_id).body["messages"]) == 4


def test_record_successful_chat_messages_with_usage(standin_llm: OpenAIStandin) -> None:
    """Seed 003 "Record successful chat messages with usage" (API-1, TOK-6): model, content, usage kept."""
    # Given a provider that answers with usage
    # When the user posts a message
    answer = api.post("hello", model="gpt-4o-mini")
    # Then user and assistant messages are stored; the assistant has the model, content and usage
    assert answer.status == 201
    sent = standin_llm.completion_requests[-1].json
    user, assistant = answer.body["user_message"], answer.body["assistant_message"]
    assert set(user) == USER_FIELDS
    assert user["parent_id"] is None
    assert assistant["parent_id"] == user["message_id"]
    # (API-10: a model's answer also says how it ended; COST-2: and what it cost)
    assert set(assistant) == ASSISTANT_FIELDS | {"finish_reason", "completion_id", "cost"}
    assert assistant["finish_reason"] == "stop"
    assert assistant["status"] == "ok"
    assert assistant["model"] == sent["model"] == "gpt-4o-mini"
    assert assistant["content"].startswith('Stand-in reply: you said "hello"')
    usage = assistant["usage"]
    assert usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # And the message detail API returns the usage as stored
    stored = api.detail(answer.body["conversation_id"]).body["messages"][1]
    assert stored == assistant


def test_record_successful_chat_messages_without_usage(standin_llm: OpenAIStandin) -> None:
    """Seed 003 "... without usage" (TOK-6): usage recorded as 0, the local count stored beside it."""
    # Given a provider that answers without a usage object
    standin_llm.set_mode("no_usage")
    # When the user posts a message
    answer = api.post("count me")
    # Then the reply is stored with usage 0/0/0
    assert answer.status == 201
    assistant = answer.body["assistant_message"]
    assert assistant["status"] == "ok"
    assert assistant["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    # And the local count is recorded beside it so cost can still be audited
    conversation = api.detail(answer.body["conversation_id"]).body
    assert conversation["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert conversation["local_usage"]["prompt_tokens"] > 0
    assert conversation["local_usage"]["completion_tokens"] > 0
    items = [i for i in _table_items() if i.get("role", {}).get("S") == "assistant"]
    assert items[0]["usage_reported"] == {"BOOL": False}
    assert int(items[0]["local_usage"]["M"]["completion_tokens"]["N"]) > 0


def test_record_failed_chat_messages(standin_llm: OpenAIStandin) -> None:
    """Seed 003 "Record failed chat messages" (API-2): user + error assistant stored, usage 0, 502."""
    # Given a provider that fails with HTTP 500
    standin_llm.set_mode("error500")
    # When the user posts a message
    answer = api.post("will this fail?")
    # Then the API answers 502 with the same body shape as success
    assert answer.status == 502
    assert set(answer.body) == {"conversation_id", "user_message", "assistant_message"}
    assistant = answer.body["assistant_message"]
    assert set(assistant) == ASSISTANT_FIELDS | {"error"}
    assert assistant["status"] == "error"
    assert assistant["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    # And the record holds the error message and the provider's full response
    assert assistant["error"]["message"]
    response = assistant["error"]["provider_response"]
    assert "The server had an error while processing your request." in str(response)
    # And both messages are stored
    stored = api.detail(answer.body["conversation_id"]).body["messages"]
    assert [(m["role"], m["status"]) for m in stored] == [("user", "ok"), ("assistant", "error")]
    assert stored[1]["error"] == assistant["error"]


def test_query_conversation_list_on_open(chat_service: None) -> None:
    """Seed 003 "Query conversation list on open": not deleted, newest updated_at first."""
    # Given three conversations, the oldest one then written to again, and one deleted
    first = api.post("first").body["conversation_id"]
    second = api.post("second").body["conversation_id"]
    third = api.post("third").body["conversation_id"]
    api.post("first again", first)
    assert api.delete(second).status == 204
    # When the client opens the chat window and asks for the list
    answer = api.listing()
    # Then only live conversations come back, most recently updated first
    assert answer.status == 200
    ids = [item["conversation_id"] for item in answer.body["items"]]
    assert ids == [first, third]
    stamps = [item["updated_at"] for item in answer.body["items"]]
    assert stamps == sorted(stamps, reverse=True)
    assert answer.body["next_cursor"] is None


def test_query_conversation_detail(chat_service: None) -> None:
    """Seed 003 "Query conversation detail": the conversation's messages in chronological order."""
    # Given a conversation of three turns
    conversation_id = api.post("one").body["conversation_id"]
    api.post("two", conversation_id)
    api.post("three", conversation_id)
    # When the client asks for its detail
    answer = api.detail(conversation_id)
    # Then the messages come oldest first, alternating user and assistant
    assert answer.status == 200
    messages = answer.body["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["one", "two", "three"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3
    assert [m["created_at"] for m in messages] == sorted(m["created_at"] for m in messages)


def test_soft_delete_conversation(chat_service: None) -> None:
    """Seed 003 "Soft delete conversation": marked deleted, absent from list and detail, data kept."""
    # Given a conversation
    conversation_id = api.post("to be deleted").body["conversation_id"]
    # When the client deletes it
    answer = api.delete(conversation_id)
    # Then it is gone from the list and from the detail
    assert answer.status == 204
    assert api.listing().body["items"] == []
    assert api.detail(conversation_id).status == 404
    # And it is only marked: deleted_at and a TTL set, listing-index keys removed, messages kept
    meta = next(i for i in _table_items() if i["sk"]["S"] == "~META")
    assert "deleted_at" in meta
    assert "expires_at" in meta
    assert "gsi1pk" not in meta
    assert "gsi1sk" not in meta
    assert sum(1 for i in _table_items() if i["sk"]["S"].startswith("MSG#")) == 2


def test_reject_oversized_user_message(standin_llm: OpenAIStandin, dynamo_calls: Counter[str]) -> None:
    """Seed 003 "Reject oversized user message" (API-3): 5001 characters -> 422, no model call, no write."""
    # Given a message of 5001 characters
    content = "字" * 5001
    # When the user sends it, as a first message and to an existing conversation
    first = api.post(content)
    # Then the request is refused with a clear error
    assert first.status == 422
    assert first.error_code == "message_too_long"
    assert "5001" in first.body["error"]["message"]
    assert "5000" in first.body["error"]["message"]
    # And the model was not called and nothing at all reached the database
    assert standin_llm.completion_requests == []
    assert sum(dynamo_calls.values()) == 0
    assert _table_items() == []
    # And the same holds on an existing conversation
    conversation_id = api.post("short").body["conversation_id"]
    before = _table_items()
    calls_before = standin_llm.completion_requests
    refused = api.post(content, conversation_id)
    assert refused.status == 422
    assert refused.error_code == "message_too_long"
    assert standin_llm.completion_requests == calls_before
    assert _table_items() == before
    # And exactly 5000 characters is accepted
    assert api.post("字" * 5000, conversation_id).status == 201


def _expected_window(history: list[dict[str, Any]], current: str) -> list[dict[str, str]]:
    """WIN-2 restated as the seed says it: newest first, <=10 messages, <=5000 chars incl. current."""
    kept: list[dict[str, str]] = []
    chars, count = len(current), 1
    for message in reversed(history):
        if count + 1 > 10 or chars + len(message["content"]) > 5000:
            break
        kept.append({"role": message["role"], "content": message["content"]})
        chars += len(message["content"])
        count += 1
    return [*reversed(kept), {"role": "user", "content": current}]


def test_build_window_with_limits(standin_llm: OpenAIStandin, dynamo_calls: Counter[str]) -> None:
    """Seed 003 "Build window with limits" (WIN-2, API-4): one Query, <=10 messages, <=5000 chars."""
    # Given a conversation of 8 turns (16 messages), some long enough for the character cap to bite
    conversation_id = api.post("turn 0").body["conversation_id"]
    for turn in range(1, 8):
        api.post(f"turn {turn} " + ("x" * 1800 if turn in (5, 6) else ""), conversation_id)
    history = api.detail(conversation_id).body["messages"]
    assert len(history) == 16
    dynamo_calls.clear()
    # When the user sends a new message
    current = "y" * 1200
    answer = api.post(current, conversation_id)
    # Then the history was read with a single query
    assert answer.status == 201
    assert dynamo_calls["Query"] == 1
    # And the model got the newest messages that fit 10 messages and 5000 characters, current included,
    # dropping the older ones, sent oldest first
    sent = standin_llm.completion_requests[-1].json["messages"]
    assert sent == _expected_window(history, current)
    assert sent[-1] == {"role": "user", "content": current}
    assert sum(len(m["content"]) for m in sent) <= 5000
    # And here it is the character cap that stopped the walk, well before 10 messages
    assert len(sent) < 10
    older = history[len(history) - (len(sent) - 1) - 1]
    assert sum(len(m["content"]) for m in sent) + len(older["content"]) > 5000


def test_build_window_with_limits_message_cap(standin_llm: OpenAIStandin) -> None:
    """Seed 003 "Build window with limits" (WIN-2): short messages are capped at 10 including current."""
    # Given a conversation of 6 short turns (12 messages)
    conversation_id = api.post("m0").body["conversation_id"]
    for turn in range(1, 6):
        api.post(f"m{turn}", conversation_id)
    history = api.detail(conversation_id).body["messages"]
    # When the user sends a new message
    api.post("now", conversation_id)
    # Then exactly the 9 newest history messages and the current one were sent, oldest first
    sent = standin_llm.completion_requests[-1].json["messages"]
    assert len(sent) == 10
    assert sent == _expected_window(history, "now")
    assert sent[0]["content"] == history[-9]["content"]
