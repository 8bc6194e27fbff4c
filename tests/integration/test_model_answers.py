"""API-10: nothing the model answers is lost on the post path: refusals, replies cut at their limit, tool
calls, citations, audio transcripts and the usage breakdown are stored and returned, and marked as such.
The model is a real OpenAI-compatible server on 127.0.0.1 answering recorded provider bodies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "provider_responses"


def _answer_with(standin: OpenAIStandin, name: str) -> dict[str, Any]:
    body = dict(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))
    standin.configure(mode="canned", canned=body)
    return body


def test_a_refusal_is_stored_as_a_refusal_and_the_model_sees_it_next_turn(standin_llm: OpenAIStandin) -> None:
    # Given a model that refuses
    _answer_with(standin_llm, "refusal")
    # When the user posts
    first = api.post("Tell me how to pick a lock.")
    # Then the reply says it is a refusal (content null, refusal text), in the answer and when read back
    assert first.status == 201, first.body
    reply = first.body["assistant_message"]
    assert reply["content"] is None
    assert reply["refusal"] == "I'm sorry, I can't help with that request."
    assert reply["finish_reason"] == "stop"
    conversation_id = first.body["conversation_id"]
    stored = api.detail(conversation_id).body["messages"][-1]
    assert stored == reply
    # And the next turn sends the model what it said
    standin_llm.configure(mode="ok")
    assert api.post("Fine, what about a riddle?", conversation_id=conversation_id).status == 201
    sent = standin_llm.requests[-1].json["messages"]
    assert {"role": "assistant", "content": "I'm sorry, I can't help with that request."} in sent


def test_a_reply_cut_at_its_length_limit_is_marked_truncated(standin_llm: OpenAIStandin) -> None:
    # Given a reasoning model that used its whole budget before writing (content null, length)
    _answer_with(standin_llm, "length_null_content")
    # When the user posts
    answer = api.post("Prove Fermat's last theorem.")
    # Then the reply is stored, empty, marked truncated, with the reasoning and cached tokens
    assert answer.status == 201, answer.body
    reply = answer.body["assistant_message"]
    assert reply["content"] == ""
    assert reply["status"] == "ok"
    assert reply["finish_reason"] == "length"
    assert reply["truncated"] is True
    assert reply["usage"] == {"prompt_tokens": 1204, "completion_tokens": 400, "total_tokens": 1604}
    assert reply["usage_details"]["completion_tokens_details"]["reasoning_tokens"] == 400
    assert reply["usage_details"]["prompt_tokens_details"]["cached_tokens"] == 1024


def test_citations_audio_transcript_and_function_call_are_returned(standin_llm: OpenAIStandin) -> None:
    # Given an answer with a citation, audio and a legacy function_call
    body = _answer_with(standin_llm, "annotations_audio_function_call")
    # When the user posts and reads the conversation back
    answer = api.post("Weather in Paris?")
    assert answer.status == 201, answer.body
    stored = api.detail(answer.body["conversation_id"]).body["messages"][-1]
    # Then all of it is there (the audio bytes are not: the transcript and the id are)
    message = body["choices"][0]["message"]
    assert stored["content"] == message["content"]
    assert stored["annotations"] == message["annotations"]
    assert stored["function_call"] == message["function_call"]
    audio = {"id": "audio_abc123", "transcript": "Paris is sunny today.", "expires_at": 1732003603}
    assert stored["audio"] == audio
    assert "truncated" not in stored
    assert "refusal" not in stored
