"""chat_local.template: routes, tables and stream subscriptions come from template.yaml, nothing by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_local.template import TemplateError, load_template, load_yaml

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "local" / "tests" / "fixtures" / "local_app" / "template.yaml"


def test_every_spec_route_of_the_project_template_is_served() -> None:
    """API-8 / §8: the six routes of the API table come from template.yaml, each to its own function."""
    # When the project's template is read
    template = load_template(REPO / "template.yaml", region="us-east-1")
    # Then the API-8 routes are all there, mapped to handler files that exist
    routes = {r.route_key: r.function for r in template.routes}
    for key in (
        "POST /conversations",
        "POST /messages",
        "GET /conversations",
        "GET /conversations/{conversation_id}",
        "DELETE /conversations/{conversation_id}",
        "POST /conversations/{conversation_id}/window",
    ):
        assert key in routes, key
        assert routes[key].module_file.is_file()
    # One function per operation: a function serves several routes only as one operation's ways in
    # (API-21: create by key, read by key; CON-1: the console page and its files), or as one resource
    # family of OpenAI's API (RSP-2, RSP-6: a response, a conversation and their items), or the caller's
    # long-term facts, listed and deleted (MEM-32, MEM-33).
    by_function: dict[str, set[str]] = {}
    for key, function in routes.items():
        by_function.setdefault(function.logical_id, set()).add(key)
    shared = {name: keys for name, keys in by_function.items() if len(keys) > 1}
    assert shared == {
        "CreateConversationFunction": {"POST /conversations", "PUT /conversation-keys/{key}"},
        "GetConversationFunction": {"GET /conversations/{conversation_id}", "GET /conversation-keys/{key}"},
        "ServeConsoleFunction": {"GET /console", "GET /console/{file+}"},
        "MemoryFactsFunction": {"GET /memory", "DELETE /memory/{fact_id}"},
        "ResponsesFunction": {
            "POST /v1/responses",
            "POST /v1/responses/input_tokens",
            "POST /v1/responses/compact",
            "GET /v1/responses/{response_id}",
            "DELETE /v1/responses/{response_id}",
            "GET /v1/responses/{response_id}/input_items",
        },
        "OpenAIConversationsFunction": {
            "POST /v1/conversations",
            "GET /v1/conversations/{conversation_id}",
            "POST /v1/conversations/{conversation_id}",
            "DELETE /v1/conversations/{conversation_id}",
            "GET /v1/conversations/{conversation_id}/items",
            "POST /v1/conversations/{conversation_id}/items",
            "GET /v1/conversations/{conversation_id}/items/{item_id}",
            "DELETE /v1/conversations/{conversation_id}/items/{item_id}",
        },
        # MEM-20: LangGraph's store, one resource family (put, get, delete, search, namespaces).
        "MemoryItemsFunction": {
            "PUT /memory/items",
            "GET /memory/items",
            "DELETE /memory/items",
            "POST /memory/items/search",
            "POST /memory/items/namespaces",
        },
        # PRV-1..3: a user's data, erased, exported or imported as jobs.
        "UserErasureFunction": {"POST /users/{user_id}/erasure", "GET /users/{user_id}/erasure"},
        "UserExportsFunction": {"POST /users/{user_id}/exports", "GET /users/{user_id}/exports/{export_id}"},
        "UserImportsFunction": {
            "POST /users/{user_id}/imports",
            "POST /users/{user_id}/imports/{import_id}/start",
            "GET /users/{user_id}/imports/{import_id}",
        },
    }


def test_routes_follow_the_template_when_it_changes(tmp_path: Path) -> None:
    """Nothing listed by hand: a route added to the template is served, with its function's settings."""
    # Given a copy of the project template with one more function
    text = (REPO / "template.yaml").read_text(encoding="utf-8")
    extra = """
  PingFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/ping/
      Handler: app.lambda_handler
      Timeout: 5
      Events:
        Api:
          Type: HttpApi
          Properties: { ApiId: !Ref HttpApi, Method: GET, Path: /ping }
"""
    copy = tmp_path / "template.yaml"
    copy.write_text(text.replace("\nOutputs:", extra + "\nOutputs:"), encoding="utf-8")
    # When it is read
    template = load_template(copy, region="us-east-1")
    # Then the new route is there with its own Timeout, and CodeUri is relative to the template
    ping = next(r for r in template.routes if r.route_key == "GET /ping")
    assert ping.function.timeout_s == 5
    assert ping.function.code_uri == (tmp_path / "functions" / "ping").resolve()


