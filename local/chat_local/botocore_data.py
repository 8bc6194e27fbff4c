"""botocore's data files read once per process instead of once per botocore session.

The local server builds several clients (DynamoDB, its streams, S3, SQS), moto loads the same service
models for its backends, and the functions' runtime opens a session of its own: each session's loader
lists the services on disk (a stat of every service's folder) and parses the service model, endpoints and
endpoint rule set JSON again, about a fifth of the server's start. The files are read-only package data
and botocore already shares one read among the clients of a session, so sharing it among sessions
changes nothing but the time. The tests install it too (each runtime a test builds opens a session).
Deployed functions never load this module.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore import loaders

_parsed: dict[str, Any] = {}
_listed: dict[tuple[tuple[str, ...], str], list[str]] = {}
_lock = threading.Lock()


def share_parsed_files() -> None:
    """`JSONFileLoader.load_file` returns the first parse of each path, and
    `Loader.list_available_services` the first listing of each search path and type (idempotent)."""
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

    listing = loaders.Loader.list_available_services

    def list_available_services(self: loaders.Loader, type_name: str) -> list[str]:
        key = (tuple(self.search_paths), type_name)
        with _lock:
            if key in _listed:
                return list(_listed[key])
        found = listing(self, type_name)
        with _lock:
            _listed.setdefault(key, list(found))
        return list(found)

    loaders.Loader.list_available_services = list_available_services  # type: ignore[method-assign]
