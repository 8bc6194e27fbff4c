"""OPS-4, OPS-5: the stack's abuse limits and access logs as template.yaml declares them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chat_local.template import load_yaml

from functions.routes import FUNCTIONS
from tests.support import functions

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


def _template() -> dict[str, Any]:
    return load_yaml(TEMPLATE)


def _stream_access_fields() -> tuple[str, ...]:
    """`ACCESS_FIELDS` of functions/stream_chat/app.py (importing it starts no server)."""
    return tuple(functions.load("stream_chat").ACCESS_FIELDS)


def test_the_stage_is_throttled_by_parameters() -> None:
    """OPS-4: every route of the HTTP API stage is throttled, by the two template parameters."""
    template = _template()
    settings = template["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert settings == {
        "ThrottlingRateLimit": {"Ref": "ThrottlingRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ThrottlingBurstLimit"},
    }
    for name in ("ThrottlingRateLimit", "ThrottlingBurstLimit"):
        assert int(template["Parameters"][name]["Default"]) >= 1


def test_reserved_concurrency_is_optional_and_only_on_the_functions_that_call_the_model() -> None:
    """OPS-4: the functions that call the model for a request take ModelFunctionReservedConcurrency, and
    none when it is empty or 0 (AWS::NoValue); no other function is reserved."""
    template = _template()
    resources = template["Resources"]
    assert template["Parameters"]["ModelFunctionReservedConcurrency"]["Default"] == ""
    expected = {f"{f.name}Function" for f in FUNCTIONS if f.calls_model and (f.http or f.function_url)}
    assert expected == {
        "PostMessageFunction",
        "ChatCompletionsFunction",
        "StreamChatFunction",
        "EditMessageFunction",
        "RegenerateMessageFunction",
        "ResponsesFunction",
    }
    reserved = {
        name
        for name, r in resources.items()
        if r["Type"] == "AWS::Serverless::Function" and "ReservedConcurrentExecutions" in r["Properties"]
    }
    assert reserved == expected
    for name in reserved:
        assert resources[name]["Properties"]["ReservedConcurrentExecutions"] == {
            "Fn::If": [
                "HasModelReservedConcurrency",
                {"Ref": "ModelFunctionReservedConcurrency"},
                {"Ref": "AWS::NoValue"},
            ]
        }


def test_the_rate_limit_reaches_every_function_off_by_default() -> None:
    """OPS-4: RATE_LIMIT_PER_MINUTE comes from RateLimitPerMinute, 0 (off) unless a deployment sets it."""
    template = _template()
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["RATE_LIMIT_PER_MINUTE"] == {"Ref": "RateLimitPerMinute"}
    assert int(template["Parameters"]["RateLimitPerMinute"]["Default"]) == 0


def test_the_access_log_is_json_with_the_fields_the_stream_function_writes() -> None:
    """OPS-5: the stage's access log is one JSON object per request, in its own log group kept as long as
    the functions' logs, and holds every field the streaming function's own access line has."""
    resources = _template()["Resources"]
    settings = resources["HttpApi"]["Properties"]["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["HttpApiAccessLogs", "Arn"]}
    line = json.loads(settings["Format"])
    assert set(_stream_access_fields()) <= set(line)
    assert line["requestId"] == "$context.requestId"
    assert line["caller"] == "$context.authorizer.claims.sub"
    group = resources["HttpApiAccessLogs"]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
