"""pytest plugin (pyproject's addopts): httpx clients made in a test process share one TLS context.

httpx builds a TLS context for every client, plain-HTTP ones included, and loading the CA bundle into it
costs tens of milliseconds of CPU (35 ms on the 2-core machine the suite is timed on). The tests make
thousands of short-lived clients (one per request in the golden recordings, the isolation and concurrency
checks, `httpx.get`), and building those contexts was about 7 % of the suite's CPU. Here a client asking
for httpx's default verification (`verify=True`, no client certificate) gets the context made for the same
`trust_env`, SSL_CERT_FILE and SSL_CERT_DIR, built by httpx's own function the first time; any other
configuration is built by httpx as before. Nothing here runs in the local servers, the CLI or the Lambda
functions (a Lambda function builds its provider client once per container); the Python client package
shares its context the same way (`chat_history_client`).
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx._config as httpx_config
import httpx._transports.default as httpx_transports

_original = httpx_config.create_ssl_context


@functools.lru_cache(maxsize=8)
def _default_context(trust_env: bool, cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return _original(verify=True, cert=None, trust_env=trust_env)


def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None:
        return _default_context(trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return _original(verify=verify, cert=cert, trust_env=trust_env)


httpx_transports.create_ssl_context = create_ssl_context  # type: ignore[assignment]
