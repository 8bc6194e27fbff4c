"""Every HTTP route of template.yaml (so routes added later are covered by the reliability suite too)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.support.table import template


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # as in the template: /conversations/{conversation_id}
    function: str  # logical id
    code_uri: str
    #: `Auth: {Authorizer: NONE}` in the template: served without identity (CON-1: the console's files).
    public: bool = False

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def params(self) -> list[str]:
        return re.findall(r"{([^}]+)}", self.path)

    def url(self, values: dict[str, str]) -> str:
        from urllib.parse import quote

        return re.sub(r"{([^}]+)}", lambda m: quote(values.get(m.group(1), "x"), safe=""), self.path)

    def __str__(self) -> str:
        return self.key


def http_routes() -> list[Route]:
    """Routes of every function with an HttpApi event, in template order."""
    found = []
    for logical_id, resource in template()["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        properties: dict[str, Any] = resource.get("Properties", {})
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            spec = event.get("Properties", {})
            found.append(
                Route(
                    str(spec.get("Method", "ANY")).upper(),
                    str(spec.get("Path", "/")),
                    logical_id,
                    str(properties.get("CodeUri", "")),
                    public=(spec.get("Auth") or {}).get("Authorizer") == "NONE",
                )
            )
    return found


def identified_routes() -> list[Route]:
    """The routes that need an identity (every route but the template's `Authorizer: NONE` ones)."""
    return [route for route in http_routes() if not route.public]
