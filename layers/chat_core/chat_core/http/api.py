"""The HTTP edge shared by every function: resolver factory, caller identity, one error shape (DES-1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import content_types
from aws_lambda_powertools.event_handler.api_gateway import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import Response as Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError, ServiceError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from chat_core.engine.text import invalid_text_field
from chat_core.errors import (
    ChatError,
    ConversationBusy,
    InvalidInput,
    PayloadTooLarge,
    RequestInProgress,
    StoreUnavailable,
    Unauthorized,
)
from chat_core.http import conversation_ids, limits, query
from chat_core.http.direct_invocation import PLACEHOLDER, direct_event, direct_result
from chat_core.http.limits import MAX_IDEMPOTENCY_KEY_CHARS as MAX_IDEMPOTENCY_KEY_CHARS
from chat_core.http.statuses import status_for
from chat_core.observability import logger
from chat_core.settings import get_settings
from chat_core.store.base import transient_cause
from chat_core.store.keys import is_valid_owner

_MAX_REPORTED_ERRORS = 10


# One wording for every 401: deployed callers send a JWT; the local dev server (`make run`) maps X-User-Id.
NO_IDENTITY_MESSAGE = (
    "no caller identity: send a valid JWT (Authorization: Bearer ...); the local dev server takes X-User-Id"
)


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


def openai_error_body(status: int, code: str, message: str, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape, used on the /v1 routes (API-13): `{"error": {"message", "type", "param",
    "code"}}`, `type` "invalid_request_error" for 4xx and "server_error" for 5xx."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def openai_status(status: int) -> int:
    """OpenAI answers bad input with 400 where the rest of this API says 422."""
    return 400 if status == 422 else status


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response[Any]:
    """An error in the one shape of every 4xx/5xx (see `error_body`); /v1 routes use OpenAI's."""
    return json_response(status, error_body(code, message, details), headers)


def retry_after_header() -> dict[str, str]:
    """`Retry-After` (seconds) for answers that say "try again": 503 store_unavailable, 409 busy."""
    return {"Retry-After": str(get_settings().retry_after_seconds)}


# Errors a client should simply retry after a pause; they carry Retry-After.
_RETRYABLE = (StoreUnavailable, ConversationBusy, RequestInProgress)


