"""The local server's and CLI's own tests: the same fake AWS environment as the service's tests, and the
fixtures that start the real `chat-local-server` beside the stand-in model (tests/support/local_server.py)."""

import tests.support.fake_aws  # noqa: F401 - sets the environment before anything imports boto3
from tests.support.local_server import api, model, server, standin

__all__ = ["api", "model", "server", "standin"]
