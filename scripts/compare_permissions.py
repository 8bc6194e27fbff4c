"""Each function's effective IAM permissions in two templates, compared (before/after a template change).

    python scripts/compare_permissions.py OLD.yaml [NEW.yaml]   # NEW defaults to template.yaml

A permission is (condition, action, resource): inline statements of the function's Policies, managed
policies of the template it references, and managed policies that attach themselves to its role (Roles).
A condition is the template condition under which it exists (HasKmsKey, ...), resources stay symbolic.
Exit 1 when a function gains a permission; losses are listed too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "local"))

from chat_local.template import load_yaml  # noqa: E402

Permission = tuple[str, str, str]


def _statements(policy: Any, condition: str, resources: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(policy, dict) and "Fn::If" in policy:
        name, then, otherwise = policy["Fn::If"]
        found = _statements(then, f"{condition}&{name}".strip("&"), resources)
        return found + _statements(otherwise, f"{condition}&!{name}".strip("&"), resources)
    if isinstance(policy, dict) and policy.get("Ref") == "AWS::NoValue":
        return []
    if isinstance(policy, dict) and "Ref" in policy:
        managed = resources[policy["Ref"]]
        own = managed.get("Condition", "")
        both = "&".join(c for c in (condition, own) if c)
        return [(both, s) for s in managed["Properties"]["PolicyDocument"]["Statement"]]
    if isinstance(policy, dict) and "Statement" in policy:
        return [(condition, s) for s in policy["Statement"]]
    raise SystemExit(f"unknown policy form: {policy}")


def permissions(path: Path) -> dict[str, set[Permission]]:
    """Function logical id -> its permissions."""
    resources = load_yaml(path)["Resources"]
    found: dict[str, set[Permission]] = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        statements = []
        for policy in resource["Properties"].get("Policies", []):
            statements += _statements(policy, "", resources)
        for managed_name, managed in resources.items():
            roles = managed.get("Properties", {}).get("Roles", [])
            if managed["Type"] == "AWS::IAM::ManagedPolicy" and {"Ref": f"{name}Role"} in roles:
                statements += _statements({"Ref": managed_name}, "", resources)
        found[name] = set()
        for condition, statement in statements:
            assert statement["Effect"] == "Allow", statement
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resource_text = json.dumps(statement["Resource"], sort_keys=True)
            condition = "&".join(sorted(set(filter(None, condition.split("&")))))
            found[name] |= {(condition, action, resource_text) for action in actions}
    return found


def main(argv: list[str]) -> int:
    old = permissions(Path(argv[0]))
    new = permissions(Path(argv[1]) if len(argv) > 1 else ROOT / "template.yaml")
    gained = 0
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name, set()), new.get(name, set())
        for permission in sorted(after - before):
            print(f"{name}: GAINED {permission}")
            gained += 1
        for permission in sorted(before - after):
            print(f"{name}: lost {permission}")
    same = sum(1 for name in old if old[name] == new.get(name))
    print(f"{len(old)} functions before, {len(new)} after; {same} with exactly the same permissions")
    return 1 if gained else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
