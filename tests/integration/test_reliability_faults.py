"""REL-8: DynamoDB and provider faults injected for real, through the handlers.

DynamoDB faults are answered inside botocore (tests/reliability/faults.py), so botocore's own retry
policy runs on them; what is left after DYNAMODB_MAX_ATTEMPTS must be a clean 503 store_unavailable
with Retry-After, nothing half-written. A failure between the two TransactWrites never loses the user
message and never wedges the conversation. Provider calls are bounded by the function's remaining time,
and replies too large for an item are stored as failed turns (502).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from chat_core.llm import provider
from chat_core.runtime import current
from chat_core.store.sizes import MAX_ITEM_BYTES, item_bytes

from tests.integration.conftest import TABLE
from tests.reliability.faults import CONNECTION, ERRORS, READ_TIMEOUT, DynamoFaults, injected
from tests.reliability.figures import FIGURES
from tests.reliability.leaks import assert_clean
from tests.reliability.routes import Route, http_routes
from tests.reliability.samples import QUERIES, body_for
from tests.support import events
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

DB = "dynamodb faults"
ZERO = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@pytest.fixture
def faults(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoFaults]:
    with injected(monkeypatch) as installed:
        yield installed
    FIGURES.add(DB, faults=installed.total_injected)


def _count(answer: api.Answer, section: str = DB, *, expected_5xx: bool = True) -> api.Answer:
    FIGURES.response(section, answer.status, expected_5xx=expected_5xx)
    assert_clean(answer.status, answer.raw.get("body") or "", section)
    return answer


def _assert_store_unavailable(answer: api.Answer) -> None:
    assert answer.status == 503, answer.body
    assert answer.error_code == "store_unavailable"
    assert answer.headers.get("Retry-After") == "1"


def _state(conversation_id: str) -> dict[str, Any]:
    detail = api.detail(conversation_id).body
    return {k: detail[k] for k in ("message_count", "usage", "local_usage", "messages")}


def _assert_counters_exact(conversation_id: str) -> list[dict[str, Any]]:
    """message_count is the number of stored messages; usage totals are the sums over them."""
    detail = api.detail(conversation_id).body
    messages = detail["messages"]
    assert detail["message_count"] == len(messages)
    for key in ZERO:
        assert detail["usage"][key] == sum(m.get("usage", ZERO)[key] for m in messages)
    return list(messages)


# -- retries, then 503 --------------------------------------------------------------------------------


def test_throttled_transactions_are_retried_and_the_post_lands(faults: DynamoFaults) -> None:
    """REL-8: throttling within DYNAMODB_MAX_ATTEMPTS (4) is absorbed by botocore's retries."""
    # Given a conversation, and DynamoDB throttling the next three TransactWriteItems
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "ProvisionedThroughputExceededException", times=3)
    # When a message is posted
    answer = _count(api.post("second", conversation_id), expected_5xx=False)
    # Then it lands (201) after the retries, and the conversation is whole
    assert answer.status == 201, answer.body
    assert faults.injected["TransactWriteItems"] == 3
    messages = _assert_counters_exact(conversation_id)
    assert [m["content"] for m in messages if m["role"] == "user"] == ["first", "second"]
    FIGURES.add(DB, messages_posted=1)


@pytest.mark.parametrize("operation", ["Query", "TransactWriteItems"])
@pytest.mark.parametrize("code", [*ERRORS, CONNECTION, READ_TIMEOUT])
def test_store_failures_past_the_retries_answer_503_and_write_nothing(
    faults: DynamoFaults, operation: str, code: str
) -> None:
    """REL-8: the post's read or TransactWrite #1 keeps failing -> 503 + Retry-After, nothing written."""
    # Given a conversation with one turn
    conversation_id = api.post("first").body["conversation_id"]
    before = _state(conversation_id)
    # When every call of the operation fails with the code and a message is posted
    faults.fail(operation, code)
    answer = _count(api.post("lost?", conversation_id))
    faults.clear()
    # Then the answer is a clean 503 after botocore's 4 attempts, and the conversation is unchanged
    _assert_store_unavailable(answer)
    assert faults.injected[operation] == 4
    assert _state(conversation_id) == before
    FIGURES.add(DB, messages_posted=1)


