"""DynamoDB faults injected into botocore itself: the request never reaches moto, botocore sees a real
error response (or a connection failure) and runs its real retry policy on it."""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from moto.core.botocore_stubber import BotocoreStubber, MockRawResponse

# (HTTP status, __type namespace) DynamoDB answers each error code with.
ERRORS: dict[str, tuple[int, str]] = {
    "ProvisionedThroughputExceededException": (400, "com.amazonaws.dynamodb.v20120810"),
    "ThrottlingException": (400, "com.amazon.coral.availability"),
    "RequestLimitExceeded": (400, "com.amazonaws.dynamodb.v20120810"),
    "InternalServerError": (500, "com.amazonaws.dynamodb.v20120810"),
    "ServiceUnavailable": (503, "com.amazonaws.dynamodb.v20120810"),
}
# Errors botocore does not retry itself (the service must): a single-item write meeting a transaction.
NOT_RETRIED: dict[str, tuple[int, str]] = {
    "TransactionConflictException": (400, "com.amazonaws.dynamodb.v20120810"),
}
CONNECTION = "connection"  # no answer at all: EndpointConnectionError
READ_TIMEOUT = "read-timeout"  # connected, no answer in time: ReadTimeoutError
LOST_RESPONSE = "lost-response"  # the request is applied, then its answer is lost: ReadTimeoutError


@dataclass
class Rule:
    operation: str  # DynamoDB operation ("Query", "TransactWriteItems", ...) or "*"
    code: str  # a key of ERRORS, CONNECTION, or "TransactionCanceled:<reason>"
    skip: int  # let this many matching calls through first
    times: int | None  # then fail this many (None = every one)
    seen: int = 0
    when: bytes | None = None  # only requests whose body contains this

    def applies(self, operation: str, body: bytes = b"") -> bool:
        if self.operation not in ("*", operation):
            return False
        if self.when is not None and self.when not in body:
            return False
        self.seen += 1
        if self.seen <= self.skip:
            return False
        return self.times is None or self.seen - self.skip <= self.times


class DynamoFaults:
    """Rules that answer matching DynamoDB calls with an error; counts every call and every fault."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.calls: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()
        self._lock = threading.Lock()

    def fail(
        self,
        operation: str,
        code: str,
        *,
        times: int | None = None,
        skip: int = 0,
        when: str | None = None,
    ) -> DynamoFaults:
        """Fail matching calls; `when` limits the rule to requests whose body contains that text."""
        self.rules.append(Rule(operation, code, skip, times, when=when.encode() if when else None))
        return self

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    @property
    def total_injected(self) -> int:
        return sum(self.injected.values())

    def intercept(self, request: AWSPreparedRequest) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target") or b""
        target = target.decode() if isinstance(target, bytes) else str(target)
        if not target.startswith("DynamoDB_"):
            return None
        operation = target.rpartition(".")[2]
        with self._lock:
            self.calls[operation] += 1
            body = request.body if isinstance(request.body, bytes) else str(request.body or "").encode()
            rule = next((r for r in self.rules if r.applies(operation, body)), None)
            if rule is None:
                return None
            self.injected[operation] += 1
        if rule.code == CONNECTION:
            raise EndpointConnectionError(endpoint_url=request.url)
        if rule.code in (READ_TIMEOUT, LOST_RESPONSE):
            if rule.code == LOST_RESPONSE:
                return LOST
            raise ReadTimeoutError(endpoint_url=request.url)
        if rule.code.startswith("TransactionCanceled:"):
            reason = rule.code.split(":", 1)[1]
            body = {
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "Message": f"Transaction cancelled, please refer cancellation reasons [{reason}]",
                "CancellationReasons": [{"Code": reason, "Message": "injected"}, {"Code": "None"}],
            }
            return _response(request, 400, body)
        status, namespace = ERRORS.get(rule.code) or NOT_RETRIED[rule.code]
        return _response(request, status, {"__type": f"{namespace}#{rule.code}", "message": "injected fault"})


#: What `intercept` answers for a LOST_RESPONSE rule: apply the request, then lose its answer.
LOST: Any = object()


def _response(request: AWSPreparedRequest, status: int, body: dict[str, Any]) -> AWSResponse:
    headers = {"x-amzn-RequestId": str(uuid.uuid4()), "Content-Type": "application/x-amz-json-1.0"}
    raw = MockRawResponse(json.dumps(body).encode())
    return AWSResponse(request.url, status, headers, raw)  # type: ignore[arg-type]


@contextmanager
def injected(monkeypatch: pytest.MonkeyPatch, *, serialize: bool = True) -> Iterator[DynamoFaults]:
    """Install a DynamoFaults in front of moto (and make moto atomic per request, as DynamoDB is).

    botocore's backoff sleeps are skipped: the retry *count* is under test, not the waiting.
    """
    from botocore.retries import standard

    faults = DynamoFaults()
    lock = threading.Lock()
    original = BotocoreStubber.__call__

    def call(self: BotocoreStubber, event_name: str, request: AWSPreparedRequest, **kwargs: Any) -> Any:
        answer = faults.intercept(request)
        if answer is LOST:
            with lock:
                original(self, event_name, request, **kwargs)
            raise ReadTimeoutError(endpoint_url=request.url)
        if answer is not None:
            return answer
        if not serialize:
            return original(self, event_name, request, **kwargs)
        with lock:
            return original(self, event_name, request, **kwargs)

    monkeypatch.setattr(BotocoreStubber, "__call__", call)
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.0)
    yield faults
