"""API-2 and TOK-6: the OpenAI-compatible provider against a real stand-in server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_core.errors import ProviderFailed
from chat_core.http.statuses import status_for
from chat_core.llm.client import OpenAICompatibleProvider
from chat_core.llm.completion import MAX_RECORDED_BODY_BYTES, ChatProvider, time_budget_from_context
from chat_core.settings import Settings

from tests.support.openai_standin import OpenAIStandin, reply_text
from tests.support.runtime import drop
from tests.support.tls_server import TlsServer

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is the capital of France?"},
]


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIStandin]:
    with OpenAIStandin() as standin:
        yield standin


@pytest.fixture
def standin(server: OpenAIStandin) -> Iterator[OpenAIStandin]:
    server.configure(mode="ok", reset=True, retry_after=1.0, flaky_failures=2, flaky_status=500, api_key=None)
    yield server
    drop()


def make_provider(standin: OpenAIStandin, **settings: Any) -> OpenAICompatibleProvider:
    """A provider for the stand-in; short backoff keeps the retry tests quick, not different."""
    return OpenAICompatibleProvider(
        Settings(llm_base_url=standin.base_url, **settings), backoff_base_seconds=0.02
    )


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening: a connection is refused, and while the test runs no
    other process (another pytest worker) can start listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


# -- success and usage (TOK-6) -------------------------------------------------------------------------


def test_tok6_usage_present_is_recorded_as_reported(standin: OpenAIStandin) -> None:
    """Seed 003 'Record successful chat messages with usage': content, model and usage come back."""
    # Given a provider that answers with usage
    provider = make_provider(standin)
    # When the model is asked
    completion = provider.complete(MESSAGES, model="gpt-4o-mini")
    # Then the reply, model and the provider's own usage numbers are returned
    reported = standin.completion_requests[-1]
    assert completion.content == reply_text(MESSAGES)
    assert "What is the capital of France?" in completion.content
    assert completion.model == "gpt-4o-mini"
    assert completion.usage_reported is True
    assert completion.usage == type(completion.usage)(**completion.raw["usage"])
    assert (
        completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert completion.usage.prompt_tokens > 0
    assert completion.finish_reason == "stop"
    assert completion.offline is False
    assert completion.attempts == 1
    assert completion.request_id
    assert completion.request_id.startswith("standin-")
    assert reported.json == {"model": "gpt-4o-mini", "messages": MESSAGES}


def test_tok6_usage_absent_is_recorded_as_zero(standin: OpenAIStandin) -> None:
    """Seed 003 'Record successful chat messages without usage': usage 0 and marked not reported."""
    # Given a provider that answers without a usage object
    standin.set_mode("no_usage")
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then the reply is returned with zero usage, flagged as not reported
    assert completion.content == reply_text(MESSAGES)
    assert completion.usage.to_dict() == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert completion.usage_reported is False


def test_tok6_partial_usage_keeps_reported_numbers_and_zeroes_the_rest(standin: OpenAIStandin) -> None:
    """TOK-6: a usage object with only prompt_tokens keeps that number, the rest are 0, not 'reported'."""
    # Given a provider whose usage has only prompt_tokens
    standin.set_mode("partial_usage")
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then prompt_tokens is as reported, the others 0, and usage is not considered reported
    assert completion.usage.prompt_tokens == completion.raw["usage"]["prompt_tokens"] > 0
    assert completion.usage.completion_tokens == 0
    assert completion.usage.total_tokens == 0
    assert completion.usage_reported is False


def test_tool_calls_are_parsed_and_null_content_becomes_empty(standin: OpenAIStandin) -> None:
    """API-2 parsing: an assistant answer made of tool_calls with content null."""
    # Given a provider that answers with a tool call
    standin.set_mode("tool_call")
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then the tool call is returned in OpenAI format and the content is empty, not None
    assert completion.content == ""
    assert completion.raw["choices"][0]["message"]["content"] is None
    assert completion.finish_reason == "tool_calls"
    assert completion.tool_calls == [
        {
            "id": "call_standin_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ]


FIXTURES = Path(__file__).resolve().parents[1] / "data" / "provider_responses"


def _fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


def test_api10_a_refusal_is_kept_apart_from_the_content(standin: OpenAIStandin) -> None:
    # Given a model that refuses (content null, refusal set), as OpenAI answers
    standin.configure(mode="canned", canned=_fixture("refusal"))
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then the refusal is its own field, the content stays empty, and the usage breakdown is kept
    assert completion.content == ""
    assert completion.refusal == "I'm sorry, I can't help with that request."
    assert completion.extras == {
        "completion_id": "chatcmpl-AaZr1refusal",
        "system_fingerprint": "fp_7f6be3efb0",
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def test_api10_a_reply_cut_at_its_limit_keeps_its_reason_and_reasoning_tokens(standin: OpenAIStandin) -> None:
    # Given a reasoning model that spent its whole output budget thinking (content null, length)
    standin.configure(mode="canned", canned=_fixture("length_null_content"))
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then the reason, the cached and the reasoning tokens survive
    assert (completion.content, completion.refusal, completion.finish_reason) == ("", None, "length")
    assert completion.extras == {
        "completion_id": "chatcmpl-AaZr2length",
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 400,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def test_api10_parallel_tool_calls_and_cached_tokens_parse_without_loss(standin: OpenAIStandin) -> None:
    # Given two tool calls in one answer, with a usage breakdown
    body = _fixture("tool_calls_detailed_usage")
    standin.configure(mode="canned", canned=body)
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then both calls are kept as sent, and the cached tokens with them
    assert completion.tool_calls == body["choices"][0]["message"]["tool_calls"]
    assert completion.usage.prompt_tokens == 2301
    assert completion.extras is not None
    assert completion.extras["prompt_tokens_details"]["cached_tokens"] == 2048


def test_api10_annotations_audio_transcript_and_function_call_are_kept(standin: OpenAIStandin) -> None:
    # Given an answer with citations, a legacy function_call and audio
    body = _fixture("annotations_audio_function_call")
    standin.configure(mode="canned", canned=body)
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m")
    # Then all of it is kept, except the audio bytes (the transcript and the id are)
    message = body["choices"][0]["message"]
    assert completion.content == "Paris is sunny today [1]."
    assert completion.extras == {
        "completion_id": "chatcmpl-AaZr4extras",
        "annotations": message["annotations"],
        "function_call": message["function_call"],
        "audio": {"id": "audio_abc123", "transcript": "Paris is sunny today.", "expires_at": 1732003603},
    }


def test_options_are_sent_and_never_replace_the_model_or_the_messages(standin: OpenAIStandin) -> None:
    # Given generation settings that also try to override model, messages and stream
    options = {"max_completion_tokens": 64, "temperature": 0.2, "model": "x", "messages": [], "stream": True}
    # When the model is asked with them
    make_provider(standin).complete(MESSAGES, model="m", options=options)
    # Then the settings reach the model verbatim, and the call's own model and messages win
    sent = standin.requests[-1].json
    assert sent["max_completion_tokens"] == 64
    assert sent["temperature"] == 0.2
    assert sent["model"] == "m"
    assert sent["messages"] == MESSAGES
    assert "stream" not in sent


# -- what is sent --------------------------------------------------------------------------------------


def test_bookkeeping_keys_are_never_sent_to_the_model(standin: OpenAIStandin) -> None:
    """Contract: tokens/pinned/message_id/seq stay with us; tool_calls and tool results are sent intact."""
    # Given a window that carries bookkeeping keys, a tool call and its result
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    window: list[dict[str, Any]] = [
        {"role": "system", "content": "sys", "pinned": True, "tokens": 3, "name": None},
        {"role": "user", "content": "hi", "message_id": "01J", "seq": 1, "tokens": 2},
        {"role": "assistant", "content": None, "tool_calls": [call], "seq": 2, "status": "ok"},
        {"role": "tool", "content": "42", "tool_call_id": "call_1", "seq": 3},
        {"role": "user", "content": "and then?", "seq": 4, "usage": {"prompt_tokens": 1}},
    ]
    # When the model is asked
    make_provider(standin).complete(window, model="m")
    # Then the server received only the OpenAI keys, in the same order
    assert standin.completion_requests[-1].json["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "42", "tool_call_id": "call_1"},
        {"role": "user", "content": "and then?"},
    ]


def test_api_key_is_sent_as_bearer_token(standin: OpenAIStandin) -> None:
    """API key from LLM_API_KEY reaches the provider as 'Authorization: Bearer'."""
    # Given a provider that requires a key and settings that have it
    standin.configure(api_key="sk-test-123")
    # When the model is asked
    completion = make_provider(standin, llm_api_key="sk-test-123").complete(MESSAGES, model="m")
    # Then the call succeeds and the header was sent
    assert completion.content
    assert standin.completion_requests[-1].headers["authorization"] == "Bearer sk-test-123"


def test_no_api_key_sends_no_authorization_and_401_is_not_retried(standin: OpenAIStandin) -> None:
    """API-2: a 401 is a failure with the provider's body, without retries, and no header is invented."""
    # Given a provider that requires a key and settings without one
    standin.configure(api_key="sk-test-123")
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin).complete(MESSAGES, model="m")
    # Then it fails once with 401 and the provider's message
    assert failed.value.status_code == 401
    assert "Incorrect API key" in failed.value.message
    assert "authorization" not in standin.completion_requests[-1].headers
    assert len(standin.completion_requests) == 1


