"""API-2 and TOK-6 against a real OpenAI-compatible server on 127.0.0.1: failures stored, answered 502."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chat_local.template import load_yaml

from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

ROOT = Path(__file__).resolve().parents[2]
ZERO = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def _assert_failed_turn(answer: api.Answer, content: str) -> dict[str, Any]:
    """API-2: 502, same shape as success, user message + error assistant (usage 0) both stored."""
    assert answer.status == 502
    assert set(answer.body) == {"conversation_id", "user_message", "assistant_message"}
    assert answer.body["user_message"]["content"] == content
    assistant = answer.body["assistant_message"]
    assert assistant["status"] == "error"
    assert assistant["usage"] == ZERO
    assert assistant["error"]["message"]
    stored = api.detail(answer.body["conversation_id"]).body["messages"]
    assert [(m["role"], m["status"]) for m in stored][-2:] == [("user", "ok"), ("assistant", "error")]
    assert stored[-1] == assistant
    return dict(assistant["error"])


def test_provider_http_500_is_stored_and_answered_502(standin_llm: OpenAIStandin) -> None:
    """API-2 HTTP error: the provider's full response (status and error body) is kept."""
    # Given a provider answering 500
    standin_llm.set_mode("error500")
    # When a message is posted
    answer = api.post("hello?")
    # Then the failed turn is stored and the provider's response is in the error
    error = _assert_failed_turn(answer, "hello?")
    assert "500" in str(error["provider_response"])
    assert "server_error" in str(error["provider_response"])


def test_provider_timeout_is_stored_and_answered_502(standin_llm: OpenAIStandin) -> None:
    """API-2 timeout: the model call is bounded by the function's remaining time, then recorded."""
    # Given a provider slower than the invocation has time for
    standin_llm.set_mode("slow", slow_seconds=6.0)
    context = LambdaContext(remaining_ms=4_000)
    # When a message is posted
    answer = api.post("are you there?", context=context)
    # Then the turn is stored as failed before the Lambda deadline
    error = _assert_failed_turn(answer, "are you there?")
    assert "tim" in error["message"].lower()
    assert context.get_remaining_time_in_millis() > 0


def test_provider_malformed_json_is_stored_and_answered_502(standin_llm: OpenAIStandin) -> None:
    """API-2 malformed body: what the provider sent is kept as received."""
    # Given a provider answering 200 with HTML instead of JSON
    standin_llm.set_mode("malformed")
    # When a message is posted
    answer = api.post("parse this")
    # Then the failed turn keeps the body the provider sent
    error = _assert_failed_turn(answer, "parse this")
    assert "upstream said hello" in str(error["provider_response"])


def test_provider_missing_usage_is_zero_with_local_count(standin_llm: OpenAIStandin) -> None:
    """TOK-6 / seed 003: no usage -> 0/0/0 recorded, the local count recorded beside it."""
    # Given a provider that sends no usage
    standin_llm.set_mode("no_usage")
    # When two messages are posted
    first = api.post("one")
    second = api.post("two", first.body["conversation_id"])
    # Then both replies are ok with usage 0
    for answer in (first, second):
        assert answer.status == 201
        assert answer.body["assistant_message"]["usage"] == ZERO
    # And the conversation's local count grew while its reported usage stayed 0
    conversation = api.detail(first.body["conversation_id"]).body
    assert conversation["usage"] == ZERO
    local = conversation["local_usage"]
    assert local["prompt_tokens"] > 0
    assert local["total_tokens"] == local["prompt_tokens"] + local["completion_tokens"]


def test_failed_turn_is_left_out_of_later_windows(standin_llm: OpenAIStandin) -> None:
    """API-2 + WIN-2: an error reply is history for people, not for the model."""
    # Given a conversation whose second turn failed
    conversation_id = api.post("first").body["conversation_id"]
    standin_llm.set_mode("error500")
    assert api.post("second", conversation_id).status == 502
    standin_llm.set_mode("ok")
    # When the user posts again
    assert api.post("third", conversation_id).status == 201
    # Then the model sees both user messages but not the empty error reply
    sent = standin_llm.completion_requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "user"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["first", "second", "third"]


def test_counters_after_mixed_turns(standin_llm: OpenAIStandin) -> None:
    """STO-1: the conversation item's counters and usage totals match its messages."""
    # Given ok, failed and ok turns
    conversation_id = api.post("a").body["conversation_id"]
    standin_llm.set_mode("error500")
    api.post("b", conversation_id)
    standin_llm.set_mode("ok")
    api.post("c", conversation_id)
    # When the detail is read
    detail = api.detail(conversation_id).body
    # Then message_count and usage totals are the sums over the stored messages
    assert detail["message_count"] == len(detail["messages"]) == 6
    for key in ZERO:
        assert detail["usage"][key] == sum(m["usage"][key] for m in detail["messages"] if "usage" in m)


def test_a_failed_call_emits_the_metrics_the_model_alarms_read(
    standin_llm: OpenAIStandin, capsys: pytest.CaptureFixture[str]
) -> None:
    """OPS-6: a failed model call publishes ProviderErrors and ProviderLatency (embedded metric format) in
    the namespace and with exactly the dimensions ModelErrorRateAlarm and ModelLatencyAlarm read."""
    # Given a provider answering 500, and the alarms as the template declares them
    resources = load_yaml(ROOT / "template.yaml")["Resources"]
    watched = {
        (query["MetricStat"]["Metric"]["Namespace"], query["MetricStat"]["Metric"]["MetricName"]): {
            d["Name"]: d["Value"] for d in query["MetricStat"]["Metric"]["Dimensions"]
        }
        for query in resources["ModelErrorRateAlarm"]["Properties"]["Metrics"]
        if "MetricStat" in query
    }
    assert {name for _, name in watched} == {"ProviderErrors", "ProviderLatency"}
    standin_llm.set_mode("error500")
    capsys.readouterr()
    # When a message is posted
    assert api.post("hello?").status == 502
    # Then the line of metrics the handler printed carries both under the alarm's namespace and dimensions
    emitted = {}
    for line in capsys.readouterr().out.splitlines():
        if '"_aws"' not in line:
            continue
        record = json.loads(line)
        for directive in record["_aws"]["CloudWatchMetrics"]:
            dimensions = {name: record[name] for names in directive["Dimensions"] for name in names}
            for metric in directive["Metrics"]:
                emitted[(directive["Namespace"], metric["Name"])] = dimensions
    for key, dimensions in watched.items():
        assert emitted.get(key) == dimensions, key
