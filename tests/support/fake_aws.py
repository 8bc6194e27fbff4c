"""Test-wide environment: fake AWS credentials, no real AWS endpoint ever reached (imported by every
conftest before anything imports boto3)."""

from __future__ import annotations

import os

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SECURITY_TOKEN", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
os.environ["AWS_REGION"] = "us-east-1"
os.environ["AWS_ACCOUNT_ID_ENDPOINT_MODE"] = "disabled"
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "chat-history")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "ChatHistory")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_DEV", "false")

# After the environment is set: botocore reads none of it at import, but nothing here should come first.
from chat_local.botocore_data import share_botocore_data

share_botocore_data()


def _share_clients() -> None:
    """One botocore client per (service, region, endpoint, credentials, configuration) in a test process.

    Every test builds a fresh runtime (`tests/support/runtime.py`), and each runtime built its own
    clients: tens of milliseconds of CPU each, a large share of a short test's cost. Clients hold no state
    of a test (moto's hook is on every client; the runtime's `close()` only drops pooled connections, which
    a later call opens again), so tests share them as a warm Lambda container shares its own.
    """
    import threading

    import botocore.session

    original = botocore.session.Session.create_client
    made: dict[tuple[object, ...], object] = {}
    lock = threading.Lock()

    def shared(self: botocore.session.Session, service_name: str, *args: object, **kwargs: object) -> object:
        config = kwargs.get("config")
        options = sorted((getattr(config, "_user_provided_options", None) or {}).items(), key=repr)
        others = sorted((k, v) for k, v in kwargs.items() if k != "config")
        # What the session reads from the environment at creation: endpoints (AWS_ENDPOINT_URL_*), region,
        # credentials. A test's local DynamoDB is often named there, not in the arguments.
        aws = sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))
        key = (
            service_name,
            args,
            repr(others),
            repr(options),
            repr(aws),
            repr(self.get_config_variable("region")),
        )
        with lock:
            client = made.get(key)
        if client is None:
            client = original(self, service_name, *args, **kwargs)
            with lock:
                made.setdefault(key, client)
        return client

    botocore.session.Session.create_client = shared  # type: ignore[method-assign]


_share_clients()


def bytecode_env() -> dict[str, str]:
    """For a child interpreter whose environment a test builds from nothing: the run's bytecode cache
    (PYTHONPYCACHEPREFIX, as the Makefile sets it) when there is one, else no bytecode written (never a
    __pycache__ beside the sources). Which modules load does not depend on it; the CPU of compiling the
    same sources in every child does."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    return {"PYTHONPYCACHEPREFIX": prefix} if prefix else {"PYTHONDONTWRITEBYTECODE": "1"}
