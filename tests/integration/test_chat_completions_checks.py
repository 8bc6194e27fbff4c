"""API-13, API-5: a Chat Completions request that a post would refuse writes nothing of its own first: no
conversation made for its system prompt, no system prompt changed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import events
from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _completion(body: dict[str, Any]) -> api.Answer:
    event = events.http_event("POST", "/v1/chat/completions", route="/v1/chat/completions", body=body)
    return api.invoke("chat_completions", event)


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "user", "content": "x" * 5001},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://example.com/x.png"}}]},
    ],
)
def test_a_refused_first_turn_leaves_no_conversation(standin_llm: OpenAIStandin, bad: dict[str, Any]) -> None:
    answer = _completion({"model": "m", "messages": [{"role": "system", "content": "Be brief."}, bad]})
    assert answer.status == 400, answer.body
    assert set(answer.body["error"]) == {"message", "type", "param", "code"}
    assert api.listing().body["items"] == []
    assert standin_llm.requests == []


def test_a_refused_turn_does_not_change_the_system_prompt(standin_llm: OpenAIStandin) -> None:
    first = _completion(
        {
            "model": "m",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        }
    )
    assert first.status == 200, first.body
    conversation_id = first.body["conversation"]
    refused = _completion(
        {
            "model": "m",
            "conversation": conversation_id,
            "messages": [
                {"role": "system", "content": "Be verbose."},
                {"role": "user", "content": "x" * 5001},
            ],
        }
    )
    assert refused.status == 400
    assert refused.body["error"]["code"] == "message_too_long"
    assert api.detail(conversation_id).body["system_prompt"] == "Be brief."
    # And an accepted turn with a new system prompt does change it, once
    changed = _completion(
        {
            "model": "m",
            "conversation": conversation_id,
            "messages": [{"role": "system", "content": "Be verbose."}, {"role": "user", "content": "again"}],
        }
    )
    assert changed.status == 200, changed.body
    assert api.detail(conversation_id).body["system_prompt"] == "Be verbose."
    assert standin_llm.requests[-1].json["messages"][0] == {"role": "system", "content": "Be verbose."}
