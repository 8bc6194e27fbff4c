"""An optional customer-managed KMS key encrypts the table, queues and log groups, and each function may
use it exactly as far as it needs (template.yaml, KmsKeyArn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chat_local.template import load_yaml

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
KEY = {"Ref": "KmsKeyArn"}
NO_VALUE = {"Ref": "AWS::NoValue"}
WRITE_ACTIONS = {"kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"}


def _resources(kind: str) -> dict[str, dict[str, Any]]:
    resources = load_yaml(TEMPLATE)["Resources"]
    return {name: r for name, r in resources.items() if r["Type"] == kind}


def _only_with_key(value: Any) -> bool:
    return value == {"Fn::If": ["HasKmsKey", KEY, NO_VALUE]}


def test_the_table_queues_and_log_groups_use_the_key_only_when_one_is_given() -> None:
    """With KmsKeyArn empty nothing changes (AWS-managed encryption); with a key, each store names it."""
    template = load_yaml(TEMPLATE)
    assert template["Parameters"]["KmsKeyArn"]["Default"] == ""
    assert template["Conditions"]["HasKmsKey"] == {"Fn::Not": [{"Fn::Equals": [KEY, ""]}]}
    [table] = _resources("AWS::DynamoDB::Table").values()
    sse = table["Properties"]["SSESpecification"]
    assert sse["SSEEnabled"] is True
    assert _only_with_key(sse["KMSMasterKeyId"])
    queues = _resources("AWS::SQS::Queue")
    assert queues
    for name, queue in queues.items():
        assert _only_with_key(queue["Properties"]["KmsMasterKeyId"]), name
        assert queue["Properties"]["SqsManagedSseEnabled"] == {"Fn::If": ["HasKmsKey", NO_VALUE, True]}, name
    groups = _resources("AWS::Logs::LogGroup")
    assert len(groups) >= len(_resources("AWS::Serverless::Function"))
    for name, group in groups.items():
        assert _only_with_key(group["Properties"]["KmsKeyId"]), name


def _key_policy(function: dict[str, Any]) -> str:
    choices = [
        p["Fn::If"][1]["Ref"]
        for p in function["Properties"]["Policies"]
        if isinstance(p, dict) and p.get("Fn::If", [None])[0] == "HasKmsKey"
    ]
    assert len(choices) == 1
    return str(choices[0])


def _granted(function: dict[str, Any]) -> set[str]:
    actions: set[str] = set()
    for policy in function["Properties"]["Policies"]:
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            action = statement.get("Action", [])
            actions.update(action if isinstance(action, list) else [action])
    return actions


def test_each_function_may_use_the_key_as_far_as_it_writes() -> None:
    """Every function gets the key's policy only when a key is given: functions that only read the table
    may decrypt; functions that write (table, queues) may also encrypt and generate data keys."""
    policies = _resources("AWS::IAM::ManagedPolicy")
    statements = {name: p["Properties"]["PolicyDocument"]["Statement"] for name, p in policies.items()}
    for name, policy in policies.items():
        assert policy["Condition"] == "HasKmsKey", name
        assert all(s["Resource"] == KEY for s in statements[name]), name
    read = {a for s in statements["KmsKeyReadPolicy"] for a in s["Action"]}
    write = {a for s in statements["KmsKeyReadWritePolicy"] for a in s["Action"]}
    assert "kms:Decrypt" in read
    assert not read & WRITE_ACTIONS
    assert write >= WRITE_ACTIONS | {"kms:Decrypt"}
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
    writes |= {"sqs:SendMessage"}
    for name, function in _resources("AWS::Serverless::Function").items():
        expected = "KmsKeyReadWritePolicy" if _granted(function) & writes else "KmsKeyReadPolicy"
        assert _key_policy(function) == expected, name
