"""The single table: base PynamoDB model, key attributes, and binding to settings (name, region, endpoint)."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from pynamodb.attributes import DiscriminatorAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.connection import Connection, TableConnection
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from chat_core.errors import StoreUnavailable
from chat_core.runtime import for_settings
from chat_core.settings import Settings, get_settings


def _cause_error(exc: PynamoDBException) -> dict[str, Any]:
    response = getattr(exc.cause, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    return error if isinstance(error, dict) else {}


# PynamoDB reads `cause.response["Error"]` assuming a botocore ClientError; a read or connect timeout
# (botocore's ReadTimeoutError has `response = None`) made `cause_response_code` itself raise
# AttributeError inside every store module's error handling, turning a retryable timeout into a 500.
# Every store module imports this one, so the properties are made safe for all of them here.
PynamoDBException.cause_response_code = property(  # type: ignore[method-assign, assignment]
    lambda self: _cause_error(self).get("Code")
)
PynamoDBException.cause_response_message = property(  # type: ignore[method-assign, assignment]
    lambda self: _cause_error(self).get("Message")
)


CONTENTION_BASE_S: Final = 0.01
CONTENTION_CAP_S: Final = 0.4
_rng = random.Random()  # noqa: S311 - jitter, not crypto


def contention_backoff(attempt: int) -> float:
    """Seconds to wait before retrying a write another writer beat ("full jitter" exponential).

    Writers that lost a race spread out instead of retrying in lockstep, so each round has fewer
    contenders.
    """
    return _rng.uniform(0.0, min(CONTENTION_CAP_S, CONTENTION_BASE_S * 2.0 ** max(0, attempt)))


def wait_to_retry(attempt: int, deadline: float) -> bool:
    """Sleep `contention_backoff(attempt)` and return True; False at once (no sleep) when that pause
    would reach `deadline` (a `time.monotonic()` value): the caller gives up instead."""
    pause = contention_backoff(attempt)
    if time.monotonic() + pause >= deadline:
        return False
    time.sleep(pause)
    return True


class Gsi1(GlobalSecondaryIndex["TableItem"]):
    """Sparse index: only items that set gsi1pk/gsi1sk appear (live conversations, by updated_at)."""

    class Meta:
        index_name = "gsi1"
        projection = AllProjection()

    gsi1pk = UnicodeAttribute(hash_key=True)
    gsi1sk = UnicodeAttribute(range_key=True)


class TableItem(Model):
    """Every item of the table. Subclasses set a `discriminator=` and key builders as classmethods."""

    class Meta:
        table_name = "chat-history"
        region = "us-east-1"
        host: str | None = None
        max_retry_attempts = 3
        base_backoff_ms = 25

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    item_type = DiscriminatorAttribute(attr_name="type")
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    expires_at = TTLAttribute(null=True)

    gsi1 = Gsi1()

    @classmethod
    def _get_connection(cls) -> TableConnection:
        """The runtime's one connection to the table, for every item class (they share its keys and
        indexes). PynamoDB would build one per class, each with its own botocore client: tens of
        milliseconds of CPU apiece on a cold start, several per request."""
        return for_settings(bind()).resource(TABLE, new_table_connection)


def bind(settings: Settings | None = None) -> Settings:
    """Point the models at the configured table (idempotent; re-binds when the settings change).

    PynamoDB keeps a model's table on its class (`Meta`), so the binding is the classes' own state: it
    records the settings object it was made for, and follows whichever runtime is current (a test or the
    local server installing another runtime re-binds on the next store call, with fresh connections).
    """
    settings = settings or get_settings()
    meta: Any = TableItem.Meta
    bound: object = getattr(meta, "bound_settings", None)
    if bound is settings:
        return settings
    meta.table_name = settings.table_name
    meta.region = settings.region
    meta.host = settings.dynamodb_endpoint
    # PynamoDB hands these to botocore: "standard" retry mode with this many attempts in all.
    meta.max_retry_attempts = settings.dynamodb_max_attempts - 1
    meta.connect_timeout_seconds = settings.dynamodb_connect_timeout_seconds
    meta.read_timeout_seconds = settings.dynamodb_read_timeout_seconds
    meta.bound_settings = settings
    return settings


#: The runtime's connection to the table (`TableItem._get_connection`, `connection()`).
TABLE: Final = "store.base.table"


def new_table_connection(settings: Settings) -> TableConnection:
    """A connection to the table of `settings`, with its region, endpoint, retries and timeouts (built
    by PynamoDB from the bound `TableItem.Meta`, as it would build each class's own)."""
    bind(settings)
    TableItem._connection = None
    return super(TableItem, TableItem)._get_connection()


def connection(settings: Settings | None = None) -> Connection:
    """The low-level connection for TransactWrite: the models' own, so a process (or a runtime) has
    one DynamoDB client in all."""
    settings = bind(settings)
    return for_settings(settings).resource(TABLE, new_table_connection).connection


# DynamoDB error codes that mean "try again later", not "your request is wrong": what is left of them
# after botocore's retries becomes 503 store_unavailable with Retry-After.
TRANSIENT_ERROR_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionConflict",
        # A single-item write that meets a transaction on the same item (DynamoDB's own name for it).
        "TransactionConflictException",
        "TransactionInProgressException",
        "ReplicatedWriteConflictException",
    }
)
# Cancellation reasons of a TransactWriteItems that are about load, not about the request's conditions.
TRANSIENT_CANCELLATION_REASONS = frozenset(
    {"ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict", "RequestLimitExceeded"}
)


