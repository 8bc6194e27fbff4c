"""OPS-7: the pre-traffic hook as CodeDeploy runs it: the smoke test against the new versions the template
names, invoked with the direct payload (here the real handlers in-process, on moto's table, the offline
model answering), and its verdict reported for the deployment."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from chat_local.template import load_yaml

from functions.routes import BY_NAME
from scripts.template_operations import HOOK
from tests.support.agent_api import direct
from tests.support.lambda_context import LambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "arn:aws:lambda:us-east-1:123456789012:function"


class Functions:
    """Lambda's Invoke for the versions the hook names: each runs the function's real handler."""

    def __init__(self, broken: str | None = None) -> None:
        self.broken = broken
        self.invoked: list[str] = []

    def invoke(self, FunctionName: str, Payload: bytes) -> dict[str, Any]:  # boto3's parameter names
        name = FunctionName.split(":")[6].removesuffix("Function")
        self.invoked.append(name)
        if name == self.broken:
            error = {"errorMessage": "boom", "errorType": "RuntimeError"}
            return {"FunctionError": "Unhandled", "Payload": io.BytesIO(json.dumps(error).encode())}
        answer = direct(BY_NAME[name].folder, json.loads(Payload))
        return {"Payload": io.BytesIO(json.dumps(answer).encode())}


class CodeDeploy:
    def __init__(self) -> None:
        self.reports: list[dict[str, str]] = []

    def put_lifecycle_event_hook_execution_status(self, **report: str) -> None:
        self.reports.append(report)


@pytest.fixture
def hook(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The hook's module with the environment the template gives it (each version a version ARN)."""
    variables = load_yaml(ROOT / "template.yaml")["Resources"][HOOK]["Properties"]["Environment"]["Variables"]
    for key, value in variables.items():
        if isinstance(value, dict) and "Ref" in value:
            function = value["Ref"].removesuffix(".Version")
            value = f"{ACCOUNT}:{function}:7"
        monkeypatch.setenv(key, str(value) if isinstance(value, str) else "")
    code = ROOT / "functions" / "pre_traffic_hook"
    monkeypatch.syspath_prepend(str(code))
    spec = importlib.util.spec_from_file_location("pre_traffic_hook_app", code / "app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("smoke", None)


def _run(hook: ModuleType, functions: Functions, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    codedeploy = CodeDeploy()
    monkeypatch.setattr(hook, "_lambda", functions)
    monkeypatch.setattr(hook, "_codedeploy", codedeploy)
    event = {"DeploymentId": "d-ABC123", "LifecycleEventHookExecutionId": "exec-1"}
    hook.lambda_handler(event, LambdaContext(function_name="hook"))
    return codedeploy.reports


def test_a_working_release_passes_the_hook(hook: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPS-7: create, post, read, delete through the new versions: CodeDeploy is told Succeeded."""
    # Given new versions that work
    functions = Functions()
    # When CodeDeploy calls the hook before shifting traffic
    reports = _run(hook, functions, monkeypatch)
    # Then each smoke-tested function's new version answered, and the deployment may go on
    assert reports == [
        {"deploymentId": "d-ABC123", "lifecycleEventHookExecutionId": "exec-1", "status": "Succeeded"}
    ]
    assert set(functions.invoked) == {
        "CreateConversation",
        "PostMessage",
        "GetConversation",
        "DeleteConversation",
    }


def test_a_release_whose_read_fails_is_stopped_and_cleans_up(
    hook: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPS-7: a new version that raises fails the hook (CodeDeploy rolls back before any user reaches it),
    and the smoke test's conversation is deleted all the same."""
    # Given a release whose conversation read raises
    functions = Functions(broken="GetConversation")
    # When the hook runs
    reports = _run(hook, functions, monkeypatch)
    # Then CodeDeploy is told Failed, after the delete ran
    assert [r["status"] for r in reports] == ["Failed"]
    assert functions.invoked[-1] == "DeleteConversation"
