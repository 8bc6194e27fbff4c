"""The client package's tests run against the real local server (`make run`'s `chat-local-server`) on
loopback, its model the stand-in OpenAI-compatible server: the same fixtures as the service's e2e tests."""

import tests.support.fake_aws  # noqa: F401 - sets the environment before anything imports boto3
from tests.support.local_server import model, server, standin

__all__ = ["model", "server", "standin"]
