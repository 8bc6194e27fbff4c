"""An optional customer-managed KMS key (template.yaml, KmsKeyArn) encrypts the table and its stream, the
queues and the log groups, and each function's role may use that key exactly as far as AWS documents it
needs to: kms:Decrypt for the table and stream (read or written: DynamoDB decrypts the table key on each
caller's behalf) and for a queue it receives from; kms:GenerateDataKey and kms:Decrypt for a queue it
sends to. Without a key nothing of this exists: AWS-managed encryption, no KMS statement anywhere.

The template is resolved for each case as CloudFormation would: parameters, conditions, Fn::If and
AWS::NoValue; resources keep their logical ids (Ref/GetAtt stay symbolic).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from chat_local.template import load_yaml

from tests.support.deployed import TEMPLATE, deployed

KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
DECRYPT = {"kms:Decrypt"}
SEND = {"kms:GenerateDataKey", "kms:Decrypt"}


def _deployed(kms_key_arn: str) -> dict[str, dict[str, Any]]:
    """The resources CloudFormation would create with KmsKeyArn set to `kms_key_arn`, resolved."""
    return deployed(KmsKeyArn=kms_key_arn)[0]


def _of_type(resources: dict[str, dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in resources.items() if r["Type"] == kind}


def _statements(
    resources: dict[str, dict[str, Any]], function: dict[str, Any], name: str = ""
) -> list[dict[str, Any]]:
    """Every statement the function's role gets: inline ones of its Policies, managed policies of this
    template it references, and managed policies of this template attached to its role (`Roles`; AWS
    managed policies by ARN or SAM policy templates carry no KMS)."""
    statements: list[dict[str, Any]] = []
    for policy in resources.values():
        if policy["Type"] == "AWS::IAM::ManagedPolicy" and {"Ref": f"{name}Role"} in policy["Properties"].get(
            "Roles", []
        ):
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    for policy in function["Properties"].get("Policies", []):
        if isinstance(policy, dict) and "Ref" in policy:
            referenced = resources[policy["Ref"]]
            assert referenced["Type"] == "AWS::IAM::ManagedPolicy", policy
            statements += referenced["Properties"]["PolicyDocument"]["Statement"]
        elif isinstance(policy, dict):
            statements += policy.get("Statement", [])
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement.get("Action", [])
    return set(action if isinstance(action, list) else [action])


def _needs(function: dict[str, Any], statements: list[dict[str, Any]]) -> set[str]:
    """The key actions a function's role needs, from what it does with the table and the queues."""
    granted = set().union(*(_actions(s) for s in statements))
    events = [e for e in function["Properties"].get("Events", {}).values()]
    needs: set[str] = set()
    if any(a.startswith("dynamodb:") for a in granted) or any(e["Type"] == "DynamoDB" for e in events):
        needs |= DECRYPT
    if any(e["Type"] == "SQS" for e in events):
        needs |= DECRYPT
    on_failure = [
        e["Properties"].get("DestinationConfig", {}).get("OnFailure", {}).get("Type") for e in events
    ]
    if any(a.startswith("sqs:SendMessage") for a in granted) or "SQS" in on_failure:
        needs |= SEND
    # API-17: reading an SSE-KMS object needs Decrypt; writing one GenerateDataKey too (S3 user guide,
    # "Using server-side encryption with AWS KMS keys").
    if "s3:GetObject" in granted:
        needs |= DECRYPT
    if "s3:PutObject" in granted:
        needs |= SEND
    return needs


def test_with_a_key_the_table_queues_and_log_groups_are_encrypted_with_it() -> None:
    """With KmsKeyArn given, the table (and so its stream and indexes), every queue and every function's
    log group name that key."""
    resources = _deployed(KEY)
    [table] = _of_type(resources, "AWS::DynamoDB::Table").values()
    assert table["Properties"]["SSESpecification"] == {
        "SSEEnabled": True,
        "SSEType": "KMS",
        "KMSMasterKeyId": KEY,
    }
    [bucket] = _of_type(resources, "AWS::S3::Bucket").values()
    (rule,) = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KEY}
    queues = _of_type(resources, "AWS::SQS::Queue")
    assert queues
    for name, queue in queues.items():
        assert queue["Properties"].get("KmsMasterKeyId") == KEY, f"queue {name} is not encrypted with the key"
        assert "SqsManagedSseEnabled" not in queue["Properties"], name
    groups = _of_type(resources, "AWS::Logs::LogGroup")
    for name, group in groups.items():
        assert group["Properties"].get("KmsKeyId") == KEY, f"log group {name} is not encrypted with the key"
    functions = _of_type(resources, "AWS::Serverless::Function")
    for name, function in functions.items():
        log_group = function["Properties"]["LoggingConfig"]["LogGroup"]
        assert log_group["Ref"] in groups, f"{name} logs to a group this template does not encrypt"


