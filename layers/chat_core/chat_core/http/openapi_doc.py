"""The OpenAPI document of the whole API, written from the handlers' resolvers and the response models.

`build_openapi(routes, resolvers)` merges each function's Powertools resolver schema (request models,
parameters), keeps exactly the routes the template serves, and `document_responses` then writes every
operation's real statuses and bodies from `chat_core.http.route_answers` (REL-7, API-9). The local dev
server serves the result at /openapi.json; nothing of it runs in a deployed function.
"""

from __future__ import annotations

import copy
import inspect
import logging
import re
import typing
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from aws_lambda_powertools.event_handler.openapi.dependant import get_dependant
from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge
from aws_lambda_powertools.event_handler.openapi.params import Query as PowertoolsQuery
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from chat_core.http.answers import ErrorOut
from chat_core.http.query import Query
from chat_core.http.route_answers import ERROR_TEXT, RETRY_AFTER, ROUTES, WRITE

log = logging.getLogger(__name__)

_METHODS: Final = ("get", "put", "post", "delete", "patch", "head", "options")


TITLE = "Chat History Service"
DESCRIPTION = (
    "Durable multi-user chat history and context-window assembly for OpenAI-compatible models. "
    "Served locally by `make run`: identity comes from the `X-User-Id` header (dev mode only); "
    "a deployed API takes it from a JWT (`Authorization: Bearer ...`)."
)
SECURITY_SCHEMES: dict[str, Any] = {
    "LocalUser": {
        "type": "apiKey",
        "in": "header",
        "name": "X-User-Id",
        "description": "Local dev server only: the caller's user id (becomes the JWT `sub` claim).",
    },
    "Jwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "Deployed API."},
}


@dataclass(frozen=True)
class DocumentedRoute:
    """A route as the template declares it: METHOD ("ANY" for every method), path, the function serving it."""

    method: str
    path: str
    function: str


def path_parameter_names(path: str) -> list[str]:
    """`{conversation_id}`, `{file+}` -> the names of a route's path parameters (`file` for a greedy one)."""
    return [m.rstrip("+") for m in re.findall(r"\{([^}]+)\}", path)]