def _route_event(route: Route, ids: dict[str, str]) -> dict[str, Any]:
    body = body_for(route.key, ids)
    kwargs: dict[str, Any] = {"path_parameters": {p: ids.get(p, "x") for p in route.params} or None}
    if isinstance(body, str):
        kwargs["raw_body"] = body
    elif route.method in ("POST", "PUT", "PATCH"):
        kwargs["body"] = body
    return events.http_event(
        route.method, route.url(ids), route=route.path, query=QUERIES.get(route.key), **kwargs
    )


@pytest.mark.parametrize("route", http_routes(), ids=str)
def test_every_route_answers_503_when_the_store_keeps_failing(faults: DynamoFaults, route: Route) -> None:
    """REL-8 / DES-1: on every template route, a store that stays unavailable is a 503 with
    Retry-After in the one error shape (never a 500, never internal text)."""
    # Given a conversation and a dialogue to address, then DynamoDB throttling every call
    first = api.post("first").body
    ids = {
        "conversation_id": first["conversation_id"],
        "message_id": first["user_message"]["message_id"],
        "world_id": "w1",
    }
    faults.fail("*", "ThrottlingException")
    calls_before = sum(faults.calls.values())
    # When the route is called with a valid request
    name = route.code_uri.strip("/").split("/")[-1]
    if route.public:
        # The console's files (CON-1) are not JSON and never touch the store: served whatever it does.
        raw = api.load(name).lambda_handler(_route_event(route, ids), LambdaContext(function_name=name))
        assert raw["statusCode"] in (200, 404)
        assert sum(faults.calls.values()) == calls_before
        return
    answer = _count(api.invoke(name, _route_event(route, ids)))
    # Then, if it reached the store, it answered 503 + Retry-After; otherwise a 4xx before any I/O
    if sum(faults.calls.values()) == calls_before:
        # (GET /v1/models lists configured names and never reads the store)
        assert 400 <= answer.status < 500 or route.key == "GET /v1/models", answer.body
    else:
        _assert_store_unavailable(answer)


# -- between TransactWrite #1 and #2 ------------------------------------------------------------------


def test_a_throttled_second_transaction_is_retried_and_the_reply_lands(faults: DynamoFaults) -> None:
    """REL-4: TransactWrite #2 cancelled once for throttling -> retried; the reply is stored: 201, the
    counters exact."""
    # Given a conversation, and the next post's second TransactWriteItems cancelled for throttling
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "TransactionCanceled:ThrottlingError", skip=1, times=1)
    # When a message is posted
    answer = _count(api.post("kept?", conversation_id), expected_5xx=False)
    # Then the reply the model gave is stored like any other
    assert answer.status == 201, answer.body
    messages = _assert_counters_exact(conversation_id)
    assert [(m["role"], m["status"]) for m in messages[-2:]] == [("user", "ok"), ("assistant", "ok")]
    assert messages[-1]["content"] == answer.body["assistant_message"]["content"]
    FIGURES.add(DB, messages_posted=1)


def test_a_reply_that_cannot_be_stored_is_handed_to_the_caller(faults: DynamoFaults) -> None:
    """REL-4: every write after TransactWrite #1 fails -> 503 reply_not_stored whose body carries the
    model's reply (never a bare 503 after the model spoke); the question is kept."""
    # Given a conversation, and every TransactWriteItems after the next post's first one failing
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "InternalServerError", skip=1)
    # When a message is posted
    answer = _count(api.post("what did you say?", conversation_id))
    faults.clear()
    # Then the answer says the reply was not saved, and includes it
    assert answer.status == 503, answer.body
    assert answer.error_code == "reply_not_stored"
    assert answer.headers.get("Retry-After") == "1"
    reply = answer.body["assistant_message"]
    assert reply["stored"] is False
    assert reply["status"] == "ok"
    assert reply["content"]
    assert answer.body["user_message"]["content"] == "what did you say?"
    stored = api.detail(conversation_id).body["messages"]
    assert [(m["role"], m["content"]) for m in stored[-1:]] == [("user", "what did you say?")]