def test_pooled_connection_is_reused_between_calls(standin: OpenAIStandin) -> None:
    """One HTTP client per process: warm calls reuse the open connection."""
    # Given two calls through the process's provider client
    provider = make_provider(standin)
    # When the model is asked twice
    provider.complete(MESSAGES, model="m")
    provider.complete(MESSAGES, model="m")
    # Then both requests arrived on the same client connection
    first, second = standin.completion_requests
    assert first.client_port == second.client_port


# -- retries -------------------------------------------------------------------------------------------


def test_api2_500_then_ok_is_retried(standin: OpenAIStandin) -> None:
    """A 500 is retried; the second answer is used."""
    # Given a provider that fails once with 500, then answers
    standin.set_mode("flaky", flaky_failures=1, flaky_status=500)
    # When the model is asked
    completion = make_provider(standin).complete(MESSAGES, model="m", time_budget_s=10)
    # Then the answer of the second attempt comes back, and the same request was sent twice
    assert completion.content == reply_text(MESSAGES)
    assert completion.attempts == 2
    first, second = standin.completion_requests
    assert first.json == second.json


def test_api2_500_always_fails_with_the_provider_body(standin: OpenAIStandin) -> None:
    """API-2: HTTP error -> ProviderFailed with status, headers and the provider's body as received."""
    # Given a provider that always answers 500
    standin.set_mode("error500")
    # When the model is asked with 2 retries allowed
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin, llm_max_retries=2).complete(MESSAGES, model="m", time_budget_s=10)
    # Then it failed after 3 attempts with the provider's full response recorded
    error = failed.value
    assert error.kind == "http_error"
    assert error.status_code == 500
    assert status_for(error) == 502
    assert "HTTP 500" in error.message
    assert "after 3 attempts" in error.message
    record = error.provider_response
    assert record["status_code"] == 500
    assert record["body"]["error"]["type"] == "server_error"
    assert record["headers"]["content-type"] == "application/json"
    assert record["truncated"] is False
    assert [a["status_code"] for a in record["attempts"]] == [500, 500, 500]
    assert len(standin.completion_requests) == 3
    json.dumps(record)  # JSON-ready, so it can be stored as is


