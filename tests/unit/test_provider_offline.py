"""The built-in offline model (no LLM_BASE_URL) and the per-process provider from get_provider."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chat_core.engine import tokens
from chat_core.llm.client import OpenAICompatibleProvider
from chat_core.llm.completion import ChatProvider
from chat_core.llm.offline import OFFLINE_MODEL_NAME, OFFLINE_REPLY_PREFIX, OfflineProvider
from chat_core.llm.provider import get_provider
from chat_core.settings import Settings

from tests.support.runtime import drop, install

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "My cat is called Miso."},
    {"role": "assistant", "content": "Nice name!"},
    {"role": "user", "content": "What is my cat called?"},
]


@pytest.fixture(autouse=True)
def fresh_runtime() -> Iterator[None]:
    yield
    drop()


def test_offline_reply_says_it_is_offline_and_shows_the_history_it_received() -> None:
    """LOC-1: without LLM_BASE_URL every reply says it comes from the offline model, and shows history."""
    # Given the offline model
    provider = OfflineProvider(Settings())
    # When it is asked with a four-message window
    completion = provider.complete(CONVERSATION, model="gpt-4o-mini")
    # Then the reply is marked offline, counts the messages, quotes the last and previous user messages
    assert completion.content.startswith(OFFLINE_REPLY_PREFIX)
    assert "LLM_BASE_URL" in completion.content
    assert "4 messages" in completion.content
    assert "“What is my cat called?”" in completion.content
    assert "“My cat is called Miso.”" in completion.content
    assert f"{completion.usage.prompt_tokens} tokens" in completion.content
    assert completion.offline is True
    assert completion.model == OFFLINE_MODEL_NAME
    assert completion.finish_reason == "stop"
    assert completion.tool_calls is None


def test_offline_usage_is_the_local_count_and_is_reported() -> None:
    """TOK-6 with the offline model: usage is filled from local counts and marked reported."""
    # Given the offline model
    provider = OfflineProvider(Settings())
    # When it answers
    completion = provider.complete(CONVERSATION, model="gpt-4o-mini")
    # Then usage is the local count of what it saw and of what it said
    usage = completion.usage
    if hasattr(tokens, "count_chat_tokens"):
        expected_prompt = tokens.count_chat_tokens(CONVERSATION, model="gpt-4o-mini")
        expected_reply = tokens.count_tokens(completion.content, "gpt-4o-mini")
    else:  # before TOK-2/TOK-4 land, the TOK-1 estimate is the local count
        expected_prompt = sum(tokens.estimate_message_tokens(m["content"]) for m in CONVERSATION)
        expected_reply = tokens.estimate_message_tokens(completion.content)
    assert usage.prompt_tokens == expected_prompt
    assert usage.completion_tokens == expected_reply
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert completion.usage_reported is True
    assert completion.raw["usage"] == usage.to_dict()


def test_offline_model_is_deterministic_and_ignores_bookkeeping_keys() -> None:
    """The offline model answers the same window the same way; bookkeeping keys change nothing."""
    # Given the same window with and without bookkeeping keys
    provider = OfflineProvider(Settings())
    decorated = [
        m | {"tokens": 99, "seq": i, "message_id": f"m{i}", "pinned": False}
        for i, m in enumerate(CONVERSATION)
    ]
    # When it is asked twice
    plain = provider.complete(CONVERSATION, model="gpt-4o-mini")
    again = provider.complete(decorated, model="gpt-4o-mini")
    # Then the answers are identical
    assert again.content == plain.content
    assert again.raw == plain.raw
    assert again.usage == plain.usage


def test_offline_reply_shortens_a_long_message_and_gives_its_length() -> None:
    """A 5000-character message is quoted short, with its length, so the reply stays readable."""
    # Given a very long user message
    long_text = "word " * 1000
    # When the offline model answers
    completion = OfflineProvider(Settings()).complete([{"role": "user", "content": long_text}], model="m")
    # Then the quote is cut and the full length is given
    assert "(5000 characters)" in completion.content
    assert len(completion.content) < 600
    assert "1 message (1 user)" in completion.content


def test_get_provider_is_offline_without_base_url_and_cached_per_process() -> None:
    """get_provider: offline model when LLM_BASE_URL is unset; one instance per runtime."""
    # Given a runtime of settings without a base URL
    settings = install(Settings(llm_base_url=None)).settings
    # When the provider is asked for twice
    first = get_provider(settings)
    second = get_provider(settings)
    # Then it is the offline model, the same instance, and a ChatProvider
    assert isinstance(first, OfflineProvider)
    assert second is first
    assert isinstance(first, ChatProvider)


def test_get_provider_uses_http_when_base_url_is_set_and_a_new_runtime_builds_another() -> None:
    """get_provider: OpenAI-compatible client with LLM_BASE_URL; a new runtime builds a new one."""
    # Given a runtime of settings with a base URL
    settings = install(Settings(llm_base_url="http://127.0.0.1:9/v1")).settings
    # When the provider is built, a new runtime of the same settings installed, and it is built again
    first = get_provider(settings)
    install(settings)
    second = get_provider(settings)
    # Then both are HTTP providers for that URL, and the new runtime gave a new instance
    assert isinstance(first, OpenAICompatibleProvider)
    assert first.url == "http://127.0.0.1:9/v1/chat/completions"
    assert second is not first


def test_get_provider_follows_changed_settings() -> None:
    """get_provider: different settings (e.g. a new LLM_BASE_URL in a test) give a matching provider."""
    # Given an offline provider already cached
    get_provider(Settings())
    # When settings with a base URL are passed
    provider = get_provider(Settings(llm_base_url="http://127.0.0.1:9/v1"))
    # Then the HTTP provider is returned, not the cached offline one
    assert isinstance(provider, OpenAICompatibleProvider)