class ChatResolver(APIGatewayHttpResolver):
    """The Powertools HTTP API resolver, plus the request-body size limit checked before any parsing,
    and direct invocation: a plain JSON payload (no API Gateway envelope) runs the same route.

    Direct payload (Step Functions, EventBridge, another Lambda; see `direct_event`)::

        {"user_id": "alice", "route"?: "POST /messages", "path_parameters"?: {...},
         "query"?: {...}, "headers"?: {...}, "body"?: <JSON value>}

    answered with `{"statusCode": int, "headers": {...}, "body": <parsed JSON, a list of JSONL lines,
    or null>}`. Identity is the payload's `user_id`: direct invocation is trusted, IAM decides who may
    invoke the function.
    """

    def __init__(self, *, enable_validation: bool = False, **kwargs: Any) -> None:
        # Before Powertools' own __init__, which may touch the event properties below.
        self._resolving = threading.local()
        # Validation is decided per route (PERF-1): Powertools' validating middlewares import pydantic, a
        # third of a handler's cold start. A route whose inputs are path parameters (plain strings) and
        # `chat_core.http.query.Query` parameters (read by hand) needs none; they are built when the first
        # route with a body or another kind of parameter registers, at import as before.
        super().__init__(enable_validation=False, **kwargs)
        self._enable_validation = enable_validation  # what the OpenAPI document describes (422s)
        #: (METHOD, rule) of every route registered on this app, for direct invocation.
        self.declared_routes: list[tuple[str, str]] = []

    # Powertools keeps the event being resolved, and its Lambda context, on its router *class*: one
    # value for every resolver in the process. A Lambda process runs one invocation at a time, but a
    # host that resolves several requests at once on threads (the local server does) would let one
    # request read another's event: its caller identity, its Idempotency-Key. Each thread keeps its own.
    @property
    def current_event(self) -> Any:
        return self._resolving.event

    @current_event.setter
    def current_event(self, value: Any) -> None:
        self._resolving.event = value

    @property
    def lambda_context(self) -> Any:
        return self._resolving.context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._resolving.context = value

    # The same holds for the resolution's own context (the matched route, its arguments): another
    # thread's request clears it when it ends, and a request still on its way would then fail (500)
    # reading its route back.
    @property
    def context(self) -> dict[str, Any]:
        found: dict[str, Any] | None = getattr(self._resolving, "route_context", None)
        if found is None:
            found = self._resolving.route_context = {}
        return found

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._resolving.route_context = value

    def route(self, rule: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        methods = (method,) if isinstance(method, str) else tuple(method)
        self.declared_routes.extend((str(m).upper(), rule) for m in methods)
        register = super().route(rule, method, *args, **kwargs)

        def register_validated_where_needed(func: Any) -> Any:
            parameters = query.declared(func, set(PLACEHOLDER.findall(rule)))
            target = func
            if parameters:  # path and query parameters only: read here, without pydantic
                target = query.with_query(func, parameters, self._query_string)
            validated = self._enable_validation and parameters is None
            if validated:
                self._build_validation_middlewares()
            register(target)
            for route in (*self._static_routes, *self._dynamic_routes):
                if route.func is target and route.enable_validation is None:
                    route.enable_validation = validated
            return func

        return register_validated_where_needed

    def _query_string(self) -> Mapping[str, str]:
        return self.current_event.query_string_parameters or {}

    def _build_validation_middlewares(self) -> None:
        if hasattr(self, "_request_validation_middleware"):
            return
        # What Powertools' __init__ builds under enable_validation=True, built once a route needs it.
        from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
            OpenAPIRequestValidationMiddleware,
            OpenAPIResponseValidationMiddleware,
        )

        self._request_validation_middleware = OpenAPIRequestValidationMiddleware()  # type: ignore[no-untyped-call]
        self._response_validation_middleware = OpenAPIResponseValidationMiddleware(
            validation_serializer=self._serializer,
            has_response_validation_error=self._has_response_validation_error,
        )

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if not isinstance(event, Mapping):
            return _refusal(400, "invalid_event", f"the event must be a JSON object; {SUPPORTED_EVENTS}")
        if is_direct(event):
            return self._resolve_direct(event, context)
        unsupported = unsupported_integration(event)
        if unsupported is not None:
            logger.warning("unsupported event shape", integration=unsupported)
            return _refusal(
                400,
                "unsupported_integration",
                f"this function does not take {unsupported} events; {SUPPORTED_EVENTS}",
            )
        try:
            limits.check_body_size(event)
        except PayloadTooLarge as exc:
            logger.info("request refused", code=exc.code, status=status_for(exc))
            return _refusal(status_for(exc), exc.code, exc.message)
        field = invalid_text_field(event)
        if field is not None:
            # Identity first, as for every other bad request.
            if _owner_in(event) is None:
                return _refusal(401, Unauthorized.code, NO_IDENTITY_MESSAGE)
            logger.info("request refused", code="invalid_text", field=field)
            return _refusal(
                400,
                "invalid_text",
                f"{field} is not valid Unicode text (it holds an unpaired surrogate such as \\ud800)",
            )
        content_type = limits.unreadable_content_type(event)
        if content_type is not None:
            if _owner_in(event) is None:
                return _refusal(401, Unauthorized.code, NO_IDENTITY_MESSAGE)
            message = f"a {content_type!r} body has no boundary; send the request body as application/json"
            return _refusal(415, "unsupported_media_type", message)
        event = conversation_ids.bare_event(event)
        self.current_event = self._to_proxy_event(dict(event))
        self.lambda_context = context
        return super().resolve(event, context)

    def _resolve_direct(self, payload: Mapping[str, Any], context: Any) -> dict[str, Any]:
        try:
            event = direct_event(payload, self.declared_routes, context)
        except ChatError as exc:
            logger.info("direct invocation refused", code=exc.code, status=status_for(exc))
            return {"statusCode": status_for(exc), "headers": {}, "body": error_body(exc.code, exc.message)}
        logger.info("direct invocation", route=event["routeKey"])
        return direct_result(self.resolve(event, context))


