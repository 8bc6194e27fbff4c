"""template.yaml resolved as CloudFormation would for given parameters (conditions, Fn::If, AWS::NoValue),
other resources kept as the Ref/GetAtt naming them: what a stack of those parameters creates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chat_local.template import Resolver, load_yaml

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@dataclass
class Symbolic(Resolver):
    """Parameters and conditions resolve; other resources stay as the Ref/GetAtt that names them."""

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::") or name in self.parameters:
            return super().ref(name)
        return {"Ref": name}

    def get_att(self, logical_id: str, attribute: str) -> Any:
        return {"Fn::GetAtt": [logical_id, attribute]}


def deployed(**given: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The resources a stack of these parameters (over the defaults) creates, and its functions' global
    environment, resolved."""
    data = load_yaml(TEMPLATE)
    parameters = {name: spec.get("Default", "") for name, spec in data["Parameters"].items()}
    parameters.update(JwtIssuer="https://issuer.example", JwtAudience="client", **given)
    resolver = Symbolic(parameters, data["Conditions"], {}, {}, "us-east-1")
    resources = {
        name: resolver.resolve(resource)
        for name, resource in data["Resources"].items()
        if "Condition" not in resource or resolver.condition(resource["Condition"])
    }
    environment = resolver.resolve(data["Globals"]["Function"]["Environment"]["Variables"])
    assert not resolver.unresolved, resolver.unresolved
    return resources, environment
