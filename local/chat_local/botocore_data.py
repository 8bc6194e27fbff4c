"""botocore's data files read once per process instead of once per botocore session, and its event names
aliased once per process.

The local server builds several clients (DynamoDB, its streams, S3, SQS), moto loads the same service
models for its backends, and the functions' runtime opens a session of its own: each session's loader
lists the services on disk (a stat of every service's folder) and parses the service model, endpoints and
endpoint rule set JSON again, about a fifth of the server's start. The files are read-only package data
and botocore already shares one read among the clients of a session, so sharing it among sessions
changes nothing but the time. Likewise each session's event emitter works out the aliases of the same
few thousand built-in event names again (a pure function of the name), two fifths of making a session
and its first client. The tests install it too (each runtime a test builds opens a session).
Deployed functions never load this module.
"""

from __future__ import annotations

import threading
from typing import Any

from botocore import hooks, loaders

_parsed: dict[str, Any] = {}
_listed: dict[tuple[tuple[str, ...], str], list[str]] = {}
_lock = threading.Lock()
#: Event name -> its aliased name, for emitters with botocore's own aliases (a dict: atomic item writes,
#: and every writer writes the same value).
_aliased: dict[str, str] = {}


def share_botocore_data() -> None:
    """`JSONFileLoader.load_file` returns the first parse of each path, `Loader.list_available_services`
    the first listing of each search path and type, and every `EventAliaser` with botocore's aliases
    shares one cache of aliased names (idempotent)."""
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

    aliaser_init = hooks.EventAliaser.__init__

    def init(self: hooks.EventAliaser, event_emitter: Any, event_aliases: Any = None) -> None:
        aliaser_init(self, event_emitter, event_aliases)
        if event_aliases is None:
            self._alias_name_cache = _aliased  # type: ignore[attr-defined]

    hooks.EventAliaser.__init__ = init  # type: ignore[method-assign]
