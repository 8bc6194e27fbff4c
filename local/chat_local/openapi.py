"""Serving the OpenAPI document: the Swagger UI page. The document itself comes from the layer
(`chat_core.http.openapi_doc.build_openapi`); the local server keeps no contract of its own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


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