def test_429_waits_for_retry_after_then_succeeds(standin: OpenAIStandin) -> None:
    """429 with Retry-After: the client waits that long before the retry (honoured within the budget)."""
    # Given a provider that answers 429 with 'Retry-After: 1' once, then answers
    standin.set_mode("flaky", flaky_failures=1, flaky_status=429, retry_after=1)
    # When the model is asked with enough budget
    completion = make_provider(standin).complete(MESSAGES, model="m", time_budget_s=10)
    # Then the second request came no earlier than Retry-After asked
    first, second = standin.completion_requests
    assert completion.attempts == 2
    assert second.received_at - first.received_at >= 0.95


def test_429_with_retry_after_beyond_the_budget_fails_at_once(standin: OpenAIStandin) -> None:
    """A retry that cannot finish in the budget is never started; the 429 is reported as received."""
    # Given a provider that asks to retry after 30 s
    standin.set_mode("error429", retry_after=30)
    # When the model is asked with a 3 s budget
    started = time.monotonic()
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin).complete(MESSAGES, model="m", time_budget_s=3)
    # Then it fails with the 429 after one request, without waiting out the Retry-After
    assert time.monotonic() - started < 3
    assert failed.value.status_code == 429
    assert failed.value.provider_response["headers"]["retry-after"] == "30"
    assert len(standin.completion_requests) == 1


