"""boto3 clients for the tests' own calls to moto, made once per process: a client costs tens of
milliseconds of CPU to build, the tests building the table and reading its stream made three per test, and
moto intercepts a client's calls whenever it was made (its hook is on every botocore client)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3


@cache
def client(service: str, region: str = "us-east-1") -> Any:
    """The process's client of `service` in `region` (default credentials: the tests' fake ones)."""
    return boto3.client(service, region_name=region)  # type: ignore[call-overload]