# -- direct invocation -------------------------------------------------------------------------------------


SUPPORTED_EVENTS = (
    "send it through an API Gateway HTTP API (payload format 2.0) or invoke it directly with a plain JSON "
    'payload such as {"user_id": "...", "body": {...}}'
)


def _refusal(status: int, code: str, message: str) -> dict[str, Any]:
    """An answer made before the resolver runs, in a shape HTTP API, REST API and ALB all accept."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(error_body(code, message), separators=(",", ":")),
        "isBase64Encoded": False,
        "cookies": [],
    }


def unsupported_integration(event: Mapping[str, Any]) -> str | None:
    """The integration that sent `event` when it is not an HTTP API payload 2.0 (None when it is)."""
    request_context = event.get("requestContext")
    if not isinstance(request_context, Mapping):
        return "unknown"
    if "elb" in request_context:
        return "Application Load Balancer"
    if isinstance(request_context.get("http"), Mapping) and event.get("version", "2.0") == "2.0":
        return None
    if "httpMethod" in event or event.get("version") == "1.0":
        return "API Gateway REST API (payload format 1.0)"
    return "unknown"


def _owner_in(event: Mapping[str, Any]) -> str | None:
    """The JWT `sub` of a raw HTTP API event, as `caller_or_none` reads it once the resolver runs."""
    try:
        sub = event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    except (KeyError, TypeError):
        return None
    return sub if isinstance(sub, str) and is_valid_owner(sub) else None


def is_direct(event: Any) -> bool:
    """True for a payload that did not come through API Gateway (no `requestContext`)."""
    return isinstance(event, Mapping) and "requestContext" not in event


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
        raise Unauthorized(NO_IDENTITY_MESSAGE)
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


#: Segments pydantic adds to an error's location for the branch of a union it tried ("str",
#: "list[tagged-union[...]]"): they name no field of the request, so they are left out.
_BRANCH_NAMES = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def _where(loc: Any) -> str:
    parts = [str(part) for part in (loc if isinstance(loc, list | tuple) else [loc])]
    parts = [part for part in parts if "[" not in part and part not in _BRANCH_NAMES]
    return ".".join(parts) or "request"


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    details: list[dict[str, Any]] = []
    seen: set[str] = set()
    for error in exc.errors():
        field = _where(error.get("loc"))
        if field in seen:
            continue  # one problem per field: a union's branches each report theirs
        seen.add(field)
        details.append({"field": field, "problem": str(error.get("msg", "invalid"))})
        if len(details) == _MAX_REPORTED_ERRORS:
            break
    return details


def build_app(*, openai_errors: bool = False) -> APIGatewayHttpResolver:
    """A resolver validating each route's inputs (Powertools for bodies, `chat_core.http.query` for query
    parameters) with every error mapped to one JSON shape in one place.

    With `openai_errors` (the /v1 routes, API-13) errors take OpenAI's shape
    `{"error": {"message", "type", "param", "code"}}` and bad input is 400, as OpenAI answers it.
    """
    app = ChatResolver(enable_validation=True)

    def respond(
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: Mapping[str, str] | None = None,
        param: str | None = None,
    ) -> Response[Any]:
        if not openai_errors:
            return error_response(status, code, message, details, headers)
        if param is None and details:
            param = str(details[0].get("field", "")).removeprefix("body.") or None
        status = openai_status(status)
        return json_response(status, openai_error_body(status, code, message, param), headers)

    def _domain_error(exc: ChatError) -> Response[Any]:
        status = status_for(exc)
        if status >= 500:
            logger.warning("request failed", code=exc.code, status=status, error=exc.message)
        else:
            logger.info("request refused", code=exc.code, status=status)
        headers = retry_after_header() if isinstance(exc, _RETRYABLE) else None
        if isinstance(exc.details.get("retry_after"), int):
            headers = {"Retry-After": str(exc.details["retry_after"])}  # COST-4, OPS-4: when it resets
        field = exc.details.get("field")
        return respond(
            status, exc.code, exc.message, headers=headers, param=str(field) if field is not None else None
        )

    def _invalid_request(exc: RequestValidationError) -> Response[Any]:
        # Identity comes first: an anonymous request with a bad body is still 401, not 422.
        if caller_or_none(app) is None:
            return respond(401, Unauthorized.code, NO_IDENTITY_MESSAGE)
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            reason = next(
                (e.get("ctx", {}).get("error") for e in errors if e.get("type") == "json_invalid"), None
            )
            return respond(
                400, "invalid_json", f"request body is not valid JSON ({reason or 'decode error'})"
            )
        details = _validation_details(exc)
        summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details)
        logger.info("request invalid", errors=details)
        return respond(422, "validation_error", f"invalid request: {summary}", details)

    def _unsupported(exc: RequestUnsupportedContentType) -> Response[Any]:
        if caller_or_none(app) is None:
            return respond(401, Unauthorized.code, NO_IDENTITY_MESSAGE)
        return respond(415, "unsupported_media_type", "send the request body as application/json")

    def _not_utf8(exc: UnicodeDecodeError) -> Response[Any]:
        # A body that is not UTF-8 (API Gateway passes it base64-encoded) cannot be JSON.
        if caller_or_none(app) is None:
            return respond(401, Unauthorized.code, NO_IDENTITY_MESSAGE)
        return respond(400, "invalid_json", "request body is not valid JSON (it is not UTF-8 text)")

    def _no_route(exc: NotFoundError) -> Response[Any]:
        # An id Powertools' router cannot match (control characters, ...) is still asked identity first.
        if caller_or_none(app) is None:
            return respond(401, Unauthorized.code, NO_IDENTITY_MESSAGE)
        event = app.current_event
        return respond(404, "route_not_found", f"no route for {event.http_method} {event.path}")

    def _service_error(exc: ServiceError) -> Response[Any]:
        return respond(exc.status_code, "http_error", str(exc.msg))

    def _unexpected(exc: Exception) -> Response[Any]:
        # Internal details go to the log with the correlation id, never to the client (DES-1).
        cause = transient_cause(exc)
        if cause is not None:
            # Throttling or an unreachable store that botocore's retries did not get past, on any
            # route (the conversation store maps its own; this catches the rest): the client may retry.
            logger.warning("store unavailable", cause=cause, error_type=type(exc).__name__)
            return respond(
                status_for(StoreUnavailable),
                StoreUnavailable.code,
                "the database is busy or unreachable; retry the request",
                headers=retry_after_header(),
            )
        logger.exception("unhandled error", error_type=type(exc).__name__)
        request_id = _request_id(app)
        suffix = f" (request id {request_id})" if request_id else ""
        return respond(500, "internal_error", f"internal error{suffix}; it has been logged")

    app.exception_handler(ChatError)(_domain_error)
    app.exception_handler(RequestValidationError)(_invalid_request)
    app.exception_handler(RequestUnsupportedContentType)(_unsupported)
    app.exception_handler(UnicodeDecodeError)(_not_utf8)
    app.exception_handler(NotFoundError)(_no_route)
    app.exception_handler(ServiceError)(_service_error)
    app.exception_handler(Exception)(_unexpected)
    return app