def test_other_4xx_is_not_retried(standin: OpenAIStandin) -> None:
    """API-2: a 400 is the caller's problem; retrying cannot help."""
    # Given a provider that rejects the request
    standin.set_mode("bad_request")
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin, llm_max_retries=3).complete(MESSAGES, model="m")
    # Then exactly one request was made and the provider's message is in the error
    assert failed.value.status_code == 400
    assert "Invalid value for 'messages'" in failed.value.message
    assert len(standin.completion_requests) == 1


# -- timeouts and connection errors --------------------------------------------------------------------


def test_api2_timeout_is_bounded_by_the_time_budget(standin: OpenAIStandin) -> None:
    """API-2 timeout: a model that would take 30 s fails within the caller's 1.5 s budget, no retry."""
    # Given a provider that sleeps 30 s before answering
    standin.set_mode("slow", slow_seconds=30)
    # When the model is asked with a 1.5 s budget (and a 30 s per-attempt timeout)
    started = time.monotonic()
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin, llm_timeout_seconds=30).complete(MESSAGES, model="m", time_budget_s=1.5)
    # Then it failed as a timeout inside the budget, after a single request
    assert time.monotonic() - started < 1.5 + 1.0
    assert failed.value.kind == "timeout"
    assert failed.value.status_code is None
    assert "timed out" in failed.value.message
    assert len(standin.completion_requests) == 1


def test_timeout_is_retried_when_the_budget_allows(standin: OpenAIStandin) -> None:
    """A per-attempt timeout (LLM_TIMEOUT_SECONDS) is retried while time remains."""
    # Given a slow provider and a short per-attempt timeout with one retry and no overall budget
    standin.set_mode("slow", slow_seconds=5)
    provider = make_provider(standin, llm_timeout_seconds=0.4, llm_max_retries=1)
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        provider.complete(MESSAGES, model="m")
    # Then two attempts were made, both recorded as timeouts
    assert failed.value.kind == "timeout"
    assert [a["kind"] for a in failed.value.provider_response["attempts"]] == ["timeout", "timeout"]
    assert len(standin.completion_requests) == 2


def test_no_time_left_means_no_request(standin: OpenAIStandin) -> None:
    """A call with an exhausted budget fails at once instead of starting an attempt it cannot finish."""
    # Given a healthy provider
    provider = make_provider(standin)
    # When the model is asked with no time left
    with pytest.raises(ProviderFailed) as failed:
        provider.complete(MESSAGES, model="m", time_budget_s=0)
    # Then it failed as a timeout and nothing was sent
    assert failed.value.kind == "timeout"
    assert standin.completion_requests == []


