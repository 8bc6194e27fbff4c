"""Fixtures of the service tests: a moto table built from template.yaml, the offline or stand-in model."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import botocore.client
import pytest
from chat_local import moto_fidelity
from moto import mock_aws
from moto.core.botocore_stubber import BotocoreStubber

from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import drop, renew
from tests.support.table import create_table
from tests.support.usage_feed import UsageFeed

TABLE = "chat-history-it"


def _fresh(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    monkeypatch.setenv("TABLE_NAME", TABLE)
    for name in (
        "LLM_BASE_URL",
        "LLM_API_KEY",
        "LLM_API_KEY_PARAMETER",
        "DYNAMODB_ENDPOINT",
        "CURSOR_SECRET",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    renew()


@pytest.fixture
def chat_service(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty table (from template.yaml) in moto; the built-in offline model answers; the table's
    stream adds priced replies to the owners' usage before each read of it (`usage_feed`)."""
    _fresh(monkeypatch)
    moto_fidelity.install()
    moto_fidelity.reset()
    with mock_aws():
        create_table(TABLE)
        UsageFeed(TABLE).install(monkeypatch)
        yield
    drop()


@pytest.fixture(scope="session")
def _standin_server() -> Iterator[OpenAIStandin]:
    with OpenAIStandin(mode="ok") as server:
        yield server


@pytest.fixture
def standin_llm(
    chat_service: None, _standin_server: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> OpenAIStandin:
    """The service with LLM_BASE_URL at a real OpenAI-compatible server on 127.0.0.1 (no retries)."""
    _standin_server.configure(mode="ok", reset=True, slow_seconds=5.0)
    _fresh(
        monkeypatch,
        LLM_BASE_URL=_standin_server.base_url,
        LLM_API_KEY="sk-test",
        LLM_MAX_RETRIES="0",
        # Generous: on a busy machine the stand-in (a thread of this process) can take seconds to answer,
        # and a 1.5 s limit failed a concurrency test under load. Tests of a slow model bound the call by
        # the invocation's remaining time or set their own limit.
        LLM_TIMEOUT_SECONDS="20",
        LLM_CONNECT_TIMEOUT_SECONDS="5",
    )
    return _standin_server


@pytest.fixture
def dynamo_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every DynamoDB API call made (PynamoDB and boto3 both go through botocore's _make_api_call)."""
    calls: Counter[str] = Counter()
    original = botocore.client.BaseClient._make_api_call

    def counting(self: Any, operation_name: str, api_params: Any) -> Any:
        if self.meta.service_model.service_name == "dynamodb":
            calls[operation_name] += 1
        return original(self, operation_name, api_params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", counting)
    return calls


@pytest.fixture
def serialized_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto handle one request at a time, as DynamoDB applies each request atomically.

    moto's in-process backend is not thread-safe (a TransactWrite checks conditions and applies them
    in separate steps), so without this a concurrency test would test moto, not the service.
    """
    lock = threading.Lock()
    original = BotocoreStubber.__call__

    def atomic(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, event_name, request, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", atomic)
