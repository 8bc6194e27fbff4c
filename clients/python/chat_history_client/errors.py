"""The API's errors as exceptions: every 4xx/5xx body is `{"error": {"code", "message", "details"?}}`;
the exception class follows the status, `code` says exactly what went wrong."""

from __future__ import annotations

from typing import Any


class ChatHistoryError(Exception):
    """Anything this client raises."""


class TransportError(ChatHistoryError):
    """The service could not be reached (after the retries), or answered something that is not the API."""


class APIError(ChatHistoryError):
    """The service answered with an error: `status`, `code` (e.g. "message_too_long"), `message`,
    `details` (validation errors: one per field), `body` (the whole JSON body)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: list[dict[str, Any]] | None = None,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or []
        self.body = body
        self.retry_after = retry_after


class InvalidRequest(APIError):
    """400, 413, 415 or 422: the request was refused as given (`code` and `details` say why)."""


class AuthenticationError(APIError):
    """401 or 403: no identity, or one the service does not accept."""


class NotFound(APIError):
    """404: no such conversation or message for this caller (another user's is 404 too)."""


class Conflict(APIError):
    """409: the conversation is busy, a request with this Idempotency-Key is still running, or tool
    results are awaited."""


class RateLimited(APIError):
    """429: too many requests (retried first, honouring Retry-After)."""


class BudgetExceeded(RateLimited):
    """429 `budget_exceeded`: the caller reached a daily or monthly budget; nothing was stored. Not
    retried (the window resets hours away): `retry_after` says in how many seconds it does."""


class ModelError(APIError):
    """502: the model failed; `body` still carries the stored turn with the provider's error."""


class ServiceUnavailable(APIError):
    """503: the store is unavailable or a reply could not be stored (`body` carries it when so)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequest,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFound,
    409: Conflict,
    413: InvalidRequest,
    415: InvalidRequest,
    422: InvalidRequest,
    429: RateLimited,
    502: ModelError,
    503: ServiceUnavailable,
}


def api_error(status: int, body: Any, retry_after: float | None = None) -> APIError:
    """The exception for an error answer (`body` parsed JSON, or None when it was not JSON)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"code": "error", "message": f"HTTP {status}"}
    kind = _BY_STATUS.get(status, APIError)
    if status == 429 and error.get("code") == "budget_exceeded":
        kind = BudgetExceeded
    return kind(
        status,
        str(error.get("code") or "error"),
        str(error.get("message") or f"HTTP {status}"),
        details=error.get("details") if isinstance(error.get("details"), list) else None,
        body=body,
        retry_after=retry_after,
    )


class JobNotDone(ChatHistoryError, TimeoutError):
    """A job waited on (an export, an erasure) was not done by the deadline: `job` is its last state
    (ask again later; the job goes on without the client)."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class ImportFailed(ChatHistoryError, ValueError):
    """An import's file was refused (PRV-3) and nothing of it was written: `job.error` says what is wrong
    and where (`path`, a JSON pointer into the file)."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job
