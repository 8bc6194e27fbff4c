"""The template's operations (OPS-6, OPS-7): every function, queue and stream mapping has its alarms, every
live alias shifts gradually behind the smoke test, and the runbook names every alarm."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chat_local.template import load_yaml

from functions.pre_traffic_hook import smoke
from functions.routes import FUNCTIONS
from scripts import template_operations

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_yaml(ROOT / "template.yaml")


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    resources = template["Resources"]
    return {k: r["Properties"] for k, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"}


def _watched(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric, dimensions) of every metric the alarm reads."""
    if "Metrics" not in alarm:
        dims = {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}
        return [(alarm["Namespace"], alarm["MetricName"], dims)]
    watched = []
    for query in alarm["Metrics"]:
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            watched.append((metric["Namespace"], metric["MetricName"], dims))
    return watched


def _watching(template: dict[str, Any], namespace: str, metric: str, **dims: Any) -> list[str]:
    return [
        name
        for name, alarm in _alarms(template).items()
        if any(n == namespace and m == metric and d.items() >= dims.items() for n, m, d in _watched(alarm))
    ]


def test_every_function_has_an_errors_and_a_throttles_alarm(template: dict[str, Any]) -> None:
    """OPS-6: each function of the route table is watched for errors and for throttles."""
    # Given the template's alarms
    for function in FUNCTIONS:
        ref = {"Ref": f"{function.name}Function"}
        # When the alarms on the function's metrics are looked up
        errors = _watching(template, "AWS/Lambda", "Errors", FunctionName=ref)
        throttles = _watching(template, "AWS/Lambda", "Throttles", FunctionName=ref)
        # Then both exist
        assert errors, f"no alarm on {function.name}'s errors"
        assert throttles, f"no alarm on {function.name}'s throttles"


