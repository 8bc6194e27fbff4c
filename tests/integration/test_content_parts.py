"""API-15: a user message's content may be a list of parts (text, image_url, input_audio, file); the parts
reach the model as sent, are stored with the message and counted, within documented size limits. The
model is a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from chat_core.engine import tokens

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}}
TEXT = {"type": "text", "text": "What is in this picture?"}


def _post(content: Any, conversation_id: str | None = None) -> api.Answer:
    body: dict[str, Any] = {"content": content}
    if conversation_id:
        body["conversation_id"] = conversation_id
    return api.invoke("post_message", api.events.post_message(body))


def test_parts_reach_the_model_and_are_stored_with_the_message(standin_llm: OpenAIStandin) -> None:
    """API-15: the model gets the parts as sent, this turn and the next; the message keeps them."""
    # When a user posts text and an image
    answer = _post([TEXT, IMAGE])
    # Then the model received both parts as the user's content
    assert answer.status == 201, answer.body
    assert standin_llm.requests[-1].json["messages"][-1] == {"role": "user", "content": [TEXT, IMAGE]}
    # And the stored message has the text as content and the parts beside it
    user = answer.body["user_message"]
    assert user["content"] == "What is in this picture?"
    assert user["content_parts"] == [TEXT, IMAGE]
    conversation_id = answer.body["conversation_id"]
    assert api.detail(conversation_id).body["messages"][0] == user
    # And it was counted once: its text in chat format plus a flat cost for the image
    text_only = tokens.count_message_tokens({"role": "user", "content": [TEXT]}, model="gpt-4o-mini")
    usage = api.detail(conversation_id).body["local_usage"]
    assert usage["prompt_tokens"] >= text_only + tokens.NON_TEXT_PART_TOKENS
    # And the next turn sends the image again as history
    assert _post("and its colour?", conversation_id).status == 201
    sent = standin_llm.requests[-1].json["messages"]
    assert sent[0] == {"role": "user", "content": [TEXT, IMAGE]}


def test_audio_file_and_small_inline_images_pass_through(standin_llm: OpenAIStandin) -> None:
    """API-15: input_audio, file and a data: image within the size cap; a part without text is fine."""
    pixel = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n" + b"\x00" * 64).decode()
    parts = [
        {"type": "image_url", "image_url": {"url": pixel}},
        {
            "type": "input_audio",
            "input_audio": {"data": base64.b64encode(b"RIFF....WAVE").decode(), "format": "wav"},
        },
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    answer = _post(parts)
    assert answer.status == 201, answer.body
    assert answer.body["user_message"]["content"] == ""
    assert answer.body["user_message"]["content_parts"] == parts
    assert standin_llm.requests[-1].json["messages"][-1]["content"] == parts


@pytest.mark.parametrize(
    ("content", "status", "code"),
    [
        ([], 400, "invalid_input"),
        ([{"type": "image_url", "image_url": {"url": "ftp://example.com/x.png"}}], 400, "invalid_input"),
        ([{"type": "text", "text": "x" * 5001}], 422, "message_too_long"),
        (
            [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 300_000}}],
            413,
            "payload_too_large",
        ),
        ([{"type": "video", "video": {}}], 422, "validation_error"),
        ([{"type": "file", "file": {"filename": "a.pdf"}}], 422, "validation_error"),
    ],
)
def test_parts_out_of_bounds_are_refused_before_anything_is_written(
    standin_llm: OpenAIStandin, content: Any, status: int, code: str
) -> None:
    """API-15, API-5: bad or oversized parts are refused naming `content`; no conversation is created."""
    answer = _post(content)
    assert (answer.status, answer.error_code) == (status, code), answer.body
    assert "content" in str(answer.body)
    assert api.listing().body["items"] == []
    assert standin_llm.requests == []


def test_the_window_route_shows_the_parts_it_would_send(standin_llm: OpenAIStandin) -> None:
    """API-15: the window a post of parts would send carries them (and counts them)."""
    conversation_id = _post("hello").body["conversation_id"]
    window = api.window(conversation_id, [TEXT, IMAGE]).body  # type: ignore[arg-type]
    assert window["messages"][-1] == {"role": "user", "content": [TEXT, IMAGE]}
