"""API-6: an Idempotency-Key makes POST /messages safe to retry (Powertools Idempotency on the same table)."""

from __future__ import annotations

import threading
import time

import pytest
from chat_core.chat import turns
from chat_core.errors import ConversationBusy
from chat_core.store import conversations as store

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def test_same_key_replays_the_first_result_and_stores_once(standin_llm: OpenAIStandin) -> None:
    """API-6: a retried post with the same key returns the first answer; nothing is stored twice."""
    # Given a first post with an Idempotency-Key
    first = api.post("pay once", idempotency_key="key-1")
    assert first.status == 201
    conversation_id = first.body["conversation_id"]
    follow = api.post("and again", conversation_id, idempotency_key="key-2")
    # When the client retries both with the same keys and bodies
    replay_first = api.post("pay once", idempotency_key="key-1")
    replay_follow = api.post("and again", conversation_id, idempotency_key="key-2")
    # Then each retry gets exactly the first answer
    assert (replay_first.status, replay_first.body) == (first.status, first.body)
    assert (replay_follow.status, replay_follow.body) == (follow.status, follow.body)
    # And the model was asked once per original post, and each message stored once
    assert len(standin_llm.completion_requests) == 2
    assert len(api.listing().body["items"]) == 1
    assert len(api.detail(conversation_id).body["messages"]) == 4


def test_failed_turn_is_replayed_as_failed(standin_llm: OpenAIStandin) -> None:
    """API-6 + API-2: a 502 turn is a stored result too; its retry replays the 502, no second user message."""
    # Given a post that failed at the provider
    standin_llm.set_mode("error500")
    first = api.post("flaky", idempotency_key="k-502")
    assert first.status == 502
    # When the client retries with the same key after the provider recovered
    standin_llm.set_mode("ok")
    retry = api.post("flaky", idempotency_key="k-502")
    # Then it gets the same 502 body, and the conversation still holds one turn
    assert (retry.status, retry.body) == (502, first.body)
    assert len(api.detail(first.body["conversation_id"]).body["messages"]) == 2


def test_same_key_with_another_body_is_refused(standin_llm: OpenAIStandin) -> None:
    """API-6: reusing a key for a different request is a clear 422, never a silent replay."""
    # Given a post with a key
    first = api.post("original", idempotency_key="k-reuse")
    assert first.status == 201
    # When the same key comes with different content
    other = api.post("something else", idempotency_key="k-reuse")
    # Then it is refused, and nothing new is stored or sent to the model
    assert other.status == 422
    assert other.error_code == "idempotency_key_reused"
    assert len(standin_llm.completion_requests) == 1
    assert len(api.listing().body["items"]) == 1


def test_key_is_scoped_to_the_caller(standin_llm: OpenAIStandin) -> None:
    """DES-1: the idempotency key includes the caller's identity; bob's key never replays alice's turn."""
    # Given alice posted with a key
    alice = api.post("alice's words", user="alice", idempotency_key="shared-key")
    # When bob posts with the same key and the same body
    bob = api.post("alice's words", user="bob", idempotency_key="shared-key")
    # Then bob gets his own new conversation, not alice's answer
    assert bob.status == 201
    assert bob.body["conversation_id"] != alice.body["conversation_id"]
    assert api.detail(alice.body["conversation_id"], user="bob").status == 404
    assert len(standin_llm.completion_requests) == 2


def test_refused_request_does_not_burn_the_key(standin_llm: OpenAIStandin) -> None:
    """API-6: a request refused before any write (too long) leaves the key usable for the real request."""
    # Given a post refused for length, with a key
    refused = api.post("z" * 5001, idempotency_key="k-later")
    assert refused.status == 422
    # When the client sends a valid body with the same key
    accepted = api.post("short now", idempotency_key="k-later")
    # Then it is processed normally
    assert accepted.status == 201
    assert accepted.body["user_message"]["content"] == "short now"


def test_without_key_each_post_is_new(standin_llm: OpenAIStandin) -> None:
    """API-6 is opt-in: without the header, two identical posts are two turns."""
    # Given a conversation
    conversation_id = api.post("hi").body["conversation_id"]
    # When the same body is posted twice without a key
    api.post("again", conversation_id)
    api.post("again", conversation_id)
    # Then both are stored
    assert len(api.detail(conversation_id).body["messages"]) == 6


def test_a_retry_after_a_busy_answer_runs_the_post(
    standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """API-6 / REL-5: a post refused 409 conversation_busy leaves no record: its retry with the same key
    and body runs."""
    # Given a conversation, and a post with an Idempotency-Key that cannot get its turn
    conversation_id = api.post("opening").body["conversation_id"]

    def taken(*args: object, **kwargs: object) -> object:
        raise store.SequenceConflict("taken")

    monkeypatch.setattr(store, "append_messages", taken)

    def busy_too(*args: object, **kwargs: object) -> object:
        raise ConversationBusy("busy")

    monkeypatch.setattr(turns, "_reserve_turn", busy_too)
    busy = api.post("retry me", conversation_id, idempotency_key="k-busy")
    assert busy.status == 409, busy.body
    # When the client retries with the same key and body once the conversation is free
    monkeypatch.undo()
    retry = api.post("retry me", conversation_id, idempotency_key="k-busy")
    # Then the post runs and is stored once
    assert retry.status == 201, retry.body
    assert [m["content"] for m in api.detail(conversation_id).body["messages"] if m["role"] == "user"] == [
        "opening",
        "retry me",
    ]


def test_the_same_post_sent_twice_at_once_is_in_progress_not_a_different_body(
    standin_llm: OpenAIStandin, serialized_moto: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """API-6: the same key and body while the first is still running: 409 request_in_progress, never 422."""
    # Given a post with an Idempotency-Key that is still waiting for a model that answers only when
    # released (a timed wait would race the duplicate on a busy machine)
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "20")
    renew()
    conversation_id = api.post("opening").body["conversation_id"]
    standin_llm.configure(mode="slow", slow_seconds=20.0)
    answers: list[api.Answer] = []
    first = threading.Thread(
        target=lambda: answers.append(api.post("twice", conversation_id, idempotency_key="k-twice"))
    )
    first.start()
    deadline = time.monotonic() + 30
    while not standin_llm.completion_requests[1:] and time.monotonic() < deadline:
        time.sleep(0.01)  # polling for the model to receive the first post, with a deadline
    # When the client sends it again at that moment
    again = api.post("twice", conversation_id, idempotency_key="k-twice")
    standin_llm.release()
    first.join(30)
    # Then the duplicate is told to wait, and the first lands
    assert again.status == 409, again.body
    assert again.body["error"]["code"] == "request_in_progress"
    assert answers[0].status == 201
