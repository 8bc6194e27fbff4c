"""botocore's data files parsed once per test process instead of once per botocore session.

Every runtime a test builds opens its own botocore session, and each session's loader parses the service
model, endpoints and endpoint rule set JSON again: about 40% of building a DynamoDB client, and most of an
integration test's CPU. The files are read-only package data and botocore already shares one parse among
the clients of a session, so sharing it among sessions changes nothing but the time; the product and the
local server's processes are untouched.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore import loaders

_parsed: dict[str, Any] = {}
_lock = threading.Lock()


def share_parsed_files() -> None:
    """Make `JSONFileLoader.load_file` return the first parse of each path (idempotent)."""
    original = loaders.JSONFileLoader.load_file
    if getattr(original, "shares_parsed_files", False):
        return

    def load_file(self: loaders.JSONFileLoader, file_path: str) -> Any:
        with _lock:
            if file_path in _parsed:
                return _parsed[file_path]
        data = original(self, file_path)
        if data is not None:
            with _lock:
                data = _parsed.setdefault(file_path, data)
        return data

    load_file.shares_parsed_files = True  # type: ignore[attr-defined]
    loaders.JSONFileLoader.load_file = load_file  # type: ignore[method-assign]