def test_function_settings_merge_globals() -> None:
    """Timeout, memory and environment: Globals, overridden per function."""
    # When the fixture template is read
    template = load_template(FIXTURE, region="us-east-1", table_name="t1")
    # Then Echo has its own Timeout, Boom the Globals one, and both get the Globals environment
    assert template.functions["EchoFunction"].timeout_s == 11
    assert template.functions["BoomFunction"].timeout_s == 7
    assert template.functions["BoomFunction"].memory_mb == 256
    assert template.functions["BoomFunction"].environment["TABLE_NAME"] == "t1"
    assert template.functions["ConsumerFunction"].environment["STAGE"] == "test-stage"
    assert "WORK_QUEUE_URL" in template.functions["ConsumerFunction"].environment


def test_project_functions_get_the_project_globals() -> None:
    """The project's template: every function gets TABLE_NAME and the Powertools settings from Globals."""
    # When the project's template is read
    template = load_template(REPO / "template.yaml", region="us-east-1", table_name="t1")
    # Then
    for spec in template.functions.values():
        assert spec.environment["TABLE_NAME"] == "t1"
        assert spec.environment["POWERTOOLS_SERVICE_NAME"] == "chat-history"
        assert spec.timeout_s > 0


def test_the_blob_bucket_gets_a_local_name_the_functions_see() -> None:
    """API-17: the template's bucket has a valid local name (created in the embedded store) and every
    function's BLOB_BUCKET names it."""
    template = load_template(REPO / "template.yaml", region="us-east-1")
    assert template.buckets == {"BlobBucket": "chat-local-blobbucket"}
    for spec in template.functions.values():
        assert spec.environment["BLOB_BUCKET"] == "chat-local-blobbucket"