#: Functions that read no table item and no queue message (GET /v1/models lists configured names; the
#: console's files ship with their function, CON-1; the pre-traffic hook invokes functions, OPS-7).
NO_DATA = {"ListModelsFunction", "ServeConsoleFunction", "PreTrafficHook"}


def test_with_a_key_each_function_may_use_it_exactly_as_far_as_it_needs() -> None:
    """Every function that touches the table or a queue may use the key for exactly the actions that use
    needs (decrypt; data keys only where it sends to a queue), on that key's ARN and nothing else."""
    resources = _deployed(KEY)
    functions = _of_type(resources, "AWS::Serverless::Function")
    senders = set()
    for name, function in functions.items():
        statements = _statements(resources, function, name)
        kms = [s for s in statements if any(a.startswith("kms:") for a in _actions(s))]
        for statement in kms:
            assert statement["Effect"] == "Allow", name
            assert statement["Resource"] == KEY, f"{name}: KMS actions on {statement['Resource']}"
        granted = set().union(*(_actions(s) for s in kms))
        needs = _needs(function, statements)
        if name in NO_DATA:
            assert not kms, f"{name} reads no data and needs no key"
            continue
        assert needs, f"{name} touches neither the table nor a queue"
        assert granted == needs, f"{name}: granted {sorted(granted)} on the key, needs {sorted(needs)}"
        if "kms:GenerateDataKey" in needs:
            senders.add(name)
    # The stream-triggered functions send failed batches to their dead-letter queues; the posting
    # functions (and the edit and append routes, API-18/19) write content parts to the blob bucket.
    assert senders == {
        "SummarizeConversationFunction",
        "PurgeConversationFunction",
        "PostMessageFunction",
        "ChatCompletionsFunction",
        "StreamChatFunction",
        "EditMessageFunction",
        "AppendMessagesFunction",
        # RSP-2, RSP-6: the Responses turn and the Conversations items write content parts too.
        "ResponsesFunction",
        "OpenAIConversationsFunction",
        # RSP-12: the Responses turn over the WebSocket API is the same turn.
        "ResponsesSocketFunction",
        # DLG-6: the S3 export writes a file, an import's upload URL is signed with the creating
        # function's role, the start route and the worker send to the import queue.
        "ExportWorldToS3Function",
        "CreateImportFunction",
        "StartImportFunction",
        "RunImportFunction",
        # PRV-1..3: the erasure route and the user-data worker send to the user-data queue.
        "UserErasureFunction",
        "RunUserJobFunction",
        "UserExportsFunction",
        "UserImportsFunction",
    }


def test_without_a_key_nothing_names_kms() -> None:
    """With KmsKeyArn empty (the default) encryption stays AWS-managed, as before the parameter existed:
    no key on the table, SQS-managed encryption on the queues, no key on the log groups, and no KMS
    statement or policy in any role."""
    data = load_yaml(TEMPLATE)
    assert data["Parameters"]["KmsKeyArn"]["Default"] == ""
    resources = _deployed("")
    [table] = _of_type(resources, "AWS::DynamoDB::Table").values()
    assert table["Properties"]["SSESpecification"] == {"SSEEnabled": True}
    for name, queue in _of_type(resources, "AWS::SQS::Queue").items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True, name
        assert "KmsMasterKeyId" not in queue["Properties"], name
    for name, group in _of_type(resources, "AWS::Logs::LogGroup").items():
        assert "KmsKeyId" not in group["Properties"], name
    [bucket] = _of_type(resources, "AWS::S3::Bucket").values()
    (rule,) = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    for name, function in _of_type(resources, "AWS::Serverless::Function").items():
        for policy in function["Properties"].get("Policies", []):
            if isinstance(policy, dict) and "Ref" in policy:
                assert policy["Ref"] in resources, f"{name} references {policy['Ref']}, absent without a key"
    text = json.dumps(resources)
    assert "kms:" not in text, "a KMS action is granted although no key is given"
    assert "KmsKey" not in text, "the key parameter or a key policy is still referenced without a key"


@pytest.mark.parametrize("value", ["", KEY])
def test_the_key_parameter_accepts_an_empty_value_or_a_key_arn(value: str) -> None:
    """KmsKeyArn takes a key ARN (what log groups require; an alias would not do) or nothing."""
    pattern = load_yaml(TEMPLATE)["Parameters"]["KmsKeyArn"]["AllowedPattern"]
    assert re.fullmatch(pattern, value)
    assert not re.fullmatch(pattern, "alias/chat-history")
