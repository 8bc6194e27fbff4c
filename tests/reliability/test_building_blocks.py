"""REL: the pure pieces under the reliability behaviour: DynamoDB item sizes, body limits, which
failures are transient, the contention backoff, abandoned reply slots, the OpenAPI responses."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError, ReadTimeoutError
from chat_core.chat.recording import abandoned_slots, contention_backoff
from chat_core.errors import PayloadTooLarge, StoreUnavailable
from chat_core.http import limits
from chat_core.http.openapi_doc import document_responses
from chat_core.http.route_answers import ROUTES
from chat_core.settings import Settings
from chat_core.store.base import CONTENTION_CAP_S, transient_cause
from chat_core.store.records import MessageRecord
from chat_core.store.sizes import item_bytes, value_bytes
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.exceptions import QueryError


def test_item_sizes_follow_dynamodbs_rules() -> None:
    """REL-9: names + values; strings in UTF-8; numbers ~1 byte per 2 digits + 1; maps/lists 3 + 1
    per element (AWS "Item sizes and formats")."""
    # Given attribute values of every kind, Then each is sized as DynamoDB sizes it
    assert value_bytes({"S": "héllo"}) == 6
    assert value_bytes({"N": "12345"}) == 4
    assert value_bytes({"N": "1" * 38}) == 20
    assert value_bytes({"BOOL": True}) == value_bytes({"NULL": True}) == 1
    assert value_bytes({"B": base64.b64encode(b"\x00" * 10).decode()}) == 10
    assert value_bytes({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (2 + 1) + (2 + 1)
    assert value_bytes({"M": {"k": {"S": "v"}}}) == 3 + 1 + 1 + 1
    assert item_bytes({"pk": {"S": "USER#a"}, "n": {"N": "7"}}) == 2 + 6 + 1 + 2


@given(st.text(max_size=200))
def test_a_string_attribute_costs_its_utf8_bytes(text: str) -> None:
    """REL-9: property: S values are their UTF-8 length, plus the name."""
    encoded = text.encode("utf-8", "surrogatepass")
    assert item_bytes({"content": {"S": text}}) == len("content") + len(encoded)


def _event(body: str, route: str = "POST /conversations", encoded: bool = False) -> dict[str, object]:
    return {"routeKey": route, "body": body, "isBase64Encoded": encoded}


def test_body_limits_depend_on_the_route() -> None:
    """REL-9: 256 KiB by default, 1 MiB on POST /messages, Lambda's 6 MiB on the bulk dialogue routes."""
    settings = Settings()
    assert limits.body_limit("POST /conversations", settings) == 256 * 1024
    assert (
        limits.body_limit("PATCH /conversations/{conversation_id}/messages/{message_id}", settings) == 262_144
    )
    assert limits.body_limit("POST /messages", settings) == 1024 * 1024
    assert limits.body_limit("POST /worlds/{world_id}/import", settings) == limits.LAMBDA_PAYLOAD_BYTES
    # And a body is measured as sent: UTF-8 bytes, base64 decoded
    assert limits.body_bytes(_event("é" * 10)) == 20
    assert limits.body_bytes(_event(base64.b64encode(b"x" * 30).decode(), encoded=True)) == 30
    limits.check_body_size(_event("x" * 262_144), settings)
    with pytest.raises(PayloadTooLarge):
        limits.check_body_size(_event("x" * 262_145), settings)


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "Query")


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (_client_error("ProvisionedThroughputExceededException"), True),
        (_client_error("ThrottlingException"), True),
        (_client_error("RequestLimitExceeded"), True),
        (_client_error("InternalServerError"), True),
        (_client_error("ValidationException"), False),
        (_client_error("ConditionalCheckFailedException"), False),
        (EndpointConnectionError(endpoint_url="http://x"), True),
        (ReadTimeoutError(endpoint_url="http://x"), True),
        (ParamValidationError(report="bad"), False),
        (ValueError("bug"), False),
    ],
)
def test_transient_store_failures_are_told_from_bugs(error: Exception, transient: bool) -> None:
    """REL-8: what retrying later can fix (503) versus a bug (500), also when wrapped."""
    # Given the error wrapped as the store wraps it: PynamoDB's error, then a domain error
    wrapped = QueryError("Failed to query items", error)
    outer = StoreUnavailable("busy")
    outer.__cause__ = wrapped
    # Then reading its code never raises (PynamoDB assumed a ClientError), and only transient causes count
    assert wrapped.cause_response_code == (
        error.response["Error"]["Code"] if isinstance(error, ClientError) else None
    )
    assert (transient_cause(outer) is not None) is transient
    assert (transient_cause(error) is not None) is transient


def test_contention_backoff_is_jittered_and_capped() -> None:
    """REL-5: full jitter, growing with the attempt, never above the cap."""
    waits = [contention_backoff(attempt) for attempt in range(30) for _ in range(20)]
    assert all(0.0 <= w <= CONTENTION_CAP_S for w in waits)
    assert len(set(waits)) > 100
    assert max(contention_backoff(0) for _ in range(200)) <= 0.01


def _message(seq: int, role: str, age_s: float) -> MessageRecord:
    created = (datetime.now(UTC) - timedelta(seconds=age_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return MessageRecord("o", "C", seq, message_id=f"m{seq}", role=role, created_at=created)


def test_only_old_empty_reply_slots_count_as_abandoned() -> None:
    """REL-8: a slot below next_seq without a message is abandoned once its question is older than a
    turn can run; a fresh one may belong to a post still running and is left alone."""
    now = datetime.now(UTC)
    history = [_message(1, "user", 600), _message(2, "assistant", 599), _message(3, "user", 500)]
    # Given slot 4 empty and next_seq 7 (slot 6 reserved by a post 5 seconds old)
    history += [_message(5, "user", 5)]
    # Then only slot 4 is abandoned after 120 s; both are with a 0 s threshold; none in full history
    assert abandoned_slots(history, 7, now, 120) == [4]
    assert abandoned_slots(history, 7, now, 0) == [4, 6]
    assert abandoned_slots(history[:3], 4, now, 0) == []
    assert abandoned_slots([], 9, now, 0) == []


def test_documented_responses_replace_the_resolvers_defaults() -> None:
    """REL-7: every operation's responses are rewritten; unknown routes get 2XX and the error shape."""
    # Given a document as Powertools makes it (200 and its own 422 shape), with one unknown route
    default = {"200": {"description": "ok"}, "422": {"description": "HTTPValidationError"}}
    paths: dict[str, dict[str, Any]] = {}
    for key in ROUTES:
        method, path = key.split(" ", 1)
        paths.setdefault(path, {})[method.lower()] = {"responses": dict(default)}
    paths["/new/{thing}"] = {"put": {"responses": dict(default)}}
    document = document_responses({"paths": paths, "components": {"schemas": {"HTTPValidationError": {}}}})
    # Then each known route has its success status and the error shape; the unknown one 2XX and errors
    assert set(document["paths"]["/messages"]["post"]["responses"]) >= {"201", "502", "401", "413", "503"}
    assert "204" in document["paths"]["/conversations/{conversation_id}"]["delete"]["responses"]
    unknown = document["paths"]["/new/{thing}"]["put"]["responses"]
    assert "2XX" in unknown
    assert unknown["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorOut"
    }
    assert "HTTPValidationError" not in document["components"]["schemas"]
    assert document["paths"]["/messages"]["post"]["responses"]["503"]["headers"]["Retry-After"]["required"]
