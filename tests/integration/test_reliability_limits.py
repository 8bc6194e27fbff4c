"""REL-9 / API-3 / API-5: every size limit answers a clear 4xx in the one error shape, and no item
the service writes can exceed DynamoDB's 400 KB (capped or refused).

Limits (see docs/reliability.md, "Limits"): request bodies 256 KiB (POST /messages 1 MiB; dialogue bulk routes
Lambda's 6 MiB), checked before parsing -> 413; title 200, system prompt 20,000, content 5,000
characters; model 100; conversation id 64; Idempotency-Key 255; cursor 2,048; caller id 512; page
sizes 1..100 (list) and 1..200 (messages); tool arguments and results 32 KiB, one message's tool calls
128 KiB, recorded messages 192 KiB per post; model replies 256 KiB (MAX_REPLY_BYTES, at most 320 KiB).
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest
from chat_core.chat.pins import MAX_PINNED, MAX_PINNED_BYTES
from chat_core.chat.recording import cap_reply, error_reply, fit_item
from chat_core.engine import tool_pairing
from chat_core.engine.turnlog import TurnState
from chat_core.errors import ProviderFailed
from chat_core.http.schemas import MAX_POLICY_MESSAGES, MAX_SYSTEM_PROMPT_CHARS, MAX_TITLE_CHARS
from chat_core.llm.client import provider_response_record
from chat_core.llm.completion import Completion, Usage
from chat_core.settings import get_settings
from chat_core.store.keys import MAX_OWNER_LENGTH, new_id
from chat_core.store.records import ConversationRecord, MessageRecord, MessageUsage
from chat_core.store.sizes import ITEM_BUDGET_BYTES, MAX_ITEM_BYTES, model_bytes

from tests.reliability.figures import FIGURES
from tests.reliability.leaks import assert_clean
from tests.support import events
from tests.support import functions as api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SECTION = "limits"
WIDE = "😀"  # 4 bytes in UTF-8, 12 bytes once JSON-escaped: the worst character for an item's size
CONTROL = "\x01"  # 1 byte in UTF-8, 6 bytes JSON-escaped: the worst case for JSON attributes


def _refused(answer: api.Answer, status: int, code: str | None = None) -> dict[str, Any]:
    FIGURES.response(SECTION, answer.status)
    assert answer.status == status, answer.body
    assert set(answer.body) == {"error"}
    error = dict(answer.body["error"])
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    assert_clean(answer.status, json.dumps(answer.body), SECTION)
    return error


def _nothing_stored() -> None:
    assert api.listing().body["items"] == []


# -- request bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "make_event"),
    [
        ("create", lambda body: events.create_conversation(body)),
        ("window", lambda body: events.build_window(new_id(), body)),
    ],
)
def test_bodies_over_256_kib_are_refused_413_before_parsing(
    chat_service: None, name: str, make_event: Any
) -> None:
    """REL-9: a 300 KB body is 413 payload_too_large, whatever it contains; nothing is written."""
    # Given a body of 300 KB
    body = {"title": "x", "system_prompt": "y" * 300_000}
    # When it is sent
    answer = api.invoke({"create": "create_conversation", "window": "build_window"}[name], make_event(body))
    # Then 413 in the error shape, and nothing stored
    error = _refused(answer, 413, "payload_too_large")
    assert "limit" in error["message"]
    _nothing_stored()


def test_a_base64_body_is_measured_decoded(chat_service: None) -> None:
    """REL-9: API Gateway base64-encodes binary bodies; the limit applies to what the client sent."""
    # Given a 200 KB body (under the limit) and a 300 KB one, both base64-encoded by API Gateway
    small = events.create_conversation({"title": "t", "system_prompt": "s" * 20_000}, base64_body=True)
    large = events.create_conversation({"system_prompt": "s" * 300_000}, base64_body=True)
    assert len(base64.b64decode(large["body"])) > 256 * 1024
    # When both are sent
    # Then the small one is judged on its content (201) and the large one refused (413)
    assert api.invoke("create_conversation", small).status == 201
    _refused(api.invoke("create_conversation", large), 413, "payload_too_large")


def test_post_message_takes_bodies_up_to_1_mib_and_refuses_larger(chat_service: None) -> None:
    """REL-9: POST /messages allows 1 MiB (recorded tool messages, escaped); beyond it 413."""
    # Given a 600 KB body and a 1.1 MB body
    medium = events.post_message({"content": "z" * 600_000})
    huge = events.post_message({"content": "z" * 1_100_000})
    # When both are posted
    # Then the first is refused for its content (422, API-3), the second for its size (413)
    _refused(api.invoke("post_message", medium), 422, "message_too_long")
    _refused(api.invoke("post_message", huge), 413, "payload_too_large")
    _nothing_stored()


def test_bulk_dialogue_bodies_are_not_held_to_the_conversation_limit(chat_service: None) -> None:
    """REL-9: 100 dialogue entries of 5000 characters (~500 KB) are a valid request (seed 004)."""
    # Given the largest valid batch of dialogue entries
    entries = [
        {"participant_id": "a", "role": "user", "content": "e" * 5000, "game_tick": n} for n in range(100)
    ]
    body = {"participants": ["a", "b"], "entries": entries}
    event = events.http_event(
        "POST",
        "/worlds/w1/dialogues/entries",
        route="/worlds/{world_id}/dialogues/entries",
        path_parameters={"world_id": "w1"},
        body=body,
    )
    assert len(event["body"]) > 256 * 1024
    # When it is sent
    answer = api.invoke("add_dialogue_entries", event)
    FIGURES.response(SECTION, answer.status)
    # Then it is stored
    assert answer.status == 201, answer.body


# -- field lengths and page sizes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "status", "field"),
    [
        ({"title": "t" * (MAX_TITLE_CHARS + 1)}, 422, "body.title"),
        ({"system_prompt": "s" * (MAX_SYSTEM_PROMPT_CHARS + 1)}, 422, "body.system_prompt"),
        ({"model": "m" * 101}, 422, "body.model"),
        ({"model": "bad model!"}, 422, "body.model"),
        (
            {"window_policy": {"max_messages": MAX_POLICY_MESSAGES + 1}},
            422,
            "body.window_policy.max_messages",
        ),
        ({"window_policy": {}}, 422, "body.window_policy"),
    ],
)
def test_conversation_fields_over_their_limits_are_422(
    chat_service: None, fields: dict[str, Any], status: int, field: str
) -> None:
    """REL-9 / API-5: each oversized or malformed field of POST /conversations names itself."""
    # When a conversation is created with the field out of bounds
    error = _refused(api.create(**fields), status, "validation_error")
    # Then the error says which field, and nothing is stored
    assert any(d["field"].startswith(field) for d in error["details"]), error
    _nothing_stored()


@pytest.mark.parametrize(
    ("fields", "status", "code"),
    [
        ({"content": "c" * 5001}, 422, "message_too_long"),
        ({"content": ""}, 400, "invalid_input"),
        ({"content": "hi", "conversation_id": "C" * 65}, 422, "validation_error"),
        ({"content": "hi", "conversation_id": "not-an-id"}, 404, "conversation_not_found"),
        ({"content": "hi", "model": "x" * 101}, 422, "validation_error"),
    ],
)
def test_message_fields_over_their_limits_are_4xx(
    chat_service: None, fields: dict[str, Any], status: int, code: str
) -> None:
    """REL-9 / API-3 / API-5: content, ids and model out of bounds; the model is not called."""
    # When a message with the field out of bounds is posted
    answer = api.invoke("post_message", events.post_message(fields))
    # Then a clear 4xx, nothing stored
    _refused(answer, status, code)
    _nothing_stored()


def test_header_and_identity_lengths_are_checked(chat_service: None) -> None:
    """REL-9: Idempotency-Key over 255 characters is 400; a caller id over 512 is no identity (401)."""
    # When a post carries a 256-character Idempotency-Key, and another comes from a 513-character caller
    keyed = api.post("hi", idempotency_key="k" * 256)
    anonymous = api.post("hi", user="u" * (MAX_OWNER_LENGTH + 1))
    # Then 400 and 401, nothing stored
    _refused(keyed, 400, "invalid_input")
    _refused(anonymous, 401, "unauthorized")
    _nothing_stored()


@pytest.mark.parametrize(
    ("route", "query", "ok"),
    [
        ("list", {"limit": "0"}, False),
        ("list", {"limit": "101"}, False),
        ("list", {"limit": "-1"}, False),
        ("list", {"limit": "ten"}, False),
        ("list", {"limit": "100"}, True),
        ("list", {"cursor": "c" * 2049}, False),
        ("detail", {"limit": "0"}, False),
        ("detail", {"limit": "201"}, False),
        ("detail", {"limit": "200"}, True),
        ("detail", {"cursor": "garbage"}, False),
    ],
)
def test_page_sizes_and_cursors_are_bounded(
    chat_service: None, route: str, query: dict[str, str], ok: bool
) -> None:
    """REL-9 / API-5: `limit` is 1..100 on the listing and 1..200 on messages; bad cursors are 4xx."""
    # Given a conversation
    conversation_id = api.post("hello").body["conversation_id"]
    # When a page is asked for with the query
    answer = api.listing(**query) if route == "list" else api.detail(conversation_id, **query)
    FIGURES.response(SECTION, answer.status)
    # Then it is served, or refused with a 4xx in the error shape
    if ok:
        assert answer.status == 200, answer.body
    else:
        assert answer.status in (400, 422), answer.body
        assert answer.body["error"]["code"] in ("validation_error", "invalid_cursor")


def _tool_post(arguments: str = "{}", result: str = "ok", calls: int = 1) -> dict[str, Any]:
    tool_calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
        for n in range(calls)
    ]
    results = [{"role": "tool", "tool_call_id": f"call_{n}", "content": result} for n in range(calls)]
    return {"content": "and so?", "messages": [{"role": "assistant", "tool_calls": tool_calls}, *results]}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (_tool_post(arguments="a" * (tool_pairing.MAX_TOOL_ARGUMENTS_BYTES + 1)), "arguments"),
        (_tool_post(result="r" * (tool_pairing.MAX_TOOL_RESULT_BYTES + 1)), "result"),
        (_tool_post(arguments="a" * 30_000, calls=5), "one message's tool calls"),
        (_tool_post(result="r" * 30_000, calls=7), "recorded messages"),
    ],
)
def test_tool_call_sizes_over_their_caps_are_422(chat_service: None, body: dict[str, Any], why: str) -> None:
    """REL-9 (with AGT-1's caps): oversized tool arguments, results and recordings are refused."""
    # When an agent posts a recorded trajectory over a cap
    answer = api.invoke("post_message", events.post_message(body))
    # Then 422 tool_payload_too_large (or a validation error naming the field), nothing stored
    FIGURES.response(SECTION, answer.status)
    assert answer.status == 422, (why, answer.body)
    assert answer.body["error"]["code"] in ("tool_payload_too_large", "validation_error")
    _nothing_stored()


# -- items never over 400 KB --------------------------------------------------------------------------


def _completion(content: str, tool_calls: list[dict[str, Any]] | None = None) -> Completion:
    return Completion(
        content=content,
        model="m" * 100,
        usage=Usage(2**31, 2**31, 2**32),
        usage_reported=True,
        tool_calls=tool_calls,
        finish_reason="stop",
        raw={"choices": [{"message": {"content": content, "tool_calls": tool_calls}}]},
        latency_ms=1.0,
    )


def _pins(count: int, chars: int) -> list[dict[str, Any]]:
    return [
        {"seq": n, "message_id": new_id(), "role": "user", "content": CONTROL * chars, "tokens": 2**31}
        for n in range(count)
    ]


def _calls_at_cap() -> list[dict[str, Any]]:
    """As many tool calls (128-character ids) as one reply may carry under the tool-calls cap."""
    calls: list[dict[str, Any]] = []
    while True:
        call = {
            "id": f"{len(calls):0128d}",
            "type": "function",
            "function": {"name": "n" * 64, "arguments": "{}"},
        }
        if len(json.dumps([*calls, call])) > tool_pairing.MAX_MESSAGE_TOOL_CALLS_BYTES:
            return calls
        calls.append(call)


def _assistant(content: str, **fields: Any) -> MessageRecord:
    return MessageRecord(
        owner="o" * MAX_OWNER_LENGTH,
        conversation_id=new_id(),
        seq=10**9,
        message_id=new_id(),
        role="assistant",
        content=content,
        status="ok",
        created_at="2026-01-01T00:00:00.000000Z",
        model="m" * 100,
        tokens=2**31,
        usage=MessageUsage(2**31, 2**31, 2**32),
        local_usage=MessageUsage(2**31, 2**31, 2**32),
        usage_reported=True,
        latency_ms=123456.7,
        finish_reason="tool_calls",
        **fields,
    )


def test_the_largest_allowed_items_stay_under_400_kb(chat_service: None) -> None:
    """REL-9: items built at every cap with the worst characters: user message, conversation (with
    pins and an open turn), assistant reply with tool calls, stored failure, all under DynamoDB's 400 KB."""
    settings = get_settings()
    owner = "o" * MAX_OWNER_LENGTH
    # Given a user message at 5000 four-byte characters
    user = MessageRecord(
        owner=owner,
        conversation_id=new_id(),
        seq=10**9,
        message_id=new_id(),
        role="user",
        content=WIDE * settings.max_content_chars,
        status="ok",
        created_at="2026-01-01T00:00:00.000000Z",
        tokens=2**31,
        pinned=True,
    )
    # And a conversation at every cap: title, system prompt, policy, pinned copies (as stored, escaped)
    # and an open turn waiting on as many tool calls as one reply may carry
    per_pin = 1
    while len(json.dumps(_pins(MAX_PINNED, per_pin + 1))) <= MAX_PINNED_BYTES:
        per_pin += 1
    pinned = _pins(MAX_PINNED, per_pin)
    calls = _calls_at_cap()
    pending = [{"id": c["id"], "name": c["function"]["name"]} for c in calls]
    conversation = ConversationRecord(
        owner=owner,
        conversation_id=new_id(),
        title=WIDE * MAX_TITLE_CHARS,
        system_prompt=WIDE * MAX_SYSTEM_PROMPT_CHARS,
        system_tokens=2**31,
        model="m" * 100,
        window_policy={
            "max_messages": 200,
            "max_chars": 1_000_000,
            "max_tokens": 2_000_000,
            "method": "exact",
        },
        created_at="2026-01-01T00:00:00.000000Z",
        updated_at="2026-01-01T00:00:00.000000Z",
        pinned=pinned,
        pinned_rev=2**31,
        open_turn=TurnState(turn=2**31, started_ms=2**45, pending=pending).to_json(),
    )
    # And an assistant reply just within MAX_REPLY_BYTES, with tool calls at one message's cap
    text = "a" * (settings.max_reply_bytes - len(json.dumps(calls)))
    completion, failure = cap_reply(_completion(text, calls), None, settings)
    assert failure is None
    reply = _assistant(completion.content if completion else "", tool_calls=calls)
    # And the worst stored failure: a provider record of escaped bytes and many rate-limit headers
    received = type("R", (), {})()
    received.status_code, received.over_limit = 500, False
    received.body = b"\xff" * 32 * 1024
    received.headers = {f"x-ratelimit-{n}": CONTROL * 512 for n in range(300)}
    record = provider_response_record(received, url="https://x.example/v1/chat/completions", error="E" * 512)
    failed = error_reply(conversation, 10**9, "e" * 10_000)
    failed = fit_item(replace(failed, error={"message": "e" * 10_000, "provider_response": record}))
    # When their stored sizes are computed
    sizes = {
        "user": model_bytes(user),
        "conversation": model_bytes(conversation),
        "assistant": model_bytes(reply),
        "failure": model_bytes(failed),
    }
    FIGURES.add(SECTION, **{f"max_item_bytes_{k}": v for k, v in sizes.items()})
    # Then every one is under the service's budget, itself under DynamoDB's limit
    assert all(size <= ITEM_BUDGET_BYTES < MAX_ITEM_BYTES for size in sizes.values()), sizes


def test_a_reply_over_the_reply_cap_becomes_a_stored_failure() -> None:
    """REL-9: a reply over MAX_REPLY_BYTES (text plus tool calls) is a `too_large` provider failure."""
    limit = get_settings().max_reply_bytes
    # Given replies one byte over the cap, as text and as tool calls
    text_only = _completion("a" * (limit + 1))
    calls = [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "a" * limit}}]
    with_calls = _completion("", calls)
    for completion in (text_only, with_calls):
        # When it is checked before storing
        kept, failure = cap_reply(completion, None)
        # Then it is refused as too large, with the start of the body kept for the record
        assert kept is None
        assert isinstance(failure, ProviderFailed)
        assert failure.kind == "too_large"
        assert failure.provider_response["truncated"] is True