def transient_cause(exc: BaseException | None) -> str | None:
    """The DynamoDB error code (or connection failure) behind `exc` when retrying later could succeed.

    Follows `__cause__`/`__context__`, so a domain error raised from a store failure is recognised too.
    """
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, TransactWriteError):
            reasons = {r.code for r in current.cancellation_reasons if r is not None}
            if reasons & TRANSIENT_CANCELLATION_REASONS:
                return sorted(reasons & TRANSIENT_CANCELLATION_REASONS)[0]
        if isinstance(current, PynamoDBException) and current.cause_response_code in TRANSIENT_ERROR_CODES:
            return current.cause_response_code
        if isinstance(current, ClientError):
            code = str(current.response.get("Error", {}).get("Code", ""))
            if code in TRANSIENT_ERROR_CODES:
                return code
        if isinstance(current, BotoConnectionError | HTTPClientError):
            return type(current).__name__  # the endpoint could not be reached or did not answer in time
        # A store module may re-raise an error "from" itself: follow both links, each error once.
        pending += [current.__context__, current.__cause__]
        if isinstance(current, PynamoDBException) and isinstance(current.cause, BaseException):
            pending.append(current.cause)
    return None


def store_error(exc: Exception, message: str = "the database is busy; retry the request") -> Exception:
    """A DynamoDB failure that retrying later could fix, as StoreUnavailable (503); anything else as is.

    The one classification every store module raises with (`raise store_error(exc) from exc`): the
    transient codes and transport failures `transient_cause` knows, plus any other botocore-level
    failure (the request never got a DynamoDB answer). Anything else is a bug and stays itself.
    """
    cause = transient_cause(exc)
    if cause is None and isinstance(exc, BotoCoreError):
        cause = type(exc).__name__
    if cause is None:
        return exc
    return StoreUnavailable(message, cause=cause)


#: A BatchGetItem takes at most 100 keys; keys it leaves unprocessed (throttling) are asked again, at
#: most this many times in all.
BATCH_GET_KEYS: Final = 100
BATCH_GET_ATTEMPTS: Final = 4


def batch_get_wire(keys: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The items at (pk, sk) `keys` (at most BATCH_GET_KEYS), strongly consistent, as BatchGetItem answers
    them (DynamoDB's JSON: `records.MessageRecord.from_wire` or `TableItem.from_raw_data` read them);
    absent ones are left out. Keys DynamoDB leaves unprocessed are asked again, in the wire form it
    gives them back in, after `contention_backoff`; StoreUnavailable when some are still left.
    PynamoDB's and botocore's own errors propagate (callers map them with `store_error`)."""
    bind()
    table_connection = TableItem._get_connection()
    table = table_connection.table_name
    found: list[dict[str, Any]] = []
    pending: list[Any] = [{"pk": pk, "sk": sk} for pk, sk in keys]
    for attempt in range(BATCH_GET_ATTEMPTS):
        if attempt:
            time.sleep(contention_backoff(attempt))
        answer = table_connection.batch_get_item(pending, consistent_read=True)
        found.extend(answer.get("Responses", {}).get(table, []))
        pending = answer.get("UnprocessedKeys", {}).get(table, {}).get("Keys") or []
        if not pending:
            return found
    raise StoreUnavailable(
        f"{len(pending)} item(s) still unprocessed; retry the request", cause="unprocessed"
    )
