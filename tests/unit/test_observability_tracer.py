"""PERF-1 (cold start): the service's Tracer is built on first use, and then traces exactly as Powertools'.

`chat_core.observability.tracer` is a `LazyTracer`: the handlers' `@tracer.capture_lambda_handler` and
`@tracer.capture_method` are applied at import without building Powertools' `Tracer` (which would load
the X-Ray SDK); the first call builds it and the real decorators do the tracing. A fake provider stands in
for the X-Ray recorder so what reaches the provider can be read back.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from aws_lambda_powertools import Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment
from chat_core.observability import LazyTracer


class _Segment(BaseSegment):
    def __init__(self, name: str) -> None:
        self.name = name
        self.annotations: dict[str, Any] = {}
        self.metadata: dict[str, Any] = {}

    def close(self, end_time: int | None = None) -> None:
        pass

    def add_subsegment(self, subsegment: Any) -> None:
        pass

    def remove_subsegment(self, subsegment: Any) -> None:
        pass

    def put_annotation(self, key: str, value: Any) -> None:
        self.annotations[key] = value

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.metadata[key] = value

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        pass


class _Provider(BaseProvider):
    """Records what the real Tracer asks of its provider (the X-Ray recorder in Lambda)."""

    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self.patched_all = 0
        self.patched: list[tuple[str, ...]] = []
        self.annotations: dict[str, Any] = {}

    @contextlib.contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[_Segment]:
        segment = _Segment(name or "")
        self.segments.append(segment)
        yield segment

    def in_subsegment_async(self, name: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError

    def put_annotation(self, key: str, value: Any) -> None:
        self.annotations[key] = value

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        pass

    def patch(self, modules: Sequence[str]) -> None:
        self.patched.append(tuple(modules))

    def patch_all(self) -> None:
        self.patched_all += 1


@pytest.fixture(autouse=True)
def _fresh_tracer_config() -> Iterator[None]:
    # Powertools keeps Tracer options on the class (shared by every instance): isolate each test.
    saved = copy.copy(Tracer._config)
    Tracer._reset_config()
    yield
    Tracer._config = saved


@pytest.fixture
def in_lambda_with_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Lambda gives a function with `Tracing: Active` (tests/conftest.py disables tracing)."""
    monkeypatch.delenv("POWERTOOLS_TRACE_DISABLED", raising=False)
    monkeypatch.delenv("AWS_SAM_LOCAL", raising=False)
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")


def test_decorating_a_handler_builds_no_tracer_until_it_is_invoked(in_lambda_with_tracing: None) -> None:
    """PERF-1: `@tracer.capture_lambda_handler` at import costs nothing; the first invocation traces."""
    # Given a lazy tracer over a recording provider, with tracing on as in Lambda
    provider = _Provider()
    tracer = LazyTracer(service="chat-history", provider=provider)

    # When a handler is decorated, as every functions/*/app.py does at import
    @tracer.capture_lambda_handler
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "body": event["body"]}

    # Then no Tracer exists yet and nothing reached the provider
    assert not tracer.built
    assert provider.segments == []
    assert provider.patched_all == 0

    # When it is invoked twice
    first = lambda_handler({"body": "one"}, None)
    second = lambda_handler({"body": "two"}, None)

    # Then the real Tracer was built once (auto-patching once) and traced both calls as Powertools does
    assert tracer.built
    assert (first, second) == ({"statusCode": 200, "body": "one"}, {"statusCode": 200, "body": "two"})
    assert provider.patched_all == 1
    assert [s.name for s in provider.segments] == ["## lambda_handler", "## lambda_handler"]
    assert provider.segments[0].annotations["Service"] == "chat-history"
    assert "ColdStart" in provider.segments[0].annotations
    assert provider.segments[1].metadata["lambda_handler response"] == {"statusCode": 200, "body": "two"}
    assert lambda_handler.__name__ == "lambda_handler"