def test_every_dead_letter_queue_alarms_on_one_message(template: dict[str, Any]) -> None:
    """OPS-6: a queue that a redrive policy or a stream mapping sends failures to alarms on any message."""
    # Given every failure destination in the template
    resources = template["Resources"]
    targets = set()
    for resource in resources.values():
        properties = resource.get("Properties") or {}
        redrive = properties.get("RedrivePolicy")
        if redrive:
            targets.add(redrive["deadLetterTargetArn"]["Fn::GetAtt"][0])
        for event in (properties.get("Events") or {}).values():
            destination = (event["Properties"].get("DestinationConfig") or {}).get("OnFailure")
            if destination:
                targets.add(destination["Destination"]["Fn::GetAtt"][0])
    assert len(targets) >= 4
    for queue in targets:
        # When the alarms on its depth are looked up
        name = {"Fn::GetAtt": [queue, "QueueName"]}
        alarms = _watching(template, "AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName=name)
        # Then one alarms at a single message
        assert alarms, f"no alarm on {queue}"
        assert any(_alarms(template)[a]["Threshold"] == 1 for a in alarms), queue


def test_every_stream_mapping_alarms_on_its_iterator_age(template: dict[str, Any]) -> None:
    """OPS-6: each function reading the table's stream is watched for falling behind."""
    resources = template["Resources"]
    readers = [
        name
        for name, r in resources.items()
        if r["Type"] == "AWS::Serverless::Function"
        and any(e["Type"] == "DynamoDB" for e in (r["Properties"].get("Events") or {}).values())
    ]
    assert readers
    for reader in readers:
        assert _watching(template, "AWS/Lambda", "IteratorAge", FunctionName={"Ref": reader}), reader


def test_the_api_table_and_model_alarms_watch_what_is_emitted(template: dict[str, Any]) -> None:
    """OPS-6: the HTTP API's 5xx and latency, the table's throttles and system errors, and the model's
    errors and latency under the namespace and `service` dimension chat_core's metrics carry."""
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    service = {"service": variables["POWERTOOLS_SERVICE_NAME"]}
    namespace = variables["POWERTOOLS_METRICS_NAMESPACE"]
    api = {"ApiId": {"Ref": "HttpApi"}}
    table = {"TableName": {"Ref": "Table"}}
    assert _watching(template, "AWS/ApiGateway", "5xx", **api)
    assert _watching(template, "AWS/ApiGateway", "Latency", **api)
    assert _watching(template, "AWS/DynamoDB", "ReadThrottleEvents", **table)
    assert _watching(template, "AWS/DynamoDB", "SystemErrors", **table)
    assert _watching(template, namespace, "ProviderErrors", **service)
    assert _watching(template, namespace, "ProviderLatency", **service)


def test_alarms_notify_the_topic_and_fit_cloudwatch_limits(template: dict[str, Any]) -> None:
    """OPS-6: every alarm notifies the alarm topic, reads at most 10 metrics (CloudWatch's limit for a
    metric-math alarm) and takes its threshold from a parameter with a default or a constant."""
    parameters = template["Parameters"]
    for name, alarm in _alarms(template).items():
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
        assert len(_watched(alarm)) <= 10, name
        threshold = alarm["Threshold"]
        if isinstance(threshold, dict):
            assert "Default" in parameters[threshold["Ref"]], name
        for query in alarm.get("Metrics", []):
            expression = query.get("Expression", {})
            for param in re.findall(r"\$\{(\w+)\}", str(expression)):
                assert "Default" in parameters[param], (name, param)


def test_every_live_alias_shifts_gradually_behind_the_smoke_test(template: dict[str, Any]) -> None:
    """OPS-7: each function publishing the live alias has a DeploymentPreference of DeploymentType
    (a canary by default), the pre-traffic hook, and its own errors alarm among its rollback alarms."""
    resources = template["Resources"]
    assert template["Parameters"]["DeploymentType"]["Default"] == "Canary10Percent5Minutes"
    assert "AllAtOnce" in template["Parameters"]["DeploymentType"]["AllowedValues"]
    aliased = [n for n, r in resources.items() if r["Properties"].get("AutoPublishAlias") == "live"]
    assert aliased
    for name in aliased:
        preference = resources[name]["Properties"]["DeploymentPreference"]
        assert preference["Type"] == {"Ref": "DeploymentType"}, name
        assert preference["Hooks"] == {"PreTraffic": {"Ref": template_operations.HOOK}}, name
        alarms = {a["Ref"] for a in preference["Alarms"]}
        own = _watching(template, "AWS/Lambda", "Errors", FunctionName={"Ref": name})
        assert alarms & set(own), f"{name}'s own errors alarm does not roll it back"
        assert "ApiServerErrorsAlarm" in alarms, name


def test_the_hook_invokes_the_new_version_of_each_smoke_tested_route(template: dict[str, Any]) -> None:
    """OPS-7: the hook's smoke test calls exactly the routes the template wires to new versions."""
    hook = template["Resources"][template_operations.HOOK]["Properties"]
    assert hook["FunctionName"]["Fn::Sub"].startswith("CodeDeployHook_")
    assert template_operations.SMOKE_ROUTES == smoke.ROUTES
    variables = hook["Environment"]["Variables"]
    for function in template_operations.smoke_functions().values():
        assert variables[f"SMOKE_VERSION_{function.name}"] == {"Ref": f"{function.name}Function.Version"}


def test_the_runbook_names_every_alarm(template: dict[str, Any]) -> None:
    """OPS-6: docs/operations.md has a section for each alarm, its logical id in the heading."""
    runbook = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    heading_lines = re.findall(r"^#+ .*$", runbook, flags=re.MULTILINE)
    headings = {name for line in heading_lines for name in re.findall(r"`(\w+Alarm)`", line)}
    missing = sorted(set(_alarms(template)) - headings)
    assert not missing, f"docs/operations.md has no section for {missing}"


def _sub(name: str) -> str:
    """How Fn::Sub names a resource or attribute: ${Name}."""
    return "${" + name + "}"


def test_the_dashboard_shows_every_function_queue_and_stream(template: dict[str, Any]) -> None:
    """OPS-6: the generated dashboard graphs each function, each queue's depth, each stream's lag and the
    model's latency, tokens and cost per day."""
    # Given the dashboard's body as CloudFormation substitutes it
    body = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    widgets = json.loads(body)["widgets"]
    rows = [row for w in widgets for row in w["properties"]["metrics"]]
    # When its metrics are read
    graphed = {(row[1], row[3]) for row in rows if isinstance(row[0], str) and len(row) > 3}
    expressions = [row[0]["expression"] for row in rows if isinstance(row[0], dict)]
    # Then every function, queue and stream mapping is on it
    for function in FUNCTIONS:
        assert ("Invocations", _sub(f"{function.name}Function")) in graphed, function.name
        assert ("Throttles", _sub(f"{function.name}Function")) in graphed, function.name
        if function.stream:
            assert ("IteratorAge", _sub(f"{function.name}Function")) in graphed, function.name
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::SQS::Queue":
            assert ("ApproximateNumberOfMessagesVisible", _sub(f"{name}.QueueName")) in graphed, name
    for metric in ("ProviderLatency", "PromptTokens", "CompletionTokens"):
        assert any(row[1] == metric for row in rows if isinstance(row[0], str)), metric
    assert any("DashboardInputPrice" in e for e in expressions)
