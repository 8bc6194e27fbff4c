"""MEM-56 (and the chat model's key beside it): the model API keys' read policies in template.yaml, each
on exactly the roles that read that key, for exactly the parameter or secret named, and only when one is."""

from __future__ import annotations

from typing import Any

import pytest

from functions.routes import FUNCTIONS
from tests.support.deployed import deployed

SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:embeddings-AbCdEf"
SSM_ARN = "arn:aws:ssm:us-east-1:123456789012:parameter"
EMBEDDERS = {f"{f.name}FunctionRole" for f in FUNCTIONS if f.embeds}
MODEL_KEY_READERS = {f"{f.name}FunctionRole" for f in FUNCTIONS if f.calls_model or f.embeds}


def _grants(resources: dict[str, dict[str, Any]], name: str) -> tuple[list[str], Any, set[str]]:
    """The actions, the resource and the roles of the managed policy `name`."""
    properties = resources[name]["Properties"]
    [statement] = properties["PolicyDocument"]["Statement"]
    return statement["Action"], statement["Resource"], {role["Ref"] for role in properties["Roles"]}


@pytest.mark.parametrize(
    ("name", "arn"),
    [("/chat/embeddings-api-key", "/chat/embeddings-api-key"), ("embeddings-key", "/embeddings-key")],
)
def test_mem56_the_functions_that_embed_read_the_embeddings_parameter(name: str, arn: str) -> None:
    # Given a stack whose embeddings key is an SSM parameter (a path, or a plain name)
    resources, environment = deployed(EmbeddingsApiKeySsmParameter=name)
    # Then the functions that embed, and they alone, may read that parameter and nothing else
    actions, resource, roles = _grants(resources, "EmbeddingsApiKeyParameterReadPolicy")
    assert actions == ["ssm:GetParameter"]
    assert resource == f"{SSM_ARN}{arn}"
    assert roles == EMBEDDERS
    assert "EmbeddingsApiKeySecretReadPolicy" not in resources
    # And they are told where to read it
    assert environment["EMBEDDINGS_API_KEY_PARAMETER"] == name


def test_mem56_the_embeddings_secret_wins_over_the_parameter() -> None:
    # Given both a secret and a parameter for the embeddings key
    resources, environment = deployed(
        EmbeddingsApiKeySecretArn=SECRET, EmbeddingsApiKeySsmParameter="/unused"
    )
    # Then the functions that embed may read the secret alone, and are told to
    actions, resource, roles = _grants(resources, "EmbeddingsApiKeySecretReadPolicy")
    assert (actions, resource, roles) == (["secretsmanager:GetSecretValue"], SECRET, EMBEDDERS)
    assert "EmbeddingsApiKeyParameterReadPolicy" not in resources
    assert environment["EMBEDDINGS_API_KEY_PARAMETER"] == SECRET


def test_mem56_without_a_stored_key_no_function_may_read_one() -> None:
    # Given a stack with no key in SSM or Secrets Manager
    resources, environment = deployed()
    # Then no policy grants reading either key
    granted = {
        action
        for r in resources.values()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
        for action in statement["Action"]
    }
    assert not granted & {"ssm:GetParameter", "secretsmanager:GetSecretValue"}
    assert environment["EMBEDDINGS_API_KEY_PARAMETER"] == ""


def test_the_chat_models_key_is_read_by_the_functions_that_call_or_embed_at_its_address() -> None:
    """MEM-48: without EmbeddingsBaseUrl the functions that embed send the chat model's key, so they may
    read it; the embeddings key's policies stay apart from it."""
    # Given the chat model's key in SSM and the embeddings key in a secret
    resources, _ = deployed(LlmApiKeySsmParameter="/chat/llm-api-key", EmbeddingsApiKeySecretArn=SECRET)
    # Then each is read by its own readers, on its own resource
    _, resource, roles = _grants(resources, "ModelApiKeyParameterReadPolicy")
    assert (resource, roles) == (f"{SSM_ARN}/chat/llm-api-key", MODEL_KEY_READERS)
    _, resource, roles = _grants(resources, "EmbeddingsApiKeySecretReadPolicy")
    assert (resource, roles) == (SECRET, EMBEDDERS)
    assert "BuildWindowFunctionRole" in EMBEDDERS