def test_handler_errors_are_traced_and_still_raised(in_lambda_with_tracing: None) -> None:
    """PERF-1: an exception from the handler is recorded on its subsegment and propagates unchanged."""
    # Given a decorated handler that fails
    provider = _Provider()
    tracer = LazyTracer(service="chat-history", provider=provider)

    @tracer.capture_lambda_handler(capture_response=False)
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("boom")

    # When it is invoked
    # Then the error propagates and the subsegment carries it
    with pytest.raises(RuntimeError, match="boom"):
        lambda_handler({}, None)
    assert isinstance(provider.segments[0].metadata["lambda_handler error"], RuntimeError)


def test_capture_method_is_applied_by_the_real_tracer_on_first_call(in_lambda_with_tracing: None) -> None:
    """PERF-1: `@tracer.capture_method(capture_response=False)` (the post path's) traces when called."""
    # Given a method decorated with options, and one without
    provider = _Provider()
    tracer = LazyTracer(service="chat-history", provider=provider)

    @tracer.capture_method(capture_response=False)
    def post(owner: str, *, content: str) -> str:
        return f"{owner}:{content}"

    @tracer.capture_method
    def record(body: str) -> str:
        return body.upper()

    assert not tracer.built

    # When both are called
    posted = post("alice", content="hi")
    recorded = record("x")

    # Then each ran in its own subsegment named as Powertools names it, the options honoured
    assert (posted, recorded) == ("alice:hi", "X")
    names = [s.name for s in provider.segments]
    assert names[0].startswith("## tests.unit.test_observability_tracer.")
    assert names[0].endswith(".post")
    assert names[1].endswith(".record")
    assert provider.segments[0].metadata == {}
    assert provider.segments[1].metadata[f"{names[1][3:]} response"] == "X"


def test_other_tracer_calls_reach_the_real_tracer(in_lambda_with_tracing: None) -> None:
    """PERF-1: the rest of Tracer's API (`put_annotation`, `provider`...) builds and uses the real one."""
    # Given a lazy tracer
    provider = _Provider()
    tracer = LazyTracer(service="chat-history", provider=provider)

    # When an annotation is put before any handler ran
    tracer.put_annotation(key="conversation_id", value="c1")

    # Then it reached the provider through a real Tracer
    assert tracer.built
    assert tracer.real().provider is provider
    assert tracer.provider is provider
    assert provider.annotations == {"conversation_id": "c1"}


def test_disabled_tracing_still_runs_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """PERF-1: with POWERTOOLS_TRACE_DISABLED the handler runs as before and nothing is patched."""
    # Given tracing disabled (as locally and in tests)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    provider = _Provider()
    tracer = LazyTracer(service="chat-history", provider=provider)

    @tracer.capture_lambda_handler
    def lambda_handler(event: dict[str, Any], context: Any) -> str:
        return "ok"

    # When invoked
    # Then it answers, the real Tracer is disabled and patched nothing
    assert lambda_handler({}, None) == "ok"
    assert tracer.real().disabled
    assert provider.patched_all == 0


def test_the_service_tracer_patches_the_aws_clients_and_only_the_http_clients_imported(
    in_lambda_with_tracing: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PERF-1 (cold start): the Tracer patches botocore and PynamoDB, and httpx/requests only where the
    function imported them; X-Ray's patch_all would import every library it supports into every function."""
    # Given a process that imported httpx (a function that calls the model) and not requests
    import sys

    from chat_core import observability

    monkeypatch.setitem(sys.modules, "httpx", sys.modules.get("httpx") or object())
    monkeypatch.delitem(sys.modules, "requests", raising=False)
    provider = _Provider()
    tracer = LazyTracer(service="chat-history", provider=provider, patch=observability.traced_libraries)

    # When its first invocation builds the Tracer
    tracer.capture_lambda_handler(lambda event, context: {"statusCode": 200})({}, None)

    # Then only those libraries were patched, once, and patch_all never ran
    assert provider.patched == [("botocore", "pynamodb", "httpx")]
    assert provider.patched_all == 0

    # And a function that never imported httpx does not patch (so does not import) it
    monkeypatch.delitem(sys.modules, "httpx")
    assert observability.traced_libraries() == ("botocore", "pynamodb")
