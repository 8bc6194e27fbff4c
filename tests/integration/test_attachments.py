"""API-17: content parts too large for their message item go to the blob bucket (S3, moto here); the item
keeps a reference, the model always receives the part byte for byte as it was posted, the detail route
shows a presigned URL, a resent history matches by digest, and the purge deletes the objects with the
conversation. The model is a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from chat_core.chat import retention
from chat_core.store.blobs import conversation_prefix
from chat_core.store.items import Message

from tests.support import events
from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import drop, renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

BUCKET = "chat-history-blobs-it"
PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(300_000)
IMAGE_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
IMAGE = {"type": "image_url", "image_url": {"url": IMAGE_URL, "detail": "high"}}
TEXT = {"type": "text", "text": "What is in this picture?"}


@pytest.fixture
def bucket(standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The service with BLOB_BUCKET set to an empty bucket (inside the tests' moto)."""
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    monkeypatch.setenv("BLOB_BUCKET", BUCKET)
    renew()
    yield s3
    drop()


def _keys(s3: Any, prefix: str = "") -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents") or []]


def _post(content: Any, conversation_id: str | None = None, user: str = "alice") -> api.Answer:
    body: dict[str, Any] = {"content": content}
    if conversation_id:
        body["conversation_id"] = conversation_id
    return api.invoke("post_message", events.post_message(body, user=user))


def _stored_parts(conversation_id: str, seq: int = 1) -> Any:

    return Message.get(*Message.key("alice", conversation_id, seq)).parts


def test_a_large_image_is_kept_in_s3_and_reaches_the_model_as_posted(
    bucket: Any, standin_llm: OpenAIStandin
) -> None:
    """API-17: a 400 KB image (too large for the 256 KiB inline limit) is accepted; the model gets it byte
    for byte this turn and the next; the item keeps a reference; the object is the image itself."""
    # When a user posts a question with a 300 KB PNG as a data: URL
    answer = _post([TEXT, IMAGE])
    # Then it is stored and the model received exactly what was posted
    assert answer.status == 201, answer.body
    assert standin_llm.requests[-1].json["messages"][-1] == {"role": "user", "content": [TEXT, IMAGE]}
    conversation_id = answer.body["conversation_id"]
    # And the message item keeps a reference, not the bytes
    stored = _stored_parts(conversation_id)
    assert stored[0] == TEXT
    assert "url" not in stored[1]["image_url"]
    assert stored[1]["image_url"]["detail"] == "high"
    assert stored[1]["blob"]["sha256"] == hashlib.sha256(IMAGE_URL.encode()).hexdigest()
    assert len(str(stored)) < 1000
    # And the bucket holds the PNG itself, typed, under the conversation's prefix
    (key,) = _keys(bucket)
    assert key.startswith(conversation_prefix("alice", conversation_id))
    obj = bucket.get_object(Bucket=BUCKET, Key=key)
    assert obj["Body"].read() == PNG
    assert obj["ContentType"] == "image/png"
    # And the next turn sends the image again, as posted, from S3
    assert _post("and its colour?", conversation_id).status == 201
    assert standin_llm.requests[-1].json["messages"][0] == {"role": "user", "content": [TEXT, IMAGE]}


def test_the_api_shows_a_reference_with_a_presigned_url(bucket: Any, standin_llm: OpenAIStandin) -> None:
    """API-17: the post's answer and the detail route show the part without its bytes: size, digest, type
    and a time-limited URL of the object."""
    answer = _post([TEXT, IMAGE])
    shown = answer.body["user_message"]["content_parts"][1]
    assert shown["type"] == "image_url"
    assert shown["image_url"] == {"detail": "high"}
    blob = shown["blob"]
    assert (blob["bytes"], blob["media_type"]) == (len(PNG), "image/png")
    assert blob["url"].startswith("https://")
    assert "X-Amz-Signature=" in blob["url"]
    assert blob["expires_in"] == 900
    detail = api.detail(answer.body["conversation_id"]).body
    assert detail["messages"][0]["content_parts"][1]["blob"]["sha256"] == blob["sha256"]
    assert IMAGE_URL[:1000] not in str(detail)


def test_audio_and_files_round_trip_exactly_even_when_not_canonical_base64(
    bucket: Any, standin_llm: OpenAIStandin
) -> None:
    """API-17: base64 with line breaks (kept as text) and a PDF as file_data come back byte for byte."""
    wrapped = base64.encodebytes(os.urandom(40_000)).decode()  # lines of 76 characters
    audio = {"type": "input_audio", "input_audio": {"data": wrapped, "format": "wav"}}
    pdf = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.7" + os.urandom(30_000)).decode()
    document = {"type": "file", "file": {"filename": "report.pdf", "file_data": pdf}}
    conversation_id = _post([audio, document]).body["conversation_id"]
    assert len(_keys(bucket)) == 2
    assert _post("summarise both", conversation_id).status == 201
    assert standin_llm.requests[-1].json["messages"][0]["content"] == [audio, document]