def resolver_schema(app: Any) -> dict[str, Any] | None:
    """The OpenAPI schema a function's Powertools resolver writes of its routes (None: no resolver)."""
    if app is None or not hasattr(app, "get_openapi_schema"):
        return None
    _document_query_parameters(app)
    schema = app.get_openapi_schema(title=TITLE)
    if hasattr(schema, "model_dump"):
        return dict(schema.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return dict(schema)


def _document_query_parameters(app: Any) -> None:
    """Let Powertools describe the routes whose query parameters `chat_core.http.query` reads: each such
    route's parameters as its own `Query` would declare them (the route itself is left as it is)."""
    for route in (*getattr(app, "_static_routes", ()), *getattr(app, "_dynamic_routes", ())):
        if getattr(route.func, "query_parameters", None) is None or route._dependant is not None:
            continue
        described = _with_powertools_queries(route.func.__wrapped__)
        route._dependant = get_dependant(path=route.openapi_path, call=described, responses=route.responses)


def _powertools_query(query: Query) -> Any:
    """Powertools' own `Query` with the same constraints."""
    return PowertoolsQuery(**{name: value for name, value in asdict(query).items() if value is not None})


def _with_powertools_queries(func: Any) -> Any:
    hints = typing.get_type_hints(func, include_extras=True)
    parameters = []
    for name, parameter in inspect.signature(func).parameters.items():
        hint = hints.get(name, parameter.annotation)
        if typing.get_origin(hint) is typing.Annotated:
            base, *extras = typing.get_args(hint)
            hint = typing.Annotated[
                base, *(_powertools_query(e) if isinstance(e, Query) else e for e in extras)
            ]
        parameters.append(parameter.replace(annotation=hint))

    def described(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    described.__name__ = func.__name__
    described.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=hints.get("return", inspect.Signature.empty)
    )
    return described


_SERVED_METHODS: Final = ("get", "post", "put", "patch", "delete", "head")


def build_openapi(
    routes: Sequence[DocumentedRoute], resolvers: Mapping[str, Any], *, version: str = "local"
) -> dict[str, Any]:
    """The API's OpenAPI document: every resolver's schema merged (Powertools OpenAPIMerge), each template
    route in it and no other, and each operation's responses as `route_answers` says.

    `resolvers` maps a function's logical id to its resolver (`app`). A route whose function exposes no
    resolver still appears, with its path parameters, so the document lists exactly what the template
    serves.
    """
    merge = OpenAPIMerge(
        title=TITLE,
        version=version,
        description=DESCRIPTION,
        security_schemes=SECURITY_SCHEMES,
        security=[{"LocalUser": []}, {"Jwt": []}],
        on_conflict="first",
    )
    for logical_id, app in resolvers.items():
        try:
            schema = resolver_schema(app)
        except Exception as exc:  # a broken resolver must not take the docs down
            log.warning("OpenAPI of %s could not be generated: %s", logical_id, exc)
            continue
        if schema is not None:
            merge.add_schema(schema)
    document: dict[str, Any] = merge.get_openapi_schema()
    paths = document.setdefault("paths", {})
    served = {(r.path, r.method.lower()) for r in routes}
    for route in routes:
        item = paths.setdefault(route.path, {})
        methods = (
            ["get", "post", "put", "patch", "delete"] if route.method == "ANY" else [route.method.lower()]
        )
        for method in methods:
            if method in item:
                continue
            item[method] = {
                "operationId": f"{route.function}_{method}",
                "summary": f"{route.method} {route.path} ({route.function})",
                "parameters": [
                    {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                    for n in path_parameter_names(route.path)
                ],
                "responses": {"default": {"description": "See the handler."}},
            }
    # Paths a resolver declares but the template does not route are not reachable: leave them out.
    for path in list(paths):
        for method in [m for m in paths[path] if m in _SERVED_METHODS]:
            if (path, method) not in served and not any(r.path == path and r.method == "ANY" for r in routes):
                del paths[path][method]
        if not any(m in paths[path] for m in _SERVED_METHODS):
            del paths[path]
    document["servers"] = [{"url": "/"}]
    # Each operation's real statuses and bodies (201/204, the one error shape, 502, 503 ...).
    document_responses(document)
    return document


def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """JSON Schemas of every response model, refs pointing into components/schemas."""
    models: list[type[BaseModel]] = [ErrorOut]
    for doc in ROUTES.values():
        models.append(doc.error_model)
        models += [doc.model] if doc.model is not None else []
        models += list(doc.also.values())
    unique = list(dict.fromkeys(models))
    refs, defs = models_json_schema(
        [(m, "serialization") for m in unique], ref_template="#/components/schemas/{model}"
    )
    return {m.__name__: refs[(m, "serialization")] for m in unique}, defs.get("$defs", {})


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": dict(schema)}}


def _error(status: int, error_ref: Mapping[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"description": ERROR_TEXT.get(status, "Error"), "content": _json(error_ref)}
    if status in (409, 429, 503):
        response["headers"] = {"Retry-After": {**RETRY_AFTER, "required": status in (429, 503)}}
    return response


def operation_responses(route_key: str, refs: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAPI `responses` of one route ("METHOD /path" as in template.yaml)."""
    doc = ROUTES.get(route_key)
    # The /v1 routes answer OpenAI's error shape (API-13).
    default_error = "OpenAIErrorOut" if route_key.split(" ", 1)[-1].startswith("/v1/") else "ErrorOut"
    error_ref = refs[doc.error_model.__name__ if doc is not None else default_error]
    if doc is None:
        # A route whose answer is not described field by field here (OpenAI's Response, Conversation
        # and item objects, RSP-1..RSP-7, as OpenAI's API reference describes them): a JSON object on
        # success, the error shape otherwise.
        responses: dict[str, Any] = {
            "2XX": {
                "description": "Success: the object OpenAI's API reference describes for this route",
                "content": _json({"type": "object"}),
            }
        }
        for status in (*WRITE, 405, 429, 502):
            responses[str(status)] = _error(status, error_ref)
        return responses
    success: dict[str, Any] = {"description": "Success"}
    if doc.model is not None:
        success["content"] = {doc.media_type: {"schema": dict(refs[doc.model.__name__])}}
    elif doc.media_type != "application/json":
        success["content"] = {m: {"schema": {"type": "string"}} for m in (doc.media_type, *doc.more_media)}
    if doc.headers:
        success["headers"] = copy.deepcopy(dict(doc.headers))
    responses = {str(doc.success): success}
    for status, model in doc.also.items():
        text = ERROR_TEXT.get(status, "Also success") if status >= 400 else "Success (nothing new stored)"
        if status in doc.errors and status != 502:
            # This status answers either the one error shape or this body (e.g. 503 reply_not_stored).
            response = _error(status, {"anyOf": [error_ref, refs[model.__name__]]})
            response["description"] = text
            responses[str(status)] = response
        else:
            responses[str(status)] = {"description": text, "content": _json(refs[model.__name__])}
    for status in doc.errors:
        responses.setdefault(str(status), _error(status, error_ref))
    return responses


def document_responses(document: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace every operation's responses with what the route really answers (in place; returned)."""
    refs, defs = _schemas()
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in defs.items():
        components[name] = schema
    for name in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        components.pop(name, None)
    for path, item in document.get("paths", {}).items():
        for method in [m for m in item if m in _METHODS]:
            route_key = f"{method.upper()} {path}"
            operation = item[method]
            operation["responses"] = operation_responses(route_key, refs)
            doc = ROUTES.get(route_key)
            if doc is None:
                continue
            if doc.request_body is not None and "requestBody" not in operation:
                operation["requestBody"] = copy.deepcopy(dict(doc.request_body))
            names = {(p.get("name"), p.get("in")) for p in operation.get("parameters", [])}
            for parameter in doc.parameters:
                if (parameter["name"], parameter["in"]) not in names:
                    operation.setdefault("parameters", []).append(dict(parameter))
    return document