def test_table_is_created_as_the_template_declares() -> None:
    """The embedded table: keys, GSI, stream and TTL from the Table resource."""
    # When the project's template is read
    table = load_template(REPO / "template.yaml", region="us-east-1").table_for_env()
    # Then CreateTable gets the template's keys, index and stream; TTL is on expires_at
    assert table is not None
    args = table.create_args
    assert table.key_names == ["pk", "sk"]
    assert [g["IndexName"] for g in args["GlobalSecondaryIndexes"]] == ["gsi1"]
    assert args["BillingMode"] == "PAY_PER_REQUEST"
    assert args["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table.ttl_attribute == "expires_at"


def test_intrinsic_functions_resolve_locally() -> None:
    """CloudFormation tags (!Ref, !GetAtt, !Sub, !If, !Select, !Split) are read and resolved locally."""
    # When the fixture template is read
    template = load_template(FIXTURE, region="eu-west-1", table_name="fixture-table")
    env = template.functions["EchoFunction"].environment
    # Then the environment holds resolved values
    assert env["TABLE_NAME"] == "fixture-table"
    assert env["STAGE"] == "test-stage"
    assert env["REGION_TAG"] == "eu"
    assert env["TABLE_ARN"] == "arn:aws:dynamodb:eu-west-1:123456789012:table/fixture-table"


def test_parameter_overrides_flip_conditions() -> None:
    """!If follows the Conditions with parameter overrides."""
    # When the Stage parameter is overridden
    template = load_template(FIXTURE, region="us-east-1", parameter_overrides={"Stage": "prod"})
    # Then the condition is false
    assert template.functions["EchoFunction"].environment["STAGE"] == "prod"


def test_stream_subscriptions_are_read_with_their_settings() -> None:
    """Events of Type DynamoDB on the table's StreamArn become local event source mappings."""
    # When the fixture template is read
    template = load_template(FIXTURE, region="us-east-1")
    # Then the audit function's subscription carries batch size, retries, filters, partial failures
    (sub,) = template.streams
    assert sub.name == "AuditFunction.TableStream"
    assert sub.table_logical_id == "Table"
    assert sub.batch_size == 10
    assert sub.maximum_retry_attempts == 2
    assert sub.report_batch_item_failures
    assert sub.filters == ({"dynamodb": {"Keys": {"pk": {"S": [{"anything-but": {"prefix": "AUDIT#"}}]}}}},)
    assert sub.on_failure_queue == "AuditFailures"


def test_route_matching_order_prefers_literal_segments() -> None:
    """Most specific route first: literal segments before {param}, before {proxy+}."""
    # When the fixture template is read
    template = load_template(FIXTURE, region="us-east-1")
    # Then the greedy route is last among those with the same literal count
    keys = [r.route_key for r in template.routes]
    assert keys.index("ANY /any/{proxy+}") > keys.index("GET /echo/{name}")


def test_unknown_tags_and_long_forms_do_not_break_loading(tmp_path: Path) -> None:
    """The YAML loader tolerates every short-form tag, including ones it cannot resolve locally."""
    # Given a template with several tag forms
    path = tmp_path / "t.yaml"
    path.write_text(
        """
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn/
      Handler: app.handler
      Environment:
        Variables:
          JOINED: !Join ["-", [a, b, !Ref "AWS::Region"]]
          SUBBED: !Sub ["${X}-${AWS::AccountId}", {X: !GetAtt [Fn, Arn]}]
          IMPORTED: !ImportValue shared-thing
          BASE64: !Base64 hello
""",
        encoding="utf-8",
    )
    # When it is loaded
    template = load_template(path, region="us-east-1")
    # Then what can be resolved is, the rest is reported
    env = template.functions["Fn"].environment
    assert env["JOINED"] == "a-b-us-east-1"
    assert env["SUBBED"] == "arn:aws:lambda:us-east-1:123456789012:function:Fn-123456789012"
    assert "IMPORTED" not in env
    assert any("Fn::ImportValue" in w for w in template.warnings)


def test_a_template_without_resources_is_a_clear_error(tmp_path: Path) -> None:
    """A wrong --template path or file gives a message, not a traceback."""
    # Given a file that is not a template
    path = tmp_path / "t.yaml"
    path.write_text("just: text\n", encoding="utf-8")
    # When it is loaded / Then the error names the problem
    with pytest.raises(TemplateError, match="no Resources"):
        load_yaml(path)
    with pytest.raises(TemplateError, match="cannot read"):
        load_yaml(tmp_path / "missing.yaml")


def test_queues_and_sqs_subscriptions_are_read() -> None:
    """AWS::SQS::Queue resources (with redrive to their DLQ) and Events of Type SQS become local queues."""
    # When the fixture template is read with the embedded server's endpoint
    template = load_template(FIXTURE, region="us-east-1", queue_endpoint="http://127.0.0.1:4566")
    # Then both queues exist, the redrive points at the DLQ's ARN, and the consumer subscribes
    work = template.queues["WorkQueue"]
    assert work.url == "http://127.0.0.1:4566/123456789012/chat-local-WorkQueue"
    assert json.loads(work.attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:123456789012:chat-local-WorkDeadLetterQueue",
        "maxReceiveCount": 2,
    }
    (sub,) = template.queue_subscriptions
    assert (sub.name, sub.queue_logical_id, sub.batch_size) == ("ConsumerFunction.Work", "WorkQueue", 5)
    assert sub.report_batch_item_failures
    assert sub.filters == ({"body": {"kind": ["store", "fail"]}},)