def test_when_the_fallback_fails_too_the_next_post_repairs_the_reserved_slot(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-8: every later TransactWrite fails -> 503; the question is visible, its slot empty; once
    the turn is older than ABANDONED_TURN_SECONDS the next post closes it as an error and goes on."""
    # Given a conversation, and every TransactWriteItems after the next post's first one failing
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "InternalServerError", skip=1)
    # When a message is posted
    answer = _count(api.post("orphaned?", conversation_id))
    faults.clear()
    # Then 503 carrying the reply, and the user message is stored (never lost) without a reply
    assert answer.status == 503, answer.body
    assert answer.error_code == "reply_not_stored"
    stored = api.detail(conversation_id).body["messages"]
    assert [(m["role"], m["content"]) for m in stored[-1:]] == [("user", "orphaned?")]
    # When the store is back, the turn counts as abandoned and another message is posted
    monkeypatch.setenv("ABANDONED_TURN_SECONDS", "0")
    renew()
    after = _count(api.post("and now?", conversation_id), expected_5xx=False)
    # Then the new turn lands and the abandoned slot holds an error reply: nothing wedged, counts exact
    assert after.status == 201, after.body
    messages = _assert_counters_exact(conversation_id)
    assert [(m["role"], m["status"]) for m in messages] == [
        ("user", "ok"),
        ("assistant", "ok"),
        ("user", "ok"),
        ("assistant", "error"),
        ("user", "ok"),
        ("assistant", "ok"),
    ]
    assert "interrupted" in messages[3]["error"]["message"]
    FIGURES.add(DB, messages_posted=2)


class ProcessDied(BaseException):
    """What a Lambda runtime killed mid-invocation looks like to the code after it: nothing runs."""


class _DiesMidCall:
    def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise ProcessDied


def test_a_crash_during_the_model_call_keeps_the_question_and_never_wedges(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-8: the process dies between TransactWrite #1 and #2. The question is in the detail; a post
    right after leaves the (possibly still running) slot alone; once abandoned, it is closed as an error."""
    # Given a conversation whose next model call kills the process
    conversation_id = api.post("first").body["conversation_id"]
    current().provide(provider.PROVIDER, _DiesMidCall())  # what get_provider() hands out now
    with pytest.raises(ProcessDied):
        api.post("did you get this?", conversation_id)
    renew()
    FIGURES.add("crash", requests=1, faults=1, messages_posted=1)
    # Then the question is stored and visible
    stored = api.detail(conversation_id).body["messages"]
    assert stored[-1]["content"] == "did you get this?"
    # When another message is posted at once (the slot could still belong to a running post)
    soon = api.post("still there?", conversation_id)
    FIGURES.response("crash", soon.status)
    # Then it lands after the reserved slot, which is left alone
    assert soon.status == 201, soon.body
    roles = [m["role"] for m in api.detail(conversation_id).body["messages"]]
    assert roles == ["user", "assistant", "user", "user", "assistant"]
    # When the slot is older than ABANDONED_TURN_SECONDS and the next message comes
    monkeypatch.setenv("ABANDONED_TURN_SECONDS", "0")
    renew()
    later = api.post("third", conversation_id)
    FIGURES.response("crash", later.status)
    # Then the abandoned slot is closed as an error reply, and the counters are exact
    assert later.status == 201, later.body
    messages = _assert_counters_exact(conversation_id)
    assert [(m["role"], m["status"]) for m in messages[2:4]] == [("user", "ok"), ("assistant", "error")]
    assert len(messages) == 8
    FIGURES.add("crash", messages_posted=2)


# -- provider faults ----------------------------------------------------------------------------------


@pytest.fixture
def patient_provider(standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch) -> OpenAIStandin:
    """The stand-in with a 20 s per-attempt timeout: only the function's remaining time can cut a call."""
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "20")
    renew()
    return standin_llm