def test_api2_connection_refused_is_retried_then_reported(closed_port: int) -> None:
    """API-2: nobody listening -> kind 'connection', status None, every attempt logged."""
    # Given a base URL on a port where nothing listens
    provider = OpenAICompatibleProvider(
        Settings(llm_base_url=f"http://127.0.0.1:{closed_port}/v1", llm_max_retries=1),
        backoff_base_seconds=0.02,
    )
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        provider.complete(MESSAGES, model="m", time_budget_s=10)
    drop()
    # Then it failed as a connection error after two attempts with the cause recorded
    error = failed.value
    assert error.kind == "connection"
    assert error.status_code is None
    assert "could not reach the model provider" in error.message
    assert "ConnectError" in error.provider_response["error"]
    assert len(error.provider_response["attempts"]) == 2


# -- malformed and oversized answers -------------------------------------------------------------------


def test_api2_malformed_body_is_reported_with_the_text_received(standin: OpenAIStandin) -> None:
    """API-2 malformed body: a 200 that is not JSON fails, not retried, body text kept."""
    # Given a provider that answers 200 with HTML
    standin.set_mode("malformed")
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin).complete(MESSAGES, model="m")
    # Then the failure is 'malformed' and carries the body as text
    error = failed.value
    assert error.kind == "malformed"
    assert error.status_code == 200
    assert "not JSON" in error.message
    assert error.provider_response["body"].startswith("<html>")
    assert error.provider_response["headers"]["content-type"] == "text/html"
    assert len(standin.completion_requests) == 1


def test_api2_json_without_choices_is_malformed(standin: OpenAIStandin) -> None:
    """API-2 malformed body: JSON without choices fails with the parsed JSON recorded."""
    # Given a provider that answers JSON with no choices
    standin.set_mode("no_choices")
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin).complete(MESSAGES, model="m")
    # Then the failure says so and keeps the JSON as received
    assert failed.value.kind == "malformed"
    assert "choices" in failed.value.message
    assert failed.value.provider_response["body"]["id"] == "chatcmpl-standin"


def test_api2_wrong_types_are_malformed(standin: OpenAIStandin) -> None:
    """API-2 malformed body: content that is a number, not text, is refused."""
    # Given a provider whose message content is a number
    standin.set_mode("wrong_types")
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin).complete(MESSAGES, model="m")
    # Then the failure names the field
    assert failed.value.kind == "malformed"
    assert "choices[0].message.content is int" in failed.value.message


def test_huge_success_body_is_cut_off_and_the_record_fits_an_item(standin: OpenAIStandin) -> None:
    """A 3 MB answer stops at the read limit (1 MB) and the recorded body is capped at 32 KB."""
    # Given a provider that answers 200 with a 3 MB body
    standin.set_mode("huge", huge_bytes=3_000_000)
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin).complete(MESSAGES, model="m")
    # Then it fails as too large, with a truncated body small enough for a DynamoDB item
    error = failed.value
    assert error.kind == "too_large"
    assert "LLM_MAX_RESPONSE_BYTES" in error.message
    record = error.provider_response
    assert record["truncated"] is True
    assert len(record["body"].encode()) <= MAX_RECORDED_BODY_BYTES
    assert len(json.dumps(record).encode()) < 40 * 1024
    assert len(standin.completion_requests) == 1


def test_large_error_body_is_truncated_in_the_record(standin: OpenAIStandin) -> None:
    """API-2: a 100 KB error body is kept as its first 32 KB, marked truncated."""
    # Given a provider that answers 500 with a 100 KB body
    standin.set_mode("huge_error", huge_bytes=100_000)
    # When the model is asked without retries
    with pytest.raises(ProviderFailed) as failed:
        make_provider(standin, llm_max_retries=0).complete(MESSAGES, model="m")
    # Then the status is kept and the body is the first 32 KB, marked truncated
    record = failed.value.provider_response
    assert failed.value.kind == "http_error"
    assert record["status_code"] == 500
    assert record["body"] == "E" * MAX_RECORDED_BODY_BYTES
    assert record["truncated"] is True
    assert record["body_bytes_read"] == 100_000


