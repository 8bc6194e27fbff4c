"""E2E fixtures: the real `chat-local-server` on a free port with the stand-in model beside it
(tests/support/local_server.py)."""

from tests.support.local_server import api, model, server, standin

__all__ = ["api", "model", "server", "standin"]
