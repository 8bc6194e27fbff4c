"""The local server's and CLI's own tests: the same fake AWS environment as the service's tests, and the
fixtures that start the real `chat-local-server` beside the stand-in model (tests/support/local_server.py)."""

import tests.support.fake_aws  # noqa: F401 - sets the environment before anything imports boto3

# isort: split
from collections.abc import Iterator
from typing import Any

import pytest
from chat_local.dynamodb import EmbeddedDynamoDB, dynamodb_client

from tests.support.local_server import api, model, server, standin

__all__ = ["api", "model", "server", "standin"]


@pytest.fixture(scope="module")
def store() -> Iterator[EmbeddedDynamoDB]:
    """An embedded moto DynamoDB server of the module's own (the embedded store's tests)."""
    embedded = EmbeddedDynamoDB().start()
    yield embedded
    embedded.stop()


@pytest.fixture(scope="module")
def client(store: EmbeddedDynamoDB) -> Any:
    """A DynamoDB client of `store`, with the local server's credentials."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_ACCESS_KEY_ID", "local")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "local")
        return dynamodb_client(store.endpoint, "us-east-1")
