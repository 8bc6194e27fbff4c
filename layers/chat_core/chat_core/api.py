"""The HTTP edge shared by every function: resolver factory, caller identity, one error shape (SPEC §9)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError, ServiceError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from chat_core import limits
from chat_core.errors import (
    ChatError,
    ConversationBusy,
    InvalidInput,
    PayloadTooLarge,
    RequestInProgress,
    StoreUnavailable,
    Unauthorized,
)
from chat_core.observability import logger
from chat_core.settings import get_settings
from chat_core.store.base import transient_cause
from chat_core.store.keys import is_valid_owner

MAX_IDEMPOTENCY_KEY_CHARS = 255
_MAX_REPORTED_ERRORS = 10


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response[Any]:
    """A JSON response (`None` body -> empty, for 204)."""
    extra = dict(headers) if headers else None
    if body is None:
        return Response(status_code=status, body="", headers=extra)
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        headers=extra,
    )


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`{"error": {"code", "message"[, "details"]}}` — the one shape of every 4xx/5xx."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return {"error": error}


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response[Any]:
    """An error in the one shape of every 4xx/5xx (see `error_body`)."""
    return json_response(status, error_body(code, message, details), headers)


def retry_after_header() -> dict[str, str]:
    """`Retry-After` (seconds) for answers that say "try again": 503 store_unavailable, 409 busy."""
    return {"Retry-After": str(get_settings().retry_after_seconds)}


# Errors a client should simply retry after a pause; they carry Retry-After.
_RETRYABLE = (StoreUnavailable, ConversationBusy, RequestInProgress)


class ChatResolver(APIGatewayHttpResolver):
    """The Powertools HTTP API resolver, plus the request-body size limit checked before any parsing."""

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        try:
            limits.check_body_size(event if isinstance(event, Mapping) else {})
        except PayloadTooLarge as exc:
            logger.info("request refused", code=exc.code, status=exc.status)
            return {
                "statusCode": exc.status,
                "headers": {"Content-Type": content_types.APPLICATION_JSON},
                "body": json.dumps(error_body(exc.code, exc.message), separators=(",", ":")),
                "isBase64Encoded": False,
                "cookies": [],
            }
        return super().resolve(event, context)


def caller_or_none(app: APIGatewayHttpResolver) -> str | None:
    """The caller's id from the JWT authorizer (`sub`), or None when absent or unusable."""
    try:
        claims = app.current_event.request_context.authorizer.jwt_claim
    except (AttributeError, KeyError, TypeError):
        return None
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) and is_valid_owner(sub) else None


def caller(app: APIGatewayHttpResolver) -> str:
    """The caller's id; Unauthorized (401) without one."""
    owner = caller_or_none(app)
    if owner is None:
        raise Unauthorized("no caller identity: send a valid JWT (Authorization: Bearer ...)")
    return owner


def idempotency_key(app: APIGatewayHttpResolver) -> str | None:
    """The `Idempotency-Key` header (API-6) or None; 400 when empty, too long or non-printable."""
    headers = app.current_event.headers or {}
    value = next((v for k, v in headers.items() if k.lower() == "idempotency-key"), None)
    if value is None:
        return None
    if not value or len(value) > MAX_IDEMPOTENCY_KEY_CHARS or not value.isprintable():
        raise InvalidInput(
            f"Idempotency-Key must be 1..{MAX_IDEMPOTENCY_KEY_CHARS} printable characters",
            field="Idempotency-Key",
        )
    return value


def _request_id(app: APIGatewayHttpResolver) -> str | None:
    context = getattr(app, "lambda_context", None)
    request_id = getattr(context, "aws_request_id", None)
    return request_id if isinstance(request_id, str) else None


def _where(loc: Any) -> str:
    parts = [str(part) for part in (loc if isinstance(loc, list | tuple) else [loc])]
    return ".".join(parts) or "request"


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    details = []
    for error in exc.errors()[:_MAX_REPORTED_ERRORS]:
        details.append({"field": _where(error.get("loc")), "problem": str(error.get("msg", "invalid"))})
    return details


def build_app() -> APIGatewayHttpResolver:
    """A resolver with pydantic validation and every error mapped to one JSON shape in one place."""
    app = ChatResolver(enable_validation=True)

    def _domain_error(exc: ChatError) -> Response[Any]:
        if exc.status >= 500:
            logger.warning("request failed", code=exc.code, status=exc.status, error=exc.message)
        else:
            logger.info("request refused", code=exc.code, status=exc.status)
        headers = retry_after_header() if isinstance(exc, _RETRYABLE) else None
        return error_response(exc.status, exc.code, exc.message, headers=headers)

    def _invalid_request(exc: RequestValidationError) -> Response[Any]:
        # Identity comes first: an anonymous request with a bad body is still 401, not 422.
        if caller_or_none(app) is None:
            return error_response(401, Unauthorized.code, "no caller identity: send a valid JWT")
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            reason = next(
                (e.get("ctx", {}).get("error") for e in errors if e.get("type") == "json_invalid"), None
            )
            return error_response(
                400, "invalid_json", f"request body is not valid JSON ({reason or 'decode error'})"
            )
        details = _validation_details(exc)
        summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details)
        logger.info("request invalid", errors=details)
        return error_response(422, "validation_error", f"invalid request: {summary}", details)

    def _unsupported(exc: RequestUnsupportedContentType) -> Response[Any]:
        if caller_or_none(app) is None:
            return error_response(401, Unauthorized.code, "no caller identity: send a valid JWT")
        return error_response(415, "unsupported_media_type", "send the request body as application/json")

    def _not_utf8(exc: UnicodeDecodeError) -> Response[Any]:
        # A body that is not UTF-8 (API Gateway passes it base64-encoded) cannot be JSON.
        if caller_or_none(app) is None:
            return error_response(401, Unauthorized.code, "no caller identity: send a valid JWT")
        return error_response(400, "invalid_json", "request body is not valid JSON (it is not UTF-8 text)")

    def _no_route(exc: NotFoundError) -> Response[Any]:
        event = app.current_event
        return error_response(404, "route_not_found", f"no route for {event.http_method} {event.path}")

    def _service_error(exc: ServiceError) -> Response[Any]:
        return error_response(exc.status_code, "http_error", str(exc.msg))

    def _unexpected(exc: Exception) -> Response[Any]:
        # Internal details go to the log with the correlation id, never to the client (SPEC §9).
        cause = transient_cause(exc)
        if cause is not None:
            # Throttling or an unreachable store that botocore's retries did not get past, on any
            # route (the conversation store maps its own; this catches the rest): the client may retry.
            logger.warning("store unavailable", cause=cause, error_type=type(exc).__name__)
            return error_response(
                StoreUnavailable.status,
                StoreUnavailable.code,
                "the database is busy or unreachable; retry the request",
                headers=retry_after_header(),
            )
        logger.exception("unhandled error", error_type=type(exc).__name__)
        request_id = _request_id(app)
        suffix = f" (request id {request_id})" if request_id else ""
        return error_response(500, "internal_error", f"internal error{suffix}; it has been logged")

    app.exception_handler(ChatError)(_domain_error)
    app.exception_handler(RequestValidationError)(_invalid_request)
    app.exception_handler(RequestUnsupportedContentType)(_unsupported)
    app.exception_handler(UnicodeDecodeError)(_not_utf8)
    app.exception_handler(NotFoundError)(_no_route)
    app.exception_handler(ServiceError)(_service_error)
    app.exception_handler(Exception)(_unexpected)
    return app