def test_the_model_call_is_cut_at_the_functions_remaining_time(patient_provider: OpenAIStandin) -> None:
    """API-2: with 7 s left and 3 s kept for storing, the call gets at most 4 s, not the 20 s of
    LLM_TIMEOUT_SECONDS. (4 s, not less: on a busy machine the post's own work before the call must not
    eat the whole budget, which would end the turn before the call instead of cutting it.)"""
    # Given a provider that takes 30 s, and an invocation with 7 s left
    patient_provider.set_mode("slow", slow_seconds=30.0)
    context = LambdaContext(remaining_ms=7_000)
    # When a message is posted
    answer = _count(api.post("quick?", context=context), "provider faults")
    FIGURES.add("provider faults", faults=1, messages_posted=1)
    # Then the call was cut at what was left minus the 3 s margin (at most 4 s), and the failed turn
    # stored (502, API-2)
    assert answer.status == 502, answer.body
    error = answer.body["assistant_message"]["error"]
    cut = re.search(r"timed out .* after (\d+\.\d)s", error["message"])
    assert cut is not None, error["message"]
    assert 0.0 < float(cut.group(1)) <= 4.0
    assert api.detail(answer.body["conversation_id"]).body["messages"][-1]["status"] == "error"


def test_no_model_call_starts_without_time_to_store_its_answer(patient_provider: OpenAIStandin) -> None:
    """REL-8: under 3 s left, the model is not called at all; the turn is stored as failed."""
    # Given an invocation with 2.5 s left
    context = LambdaContext(remaining_ms=2_500)
    # When a message is posted
    answer = _count(api.post("too late?", context=context), "provider faults")
    FIGURES.add("provider faults", faults=1, messages_posted=1)
    # Then no request reached the provider and the turn is a stored failure
    assert answer.status == 502, answer.body
    assert "no time left" in answer.body["assistant_message"]["error"]["message"]
    assert patient_provider.completion_requests == []


def _stored_item_bytes(conversation_id: str, seq: int) -> int:
    item = boto3.client("dynamodb", region_name="us-east-1").get_item(
        TableName=TABLE,
        Key={"pk": {"S": f"USER#alice#CONV#{conversation_id}"}, "sk": {"S": f"MSG#{seq:010d}"}},
    )["Item"]
    return item_bytes(item)


@pytest.mark.parametrize(
    ("mode", "size", "status"),
    [
        ("huge", 3_000_000, 502),  # over LLM_MAX_RESPONSE_BYTES (1 MiB): not even read
        ("huge", 300_000, 502),  # read, but over MAX_REPLY_BYTES (256 KiB): too large to store
        ("huge", 200_000, 201),  # large and stored whole
        ("huge_error", 3_000_000, 502),  # a 3 MB error body: kept truncated
    ],
)
def test_oversized_replies_fit_their_item(
    standin_llm: OpenAIStandin, mode: str, size: int, status: int
) -> None:
    """REL-8 / 7.5: whatever the provider sends, the stored reply is under DynamoDB's 400 KB."""
    # Given a provider answering with a body of `size` bytes
    standin_llm.configure(mode=mode, huge_bytes=size)
    # When a message is posted
    answer = _count(api.post("tell me everything"), "provider faults", expected_5xx=status == 502)
    FIGURES.add("provider faults", faults=int(status == 502), messages_posted=1)
    # Then the turn is stored (as a failure when too large) and its item fits
    assert answer.status == status, answer.body
    reply = answer.body["assistant_message"]
    conversation_id = answer.body["conversation_id"]
    assert _stored_item_bytes(conversation_id, 2) < MAX_ITEM_BYTES
    if status == 201:
        assert len(reply["content"]) == size
    else:
        assert reply["status"] == "error"
        assert reply["error"]["provider_response"]["truncated"] is True
    assert api.detail(conversation_id).body["messages"][-1] == reply
