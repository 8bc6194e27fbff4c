"""API-24: a window policy with a token or character budget (no `max_messages`) reads what its budget
can use, not 200 messages; the window it builds is the one a read of 200 would give."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import botocore.client
import pytest

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

LONG_QUESTION = " ".join(f"word{n} about the garden and the trip" for n in range(12))


@dataclass
class Reads:
    """Items each DynamoDB Query returned, in call order."""

    queries: list[int] = field(default_factory=list)

    @property
    def items(self) -> int:
        return sum(self.queries)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    seen = Reads()
    original = botocore.client.BaseClient._make_api_call

    def recording(self: Any, operation_name: str, api_params: Any) -> Any:
        answer = original(self, operation_name, api_params)
        if self.meta.service_model.service_name == "dynamodb" and operation_name == "Query":
            seen.queries.append(len(answer.get("Items", [])))
        return answer

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
    return seen


def _conversation(turns: int, question: str) -> str:
    conversation_id = api.post(f"{question} 0").body["conversation_id"]
    for turn in range(1, turns):
        assert api.post(f"{question} {turn}", conversation_id).status == 201
    return str(conversation_id)


def _window(conversation_id: str, policy: dict[str, Any], reads: Reads) -> tuple[list[str], Reads]:
    reads.queries.clear()
    answer = api.window(conversation_id, "and then?", window_policy=policy)
    assert answer.status == 200, answer.body
    taken = Reads(list(reads.queries))
    return [m["content"] for m in answer.body["messages"]], taken


def test_a_token_budget_reads_the_messages_it_can_use_and_sends_what_a_full_read_would(
    chat_service: None, reads: Reads
) -> None:
    """API-24: a 600-token window over 120 messages of about 60 tokens reads about 40 of them in one
    Query; the same budget with `max_messages: 200` reads all 120 and sends the same window."""
    # Given a conversation of 120 messages whose questions are about 90 tokens
    conversation_id = _conversation(60, LONG_QUESTION)
    # When a 600-token window is built, and the same with max_messages 200
    sized, by_budget = _window(conversation_id, {"max_tokens": 600}, reads)
    full, by_count = _window(conversation_id, {"max_tokens": 600, "max_messages": 200}, reads)
    # Then both send the same messages
    assert sized == full
    assert len(sized) > 3
    # And the budget's read was one Query of at most 40 items, the other read everything
    assert len(by_budget.queries) == 1
    assert by_budget.items <= 40
    assert by_count.items >= 120


def test_a_conversation_of_short_messages_reads_once_more_and_loses_nothing(
    standin_llm: OpenAIStandin, reads: Reads
) -> None:
    """API-24: when the first read holds less than the budget (messages shorter than 20 tokens), one
    more Query reads the older messages; the window is the one a full read gives."""
    # Given a conversation of 120 short messages (under 10 tokens each)
    standin_llm.configure(reply="ok")
    conversation_id = _conversation(60, "hi")
    # When a 1,000-token window is built, and the same with max_messages 200
    sized, by_budget = _window(conversation_id, {"max_tokens": 1000}, reads)
    full, _ = _window(conversation_id, {"max_tokens": 1000, "max_messages": 200}, reads)
    # Then the budget took two Queries and sent the same window as the full read
    assert len(by_budget.queries) == 2
    assert sized == full
    assert len(sized) > 63


def test_a_character_budget_is_read_by_its_size_too(chat_service: None, reads: Reads) -> None:
    """API-24: `max_chars` alone reads what its characters hold (4 characters a token)."""
    # Given a conversation of 120 messages whose questions are about 450 characters
    conversation_id = _conversation(60, LONG_QUESTION)
    # When a 2,400-character window is built, and the same with max_messages 200
    sized, by_budget = _window(conversation_id, {"max_chars": 2400}, reads)
    full, _ = _window(conversation_id, {"max_chars": 2400, "max_messages": 200}, reads)
    # Then one Query of at most 40 items built the same window
    assert sized == full
    assert len(by_budget.queries) == 1
    assert by_budget.items <= 40


def test_a_branched_conversation_walks_what_the_budget_can_use(chat_service: None, reads: Reads) -> None:
    """API-24 + API-18: on a branched conversation the path is walked for what the budget can use: the
    600-token window after an edit is still one Query, and the same window a walk of 200 gives."""
    # Given a conversation of 120 long messages whose last question was edited (a branch point)
    conversation_id = _conversation(60, LONG_QUESTION)
    path = api.detail(conversation_id).body["messages"]
    assert api.edit(conversation_id, path[-2]["message_id"], f"{LONG_QUESTION} edited").status == 201
    # When a 600-token window is built, and the same with max_messages 200
    sized, by_budget = _window(conversation_id, {"max_tokens": 600}, reads)
    full, _ = _window(conversation_id, {"max_tokens": 600, "max_messages": 200}, reads)
    # Then one Query built the same window, from the edited branch
    assert sized == full
    assert f"{LONG_QUESTION} edited" in sized
    assert len(by_budget.queries) == 1
    assert by_budget.items <= 40