# -- small contracts -----------------------------------------------------------------------------------


def test_provider_satisfies_the_chat_provider_protocol(standin: OpenAIStandin) -> None:
    """Contract: OpenAICompatibleProvider is a ChatProvider."""
    # Given / When a provider is built
    provider = make_provider(standin)
    # Then it satisfies the protocol the service codes against
    assert isinstance(provider, ChatProvider)


def test_time_budget_comes_from_the_lambda_context_minus_a_margin() -> None:
    """The budget is the Lambda's remaining time minus a safety margin; None outside Lambda."""

    # Given a Lambda context with 10 s left
    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 10_000

    # When / Then the budget leaves the margin, and no context means no budget
    assert time_budget_from_context(Context(), safety_margin_s=2.5) == pytest.approx(7.5)
    assert time_budget_from_context(Context(), safety_margin_s=2.5, cap_s=5.0) == pytest.approx(5.0)
    assert time_budget_from_context(None) is None


def test_a_message_without_a_role_is_refused_before_any_request(standin: OpenAIStandin) -> None:
    """Programming errors are caught before the network: every message needs a role."""
    # Given a message list with a bad entry
    # When / Then the call is refused and nothing is sent
    with pytest.raises(ValueError, match="message 1"):
        make_provider(standin).complete([{"role": "user", "content": "a"}, {"content": "b"}], model="m")
    assert standin.completion_requests == []


def test_api14_a_stream_longer_than_one_attempts_timeout_is_not_cut(standin: OpenAIStandin) -> None:
    """A streamed reply may outlast LLM_TIMEOUT_SECONDS (it bounds the wait between chunks, not the
    stream): the whole reply arrives, every chunk handed over as it came."""
    # Given a model that streams for longer than the attempt timeout, pausing less than it per chunk
    standin.configure(chunk_delay=0.25)
    provider = make_provider(standin, llm_timeout_seconds=1.5, llm_max_retries=0)
    chunks: list[dict[str, Any]] = []
    started = time.monotonic()
    # When the model is asked for a stream
    completion = provider.complete(
        [{"role": "user", "content": "one two three four five six seven eight nine ten"}],
        model="m",
        on_chunk=chunks.append,
    )
    # Then the stream ran past the attempt timeout and the reply is whole
    assert time.monotonic() - started > 1.5
    assert completion.interrupted is None
    assert completion.finish_reason == "stop"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert text == completion.content
    assert completion.content.startswith("Stand-in reply")


# -- TLS trust (API-2) ----------------------------------------------------------------------------------


@pytest.fixture
def tls_provider(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An OpenAI-compatible endpoint on https://127.0.0.1 with a self-signed certificate: (base URL, the
    certificate's PEM file)."""
    answer = {
        "id": "tls-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14},
    }
    with TlsServer(tmp_path, answer) as server:
        yield f"{server.url}/v1", server.certificate
    drop()


def test_a_provider_with_its_own_certificate_is_trusted_once_ssl_cert_file_names_it(
    tls_provider: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """API-2: a self-hosted model behind a private CA: refused while only the default CAs are trusted,
    answered once SSL_CERT_FILE names its certificate, refused again when the variable is gone: each
    runtime's client reads the variables as they are when it is built."""
    base_url, certificate = tls_provider
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    def ask() -> str:
        drop()  # a fresh runtime, as a new Lambda environment has
        provider = OpenAICompatibleProvider(Settings(llm_base_url=base_url, llm_max_retries=0))
        return provider.complete(MESSAGES, model="gpt-4o-mini").content

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ProviderFailed) as untrusted:
        ask()
    assert "certificate" in str(untrusted.value).lower() or "ssl" in str(untrusted.value).lower()

    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
    assert ask() == "Paris."

    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(ProviderFailed):
        ask()