def test_small_parts_stay_inline(bucket: Any, standin_llm: OpenAIStandin) -> None:
    """API-17: parts under BLOB_INLINE_BYTES (16 KiB) stay in the item; nothing is written to S3."""
    pixel = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "iVBORw0KGgo=" * 10}}
    answer = _post([TEXT, pixel])
    assert answer.status == 201
    assert answer.body["user_message"]["content_parts"] == [TEXT, pixel]
    assert _keys(bucket) == []


def test_a_message_over_the_attachment_limit_is_refused_before_anything_is_written(
    bucket: Any, standin_llm: OpenAIStandin
) -> None:
    """API-17: one message's parts may take 5 MiB; more is 413 naming `content`, with nothing stored."""
    huge = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * (5 * 1024 * 1024)}}
    answer = _post([huge])
    assert (answer.status, answer.error_code) == (413, "payload_too_large"), answer.body
    assert "content" in str(answer.body)
    assert _keys(bucket) == []
    assert api.listing().body["items"] == []
    assert standin_llm.requests == []


def test_a_stateless_client_resending_the_image_stores_it_once(
    bucket: Any, standin_llm: OpenAIStandin
) -> None:
    """API-13 with API-17: a client resending its whole history, image included, is matched by digest."""
    first_user = {"role": "user", "content": [TEXT, IMAGE]}
    first = api.invoke(
        "chat_completions",
        events.http_event(
            "POST",
            "/v1/chat/completions",
            route="/v1/chat/completions",
            body={"model": "m", "messages": [first_user]},
        ),
    )
    assert first.status == 200, first.body
    reply = first.body["choices"][0]["message"]
    second = api.invoke(
        "chat_completions",
        events.http_event(
            "POST",
            "/v1/chat/completions",
            route="/v1/chat/completions",
            body={
                "model": "m",
                "conversation": first.body["conversation"],
                "messages": [
                    first_user,
                    {"role": "assistant", "content": reply["content"]},
                    {"role": "user", "content": "and?"},
                ],
            },
        ),
    )
    assert second.status == 200, second.body
    messages = api.detail(first.body["conversation"]).body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert len(_keys(bucket)) == 1


def test_the_purge_deletes_the_conversations_objects_only(bucket: Any, standin_llm: OpenAIStandin) -> None:
    """API-17, AGT-1: a purged conversation's objects go with its items; another conversation's stay."""
    gone = _post([TEXT, IMAGE]).body["conversation_id"]
    kept = _post([TEXT, IMAGE]).body["conversation_id"]
    other_user = _post([TEXT, IMAGE], user="bob").body["conversation_id"]
    assert len(_keys(bucket)) == 3
    result = retention.purge_partition("alice", gone)
    assert result.attachments == 1
    assert _keys(bucket, conversation_prefix("alice", gone)) == []
    assert len(_keys(bucket, conversation_prefix("alice", kept))) == 1
    assert len(_keys(bucket, conversation_prefix("bob", other_user))) == 1
    # And purging again is harmless
    assert retention.purge_partition("alice", gone).attachments == 0


def test_a_missing_object_fails_the_turn_without_asking_the_model(
    bucket: Any, standin_llm: OpenAIStandin
) -> None:
    """API-17, API-2: when a stored part cannot be read back, the model is not sent a history without it:
    the turn is an error saying why, and the user's message is kept."""
    conversation_id = _post([TEXT, IMAGE]).body["conversation_id"]
    for key in _keys(bucket):
        bucket.delete_object(Bucket=BUCKET, Key=key)
    asked = len(standin_llm.requests)
    answer = _post("still there?", conversation_id)
    assert answer.status == 502, answer.body
    assert "attachment" in answer.body["assistant_message"]["error"]["message"]
    assert len(standin_llm.requests) == asked
    assert answer.body["user_message"]["content"] == "still there?"


def test_without_a_bucket_large_parts_are_refused_with_the_reason(standin_llm: OpenAIStandin) -> None:
    """API-15: with no blob bucket configured, parts stay inline and a large one is 413 saying so."""
    answer = _post([TEXT, IMAGE])
    assert (answer.status, answer.error_code) == (413, "payload_too_large")
    assert "BLOB_BUCKET" in answer.body["error"]["message"]


def test_the_same_image_twice_is_one_object_and_keeps_each_parts_fields(
    bucket: Any, standin_llm: OpenAIStandin
) -> None:
    """API-17: an image posted again (here with another `detail`) is stored once, and each message gets it
    back with its own fields."""
    low = {"type": "image_url", "image_url": {"url": IMAGE_URL, "detail": "low"}}
    conversation_id = _post([TEXT, IMAGE]).body["conversation_id"]
    assert _post([TEXT, low], conversation_id).status == 201
    assert len(_keys(bucket)) == 1
    assert _post("compare them", conversation_id).status == 201
    sent = standin_llm.requests[-1].json["messages"]
    assert sent[0]["content"] == [TEXT, IMAGE]
    assert sent[2]["content"] == [TEXT, low]
