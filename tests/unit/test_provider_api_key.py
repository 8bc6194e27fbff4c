"""The model API keys (the chat model's, MEM-56 the embeddings model's) from SSM Parameter Store or
Secrets Manager (moto), sent to a real stand-in server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from chat_core.errors import ProviderFailed
from chat_core.llm.api_key import api_key_source
from chat_core.llm.client import OpenAICompatibleProvider
from chat_core.llm.embeddings_http import OpenAICompatibleEmbeddings
from chat_core.settings import Settings
from moto import mock_aws

from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import drop, install

KEY = "sk-from-aws-0123456789"
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "hello"}]
#: The chat model's address beside an embeddings address of its own: nothing listens there.
CHAT_URL = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIStandin]:
    with OpenAIStandin(api_key=KEY) as standin:
        yield standin


@pytest.fixture
def standin(server: OpenAIStandin) -> OpenAIStandin:
    server.configure(mode="ok", reset=True, api_key=KEY)
    return server


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield
    drop()


def provider_for(standin: OpenAIStandin, **settings: Any) -> OpenAICompatibleProvider:
    """A provider of these settings, in a runtime of them (which caches the key) installed for the test."""
    return OpenAICompatibleProvider(install(Settings(llm_base_url=standin.base_url, **settings)).settings)


def embedder_for(standin: OpenAIStandin, **settings: Any) -> OpenAICompatibleEmbeddings:
    """Embeddings at the stand-in as EMBEDDINGS_BASE_URL, the chat model at an address never asked."""
    config = Settings(llm_base_url=CHAT_URL, embeddings_base_url=standin.base_url, **settings)
    return OpenAICompatibleEmbeddings(install(config).settings)


def embeddings_requests(standin: OpenAIStandin) -> list[Any]:
    return [r for r in standin.requests if r.path.endswith("/embeddings")]


def test_key_from_ssm_secure_string_is_decrypted_and_sent(standin: OpenAIStandin, aws: None) -> None:
    """LLM_API_KEY_PARAMETER naming an SSM SecureString: decrypted and sent as the bearer token."""
    # Given the key in SSM as a SecureString
    boto3.client("ssm").put_parameter(Name="/chat/llm-api-key", Value=KEY, Type="SecureString")
    # When the model is asked
    completion = provider_for(standin, llm_api_key_parameter="/chat/llm-api-key").complete(
        MESSAGES, model="m"
    )
    # Then the provider accepted the key
    assert completion.content
    assert standin.completion_requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_ssm_key_is_cached_between_calls(standin: OpenAIStandin, aws: None) -> None:
    """The key is cached (max_age LLM_API_KEY_CACHE_SECONDS): a warm call does not read SSM again."""
    # Given a key read once from SSM
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name="/chat/llm-api-key", Value=KEY, Type="SecureString")
    provider = provider_for(standin, llm_api_key_parameter="/chat/llm-api-key")
    provider.complete(MESSAGES, model="m")
    # When the parameter changes and the model is asked again
    ssm.put_parameter(Name="/chat/llm-api-key", Value="sk-rotated", Type="SecureString", Overwrite=True)
    provider.complete(MESSAGES, model="m")
    # Then the cached key was still used
    assert standin.completion_requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_parameter_takes_precedence_over_the_plain_variable(standin: OpenAIStandin, aws: None) -> None:
    """When both LLM_API_KEY and LLM_API_KEY_PARAMETER are set, the parameter's value is used."""
    # Given the key in SSM and a stale LLM_API_KEY
    boto3.client("ssm").put_parameter(Name="llm-key", Value=KEY, Type="SecureString")
    provider = provider_for(standin, llm_api_key="sk-stale", llm_api_key_parameter="ssm:llm-key")
    # When the model is asked
    provider.complete(MESSAGES, model="m")
    # Then the parameter's key was sent
    assert standin.completion_requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_key_from_secrets_manager_by_name_with_json_secret(standin: OpenAIStandin, aws: None) -> None:
    """'secret:NAME' reads Secrets Manager; a JSON secret's api_key field is the key."""
    # Given a JSON secret holding the key
    boto3.client("secretsmanager").create_secret(
        Name="chat/llm", SecretString=json.dumps({"api_key": KEY, "note": "rotated monthly"})
    )
    # When the model is asked
    provider_for(standin, llm_api_key_parameter="secret:chat/llm").complete(MESSAGES, model="m")
    # Then the key inside the JSON was sent
    assert standin.completion_requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_key_from_secrets_manager_by_arn(standin: OpenAIStandin, aws: None) -> None:
    """An 'arn:aws:secretsmanager:...' reference reads the plain-string secret."""
    # Given a plain-string secret referenced by its ARN
    arn = boto3.client("secretsmanager").create_secret(Name="llm-plain", SecretString=KEY)["ARN"]
    # When the model is asked
    provider_for(standin, llm_api_key_parameter=arn).complete(MESSAGES, model="m")
    # Then the secret was sent as the key
    assert standin.completion_requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_missing_parameter_fails_clearly_without_calling_the_model(standin: OpenAIStandin, aws: None) -> None:
    """API-2: an unreadable key is a ProviderFailed ('configuration') naming the parameter; no request."""
    # Given a reference to a parameter that does not exist
    provider = provider_for(standin, llm_api_key_parameter="/chat/missing")
    # When the model is asked
    with pytest.raises(ProviderFailed) as failed:
        provider.complete(MESSAGES, model="m")
    # Then the failure names the parameter and the model was never called
    assert failed.value.kind == "configuration"
    assert "/chat/missing" in failed.value.message
    assert "LLM_API_KEY_PARAMETER" in failed.value.message
    assert standin.completion_requests == []


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("/chat/llm-api-key", ("ssm", "/chat/llm-api-key", None)),
        ("ssm:llm-key", ("ssm", "llm-key", None)),
        ("secret:chat/llm", ("secretsmanager", "chat/llm", None)),
        (
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:llm-AbCdEf",
            (
                "secretsmanager",
                "arn:aws:secretsmanager:eu-west-1:123456789012:secret:llm-AbCdEf",
                "eu-west-1",
            ),
        ),
        (
            "arn:aws:ssm:eu-west-1:123456789012:parameter/chat/key",
            ("ssm", "arn:aws:ssm:eu-west-1:123456789012:parameter/chat/key", "eu-west-1"),
        ),
    ],
)
def test_parameter_reference_forms(reference: str, expected: tuple[str, str, str | None]) -> None:
    """LLM_API_KEY_PARAMETER forms: SSM name, ssm:, secret:, and ARNs (whose region is used)."""
    # Given / When a reference is classified / Then service, name and region are as documented
    assert api_key_source(reference) == expected


