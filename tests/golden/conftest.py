"""Golden-file fixtures: the real `chat-local-server` beside the stand-in model
(tests/support/local_server.py)."""

from tests.support.local_server import api, model, server, standin

__all__ = ["api", "model", "server", "standin"]
