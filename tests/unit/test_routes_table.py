"""functions/routes.py is the one list of functions: the template is what it generates (OPS-1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chat_local.template import load_yaml

from functions.routes import FUNCTIONS, TARGETS
from scripts.template_operations import HOOK, HOOK_FOLDER

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


def test_the_template_is_what_the_route_table_generates() -> None:
    """OPS-1: template.yaml's functions, log groups and shared policies are generated from the table; a
    hand edit of that region, or a table change without `make template`, fails here."""
    # Given the template and the route table
    # When the generator checks the template against the table
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_template.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    # Then nothing differs
    assert result.returncode == 0, result.stderr


def test_every_function_folder_has_one_entry_and_every_entry_a_folder() -> None:
    """OPS-1: a function folder the table does not list would never be deployed; an entry without a
    folder would deploy nothing."""
    # Given the function folders and the table
    # (the pre-traffic hook aside: the template's operations part deploys it, docs/operations.md)
    folders = {path.parent.name for path in (ROOT / "functions").glob("*/app.py")} - {HOOK_FOLDER}
    # When they are compared
    listed = [function.folder for function in FUNCTIONS]
    # Then each folder is listed exactly once
    assert sorted(listed) == sorted(folders)
    assert len({function.name for function in FUNCTIONS}) == len(FUNCTIONS)


def test_each_template_function_is_one_of_the_table() -> None:
    """OPS-1: the template holds the table's functions and, beside them, only the pre-traffic hook of the
    gradual deployments (OPS-7), each with its own log group."""
    # Given the template's resources
    resources = load_yaml(TEMPLATE)["Resources"]
    # When its functions are listed
    functions = {name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}
    # Then they are the table's, each logging to its own group
    assert functions == {f"{function.name}Function" for function in FUNCTIONS} | {HOOK}
    for function in FUNCTIONS:
        assert resources[f"{function.name}Logs"]["Type"] == "AWS::Logs::LogGroup"


def test_every_grant_names_a_known_target_and_qualified_actions() -> None:
    """OPS-1: a grant applies to a resource the generator knows, with service-qualified actions."""
    for function in FUNCTIONS:
        for grant in function.grants:
            assert grant.on in TARGETS or grant.on.startswith("queue:"), (function.name, grant.on)
            assert all(":" in action for action in grant.actions), (function.name, grant.actions)
