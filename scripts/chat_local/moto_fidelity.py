"""DynamoDB's ClientRequestToken for moto's TransactWriteItems, which moto otherwise ignores.

DynamoDB keeps a transaction's token for 10 minutes after it succeeded: the same token with the same
request answers success again without applying anything; with another request it answers
IdempotentParameterMismatchException. botocore resends a transaction whose response was lost (read
timeout) with the same token, so without this a local store fails the resend's conditions where
DynamoDB would answer success. Installed by the local server's embedded store and by the tests.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import DynamodbException
from moto.dynamodb.responses import DynamoHandler

WINDOW_S = 600.0
#: Tokens remembered at most (oldest forgotten first): bounded memory for a long-running local server.
MAX_TOKENS = 50_000


class IdempotentParameterMismatch(DynamodbException):
    error_type = "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"

    def __init__(self) -> None:
        super().__init__(
            self.error_type,
            message="ClientRequestToken was used with a different TransactWriteItems request",
        )


_lock = threading.RLock()
_seen: OrderedDict[tuple[str, str, str], tuple[str, float]] = OrderedDict()
_original: Any = None


def _digest(body: dict[str, Any]) -> str:
    request = {k: v for k, v in body.items() if k != "ClientRequestToken"}
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


def _forget_old(now: float) -> None:
    while _seen:
        key, (_, at) = next(iter(_seen.items()))
        if now - at <= WINDOW_S and len(_seen) <= MAX_TOKENS:
            return
        del _seen[key]


def _transact_write_items(self: DynamoHandler) -> Any:
    token = self.body.get("ClientRequestToken")
    if not token:
        return _original(self)
    key = (self.current_account, self.region, str(token))
    digest = _digest(self.body)
    # One transaction with a token at a time: check, apply and remember without a gap between.
    with _lock:
        now = time.monotonic()
        _forget_old(now)
        seen = _seen.get(key)
        if seen is not None:
            if seen[0] != digest:
                raise IdempotentParameterMismatch()
            return ActionResult({})
        answer = _original(self)
        _seen[key] = (digest, now)
        return answer


def install() -> None:
    """Make moto honour ClientRequestToken on TransactWriteItems (idempotent; process-wide)."""
    global _original
    with _lock:
        if _original is None:
            _original = DynamoHandler.transact_write_items
            DynamoHandler.transact_write_items = _transact_write_items  # type: ignore[method-assign]


def reset() -> None:
    """Forget every token (a fresh store)."""
    with _lock:
        _seen.clear()
