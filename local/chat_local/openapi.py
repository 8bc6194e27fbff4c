"""One OpenAPI document for the whole local API, merged from each handler's Powertools resolver."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from chat_local.template import HttpRoute, path_parameter_names

log = logging.getLogger("chat_local.openapi")

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


def _resolver_schema(module: ModuleType) -> dict[str, Any] | None:
    app = getattr(module, "app", None)
    if app is None or not hasattr(app, "get_openapi_schema"):
        return None
    schema = app.get_openapi_schema(title=TITLE)
    if hasattr(schema, "model_dump"):
        return dict(schema.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return dict(schema)


def build_openapi(
    routes: Sequence[HttpRoute], modules: Mapping[str, ModuleType], *, version: str = "local"
) -> dict[str, Any]:
    """Merge every resolver's schema (Powertools OpenAPIMerge), then make sure each template route is in it.

    A route whose handler exposes no resolver still appears, with its path parameters, so the document
    always lists exactly what the template serves.
    """
    from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge

    merge = OpenAPIMerge(
        title=TITLE,
        version=version,
        description=DESCRIPTION,
        security_schemes=SECURITY_SCHEMES,
        security=[{"LocalUser": []}, {"Jwt": []}],
        on_conflict="first",
    )
    for logical_id, module in modules.items():
        try:
            schema = _resolver_schema(module)
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
                "operationId": f"{route.function.logical_id}_{method}",
                "summary": f"{route.method} {route.path} ({route.function.logical_id})",
                "parameters": [
                    {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                    for n in path_parameter_names(route.path)
                ],
                "responses": {"default": {"description": "See the handler."}},
            }
    # Paths a resolver declares but the template does not route are not reachable: leave them out.
    for path in list(paths):
        for method in [m for m in paths[path] if m in ("get", "post", "put", "patch", "delete", "head")]:
            if (path, method) not in served and not any(r.path == path and r.method == "ANY" for r in routes):
                del paths[path][method]
        if not any(m in paths[path] for m in ("get", "post", "put", "patch", "delete", "head")):
            del paths[path]
    document["servers"] = [{"url": "/"}]
    try:
        # Each operation's real statuses and bodies (201/204, the one error shape, 502, 503 ...).
        from chat_local.responses import document_responses

        document_responses(document)
    except Exception as exc:  # the docs must come up even if that module cannot load
        log.warning("OpenAPI responses could not be documented: %s", exc)
    return document


def swagger_page(document: Mapping[str, Any]) -> str:
    """Swagger UI with its JavaScript and CSS inlined from Powertools' bundled copy: no CDN needed."""
    from aws_lambda_powertools.event_handler.openapi import swagger_ui
    from aws_lambda_powertools.event_handler.openapi.swagger_ui import generate_swagger_html

    assets = Path(swagger_ui.__file__).parent
    js = (assets / "swagger-ui-bundle.min.js").read_text(encoding="utf-8")
    css = (assets / "swagger-ui.min.css").read_text(encoding="utf-8")
    spec = json.dumps(document, indent=2).replace("</", "<\\/")
    page = generate_swagger_html(spec, js, css, "", None, persist_authorization=True)
    # Powertools' page asks for `<path>?format=json`; the local server serves the same JSON there too.
    return page