def test_mem56_embeddings_key_from_ssm_wins_over_the_plain_variable(
    standin: OpenAIStandin, aws: None
) -> None:
    """MEM-56: EMBEDDINGS_API_KEY_PARAMETER (an SSM SecureString) is decrypted and sent to
    EMBEDDINGS_BASE_URL, over EMBEDDINGS_API_KEY."""
    # Given the embeddings key in SSM, a stale EMBEDDINGS_API_KEY and a chat key of its own
    boto3.client("ssm").put_parameter(Name="/chat/embeddings-api-key", Value=KEY, Type="SecureString")
    embedder = embedder_for(
        standin,
        llm_api_key="sk-chat",
        embeddings_api_key="sk-stale",
        embeddings_api_key_parameter="/chat/embeddings-api-key",
    )
    # When a text is embedded
    answer = embedder.embed(["hello"], model="e5-passage")
    # Then the embeddings address accepted the parameter's key
    assert len(answer.vectors) == 1
    assert embeddings_requests(standin)[-1].headers["authorization"] == f"Bearer {KEY}"


def test_mem56_embeddings_key_from_a_json_secret(standin: OpenAIStandin, aws: None) -> None:
    """MEM-56: 'secret:NAME' in EMBEDDINGS_API_KEY_PARAMETER reads Secrets Manager; a JSON secret's
    EMBEDDINGS_API_KEY field is the key."""
    # Given a JSON secret holding the embeddings key
    boto3.client("secretsmanager").create_secret(
        Name="chat/embeddings", SecretString=json.dumps({"EMBEDDINGS_API_KEY": KEY, "note": "monthly"})
    )
    # When a text is embedded
    embedder_for(standin, embeddings_api_key_parameter="secret:chat/embeddings").embed(["a"], model="e5")
    # Then the key inside the JSON was sent
    assert embeddings_requests(standin)[-1].headers["authorization"] == f"Bearer {KEY}"


def test_mem56_the_chat_key_never_goes_to_the_embeddings_address(standin: OpenAIStandin, aws: None) -> None:
    """MEM-48, MEM-56: with EMBEDDINGS_BASE_URL and no embeddings key, the chat model's key (its
    parameter's, or LLM_API_KEY) is not sent there."""
    # Given the chat key in SSM and in LLM_API_KEY, and no key for the embeddings address
    standin.configure(api_key=None)
    boto3.client("ssm").put_parameter(Name="/chat/llm-api-key", Value=KEY, Type="SecureString")
    embedder = embedder_for(standin, llm_api_key="sk-chat", llm_api_key_parameter="/chat/llm-api-key")
    # When a text is embedded
    embedder.embed(["a"], model="e5")
    # Then the embeddings address got no key at all
    assert "authorization" not in embeddings_requests(standin)[-1].headers


def test_mem56_embeddings_parameter_is_not_read_at_the_chat_models_address(
    standin: OpenAIStandin, aws: None
) -> None:
    """MEM-56: without EMBEDDINGS_BASE_URL the embeddings go to the chat model with the chat model's key;
    EMBEDDINGS_API_KEY_PARAMETER is not read."""
    # Given the chat key as LLM_API_KEY and an embeddings parameter that does not exist
    settings = Settings(llm_base_url=standin.base_url, llm_api_key=KEY, embeddings_api_key_parameter="/none")
    # When a text is embedded
    OpenAICompatibleEmbeddings(install(settings).settings).embed(["a"], model="e5")
    # Then the chat model's key was sent
    assert embeddings_requests(standin)[-1].headers["authorization"] == f"Bearer {KEY}"


def test_mem56_missing_embeddings_parameter_fails_naming_it(standin: OpenAIStandin, aws: None) -> None:
    """MEM-56: an unreadable embeddings key is a ProviderFailed ('configuration') naming the parameter and
    EMBEDDINGS_API_KEY_PARAMETER; the embeddings model is not called."""
    # Given a reference to a parameter that does not exist
    embedder = embedder_for(standin, embeddings_api_key_parameter="/chat/missing-embeddings")
    # When a text is embedded
    with pytest.raises(ProviderFailed) as failed:
        embedder.embed(["a"], model="e5")
    # Then the failure names the parameter and its variable, and nothing was sent
    assert failed.value.kind == "configuration"
    assert "/chat/missing-embeddings" in failed.value.message
    assert "EMBEDDINGS_API_KEY_PARAMETER" in failed.value.message
    assert "LLM_API_KEY_PARAMETER" not in failed.value.message
    assert embeddings_requests(standin) == []
