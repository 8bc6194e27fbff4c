"""POST /conversations/{id}/window and per-conversation window policies (WIN-2 default, WIN-3 own policy)."""

from __future__ import annotations

import pytest

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def test_window_shows_what_a_post_would_send_without_calling_the_model(standin_llm: OpenAIStandin) -> None:
    """API-8 window route: the same messages a post would send; the model is not called, nothing written."""
    # Given a conversation with a system prompt and two turns
    conversation_id = api.create(system_prompt="You are terse.", title="demo").body["conversation_id"]
    api.post("first", conversation_id)
    api.post("second", conversation_id)
    calls = len(standin_llm.completion_requests)
    # When the window for a prospective message is built
    answer = api.window(conversation_id, "third?")
    # Then it lists system, history and the prospective message, with stats
    assert answer.status == 200
    messages = answer.body["messages"]
    assert messages[0] == {"role": "system", "content": "You are terse."}
    assert messages[-1] == {"role": "user", "content": "third?"}
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    stats = answer.body["stats"]
    assert stats["policy"] == "seed003"
    assert stats["kept_history"] == 4
    assert stats["dropped_count"] == 0
    # And the model was not called and nothing was stored
    assert len(standin_llm.completion_requests) == calls
    assert len(api.detail(conversation_id).body["messages"]) == 4
    # And a post of that message sends exactly that window
    api.post("third?", conversation_id)
    assert standin_llm.completion_requests[-1].json["messages"] == messages


def test_conversation_policy_set_at_creation_governs_posts(standin_llm: OpenAIStandin) -> None:
    """WIN-3: a conversation created with its own window policy uses it on every post."""
    # Given a conversation whose policy keeps at most 3 messages (current included)
    created = api.create(window_policy={"max_messages": 3})
    assert created.status == 201
    assert created.body["window_policy"] == {"max_messages": 3, "method": "exact"}
    conversation_id = created.body["conversation_id"]
    for n in range(3):
        api.post(f"q{n}", conversation_id)
    # When the user posts again
    api.post("q3", conversation_id)
    # Then only the two newest history messages and the current one were sent
    sent = standin_llm.completion_requests[-1].json["messages"]
    assert len(sent) == 3
    assert sent[-1] == {"role": "user", "content": "q3"}
    assert sent[0] == {"role": "user", "content": "q2"}
    assert sent[1]["role"] == "assistant"


def test_window_policy_override_previews_another_policy(chat_service: None) -> None:
    """WIN-3: the window route previews another policy (a token budget); the conversation keeps its own."""
    # Given a conversation of five turns under the default policy
    conversation_id = api.post("start").body["conversation_id"]
    for n in range(4):
        api.post(f"turn {n} " + "word " * 40, conversation_id)
    # When a window is built under a small token budget
    answer = api.window(conversation_id, "next", window_policy={"max_tokens": 200})
    # Then it fits the budget, keeps the prospective message and reports what it dropped
    assert answer.status == 200
    stats = answer.body["stats"]
    assert stats["token_budget"] == 200
    assert stats["tokens_used"] <= 200
    assert stats["dropped_count"] > 0
    assert answer.body["messages"][-1] == {"role": "user", "content": "next"}
    # And the conversation keeps its default policy
    assert api.detail(conversation_id).body["window_policy"] is None
    assert api.window(conversation_id, "next").body["stats"]["policy"] == "seed003"


def test_long_custom_window_reaches_past_ten_messages(standin_llm: OpenAIStandin) -> None:
    """WIN-3: a policy of 30 messages really sends more than the default 10 (a second Query reaches back)."""
    # Given a conversation with a 30-message policy and 12 turns
    conversation_id = api.create(window_policy={"max_messages": 30}).body["conversation_id"]
    for n in range(12):
        api.post(f"n{n}", conversation_id)
    # When the user posts again
    api.post("n12", conversation_id)
    # Then all 24 earlier messages and the current one were sent
    sent = standin_llm.completion_requests[-1].json["messages"]
    assert len(sent) == 25
    assert sent[0] == {"role": "user", "content": "n0"}
