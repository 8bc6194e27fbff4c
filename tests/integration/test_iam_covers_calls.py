"""Every DynamoDB and S3 action a function performs is granted to it (least privilege that works, OPS-1).

Each function runs a scenario through its real handler on moto while every DynamoDB call is recorded
(a TransactWriteItems counts as the actions of its items, as IAM evaluates it); the actions must be a
subset of the `dynamodb:*` actions its entry in functions/routes.py grants, the table template.yaml's
policies are generated from (tests/unit/test_routes_table.py holds the template to it). A deployed
function denied an action fails only in the cloud; this catches it here.
"""

from __future__ import annotations

import contextvars
from collections import defaultdict
from typing import Any

import boto3
import botocore.client
import pytest
from chat_core.chat import retention
from chat_core.store import blobs

from functions.routes import FUNCTIONS
from tests.integration.test_summaries import Conversation as SummarizedConversation
from tests.support import agent_api, events
from tests.support import functions as api
from tests.support.lambda_context import LambdaContext
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew
from tests.support.stream_records import TableStream

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("function", default=None)


def granted_actions() -> dict[str, set[str]]:
    """Function folder name -> the dynamodb actions its route-table entry grants."""
    return {function.folder: set(function.granted("dynamodb")) for function in FUNCTIONS}


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """Function name -> the DynamoDB actions performed while its handler ran."""
    calls: dict[str, set[str]] = defaultdict(set)
    original = botocore.client.BaseClient._make_api_call

    def record(self: Any, operation: str, params: dict[str, Any]) -> Any:
        function = _current.get()
        if function is not None and self.meta.service_model.service_name == "dynamodb":
            if operation == "TransactWriteItems":
                for item in params.get("TransactItems", []):
                    calls[function].update(_TRANSACT_ACTIONS[kind] for kind in item)
            elif operation == "TransactGetItems":
                calls[function].add("GetItem")  # IAM authorizes each of its Gets as GetItem
            else:
                calls[function].add(operation)
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    original_load = api.load

    def load(name: str) -> Any:
        module = original_load(name)
        handler = module.lambda_handler

        class Recorded:
            @staticmethod
            def lambda_handler(event: Any, context: Any) -> Any:
                token = _current.set(name)
                try:
                    return handler(event, context)
                finally:
                    _current.reset(token)

        return Recorded

    monkeypatch.setattr(api, "load", load)
    return calls


def test_every_dynamodb_action_of_the_conversation_functions_is_granted(
    standin_llm: OpenAIStandin, recorded: dict[str, set[str]]
) -> None:
    """Create, post (new and existing conversation, with an Idempotency-Key), list, detail,
    window, events, pin, summarize and delete: each function's actions are in its policy."""
    conversation = SummarizedConversation(TableStream("chat-history-it"))
    conversation.post_turns(7)
    cid = conversation.id
    assert cid is not None
    api.create(title="t", system_prompt="s")
    api.invoke(
        "post_message",
        events.post_message({"conversation_id": cid, "content": "again"}, idempotency_key="k1"),
    )
    api.listing()
    detail = api.detail(cid).body
    api.window(cid, "next?")
    api.load("get_events").lambda_handler(
        events.http_event(
            "GET",
            f"/conversations/{cid}/events",
            route="/conversations/{conversation_id}/events",
            path_parameters={"conversation_id": cid},
        ),
        LambdaContext(function_name="get_events"),
    )
    message_id = detail["messages"][0]["message_id"]
    agent_api.pin(cid, message_id)
    api.invoke(
        "update_conversation",
        events.http_event(
            "PATCH",
            f"/conversations/{cid}",
            route="/conversations/{conversation_id}",
            path_parameters={"conversation_id": cid},
            body={"system_prompt": "be brief", "defaults": {"temperature": 0.1}},
        ),
    )
    # API-18..20: branch, switch, read the tree, append with a key, delete (a summarized message: the
    # summary item goes too), regenerate with a key.
    messages = api.detail(cid).body["messages"]
    users = [m for m in messages if m["role"] == "user"]
    edited = api.edit(cid, users[-1]["message_id"], "edited", idempotency_key="e1")
    assert edited.status == 201, edited.body
    regenerated = api.regenerate(cid, edited.body["assistant_message"]["message_id"], idempotency_key="r1")
    assert regenerated.status == 201, regenerated.body
    assert api.switch(cid, edited.body["assistant_message"]["message_id"]).status == 200
    assert api.tree(cid).status == 200
    assert api.append(cid, [{"role": "user", "content": "noted"}], idempotency_key="a1").status == 201
    assert api.delete_message(cid, messages[0]["message_id"]).status == 200
    # RSP-9: a store: false response (with an Idempotency-Key, and its retry) is deleted for good.
    for _ in range(2):
        unstored = api.invoke(
            "responses",
            events.http_event(
                "POST",
                "/v1/responses",
                route="/v1/responses",
                headers={"Idempotency-Key": "u1"},
                body={"model": "m", "input": "forget this", "store": False},
            ),
        )
        assert unstored.status == 200, unstored.body
    api.delete(cid)
    # API-21: a conversation by key (create, read), deleted with its key.
    named = api.put_key("iam-key").body["conversation_id"]
    assert api.get_key("iam-key").status == 200
    assert api.delete(named).status == 204
    granted = granted_actions()
    assert set(recorded) >= {
        "post_message",
        "create_conversation",
        "list_conversations",
        "get_conversation",
        "summarize_conversation",
        "delete_conversation",
        "update_conversation",
        "edit_message",
        "regenerate_message",
        "set_active",
        "get_tree",
        "append_messages",
        "delete_message",
        "responses",
    }
    for function, actions in recorded.items():
        missing = actions - granted[function]
        assert not missing, f"{function} performs {sorted(missing)} but its route entry does not grant them"


def test_every_dynamodb_action_of_the_memory_functions_is_granted(
    chat_service: None, recorded: dict[str, set[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEM-31..35: extraction on the stream, a window and a post with facts, listing, deleting (a fact,
    and a message whose fact then goes): each function's actions are in its policy."""
    from tests.integration.test_memory_facts import _forget, _memory, _turn

    monkeypatch.setenv("FACTS_EXTRACTION", "all")
    renew()
    stream = TableStream("chat-history-it")
    cid = _turn(stream, "I live in Paris. I like tea.")
    assert api.update(cid, window_policy={"max_messages": 10, "facts": True}).status == 200
    _turn(stream, "I live in Rome", cid)
    api.window(cid, "where?", window_policy={"max_tokens": 2000, "facts": {"max_tokens": 100}})
    facts = _memory().body["facts"]
    assert _forget(facts[0]["id"]).status == 204
    source = facts[1]["sources"][0]["message_id"]
    assert api.delete_message(cid, source).status == 200
    _memory(include_superseded="true")
    granted = granted_actions()
    assert set(recorded) >= {"post_message", "summarize_conversation", "build_window", "memory_facts"}
    for function, actions in recorded.items():
        missing = actions - granted[function]
        assert not missing, f"{function} performs {sorted(missing)} but its route entry does not grant them"


#: S3 operations -> the IAM action that authorizes them (ListObjectsV2 is s3:ListBucket on the bucket,
#: DeleteObjects needs s3:DeleteObject on each key); a presigned URL works only if its signer may GetObject.
_S3_ACTIONS = {
    "PutObject": "PutObject",
    "GetObject": "GetObject",
    "ListObjectsV2": "ListBucket",
    "DeleteObjects": "DeleteObject",
    "presign": "GetObject",
    "HeadObject": "GetObject",
    "presign_put": "PutObject",
}
#: DLG-6: functions whose S3 use the world scenario below covers.
_WORLD_S3_FUNCTIONS = {"export_world_s3", "create_import", "start_import", "run_import"}
#: PRV-1, PRV-2: their calls are checked against their grants by test_user_erasure; user_exports signs the
#: archive's GET URL (a presigned URL carries its signer's rights), run_user_job writes and deletes objects.
_USER_DATA_S3_FUNCTIONS = {"user_exports", "user_imports", "run_user_job"}


def granted_s3_actions() -> dict[str, set[str]]:
    """Function folder name -> the s3 actions its route-table entry grants."""
    return {function.folder: set(function.granted("s3")) for function in FUNCTIONS}


def test_every_s3_action_of_the_functions_is_granted(
    standin_llm: OpenAIStandin,
    recorded: dict[str, set[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """API-17: posting (both routes) writes and reads blobs, the detail and pin routes sign URLs, the purge
    lists and deletes: each function may do what it does with the blob bucket, and nothing else may."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="blobs-iam")
    monkeypatch.setenv("BLOB_BUCKET", "blobs-iam")
    renew()
    s3_calls: dict[str, set[str]] = defaultdict(set)
    original = botocore.client.BaseClient._make_api_call

    def record(self: Any, operation: str, params: dict[str, Any]) -> Any:
        function = _current.get()
        if function is not None and self.meta.service_model.service_name == "s3":
            s3_calls[function].add(_S3_ACTIONS[operation])
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record)
    original_presign = blobs.presign

    def presign(key: str, settings: Any = None) -> str | None:
        function = _current.get()
        if function is not None:
            s3_calls[function].add(_S3_ACTIONS["presign"])
        return original_presign(key, settings)

    monkeypatch.setattr(blobs, "presign", presign)
    large = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "iVBORw0K" * 4096}}
    posted = api.invoke("post_message", events.post_message({"content": [large]}))
    cid = posted.body["conversation_id"]
    api.invoke("post_message", events.post_message({"conversation_id": cid, "content": "and?"}))
    api.invoke(
        "chat_completions",
        events.http_event(
            "POST",
            "/v1/chat/completions",
            route="/v1/chat/completions",
            body={"model": "m", "conversation": cid, "messages": [{"role": "user", "content": [large]}]},
        ),
    )
    # RSP-2, RSP-6: a response and a conversation item with an image write and read blobs too.
    image = {"type": "input_image", "image_url": large["image_url"]["url"]}
    answered = api.invoke(
        "responses",
        events.http_event(
            "POST",
            "/v1/responses",
            route="/v1/responses",
            body={"model": "m", "conversation": cid, "input": [{"role": "user", "content": [image]}]},
        ),
    )
    assert answered.status == 200, answered.body
    # RSP-9: a store: false response with an image: its content parts go with its conversation.
    unstored = api.invoke(
        "responses",
        events.http_event(
            "POST",
            "/v1/responses",
            route="/v1/responses",
            body={"model": "m", "store": False, "input": [{"role": "user", "content": [image]}]},
        ),
    )
    assert unstored.status == 200, unstored.body
    items = f"/v1/conversations/{cid}/items"
    where = {"conversation_id": cid}
    route = "/v1/conversations/{conversation_id}/items"
    added = api.invoke(
        "openai_conversations",
        events.http_event(
            "POST",
            items,
            route=route,
            path_parameters=where,
            body={"items": [{"role": "user", "content": [image]}]},
        ),
    )
    assert added.status == 200, added.body
    listed = api.invoke(
        "openai_conversations", events.http_event("GET", items, route=route, path_parameters=where)
    )
    assert listed.status == 200, listed.body
    message_id = api.detail(cid).body["messages"][0]["message_id"]
    agent_api.pin(cid, message_id)
    # API-18..20: an edit and an append write blobs; the tree and a deletion show presigned URLs.
    edited = api.edit(cid, message_id, [large, {"type": "text", "text": "again"}])
    assert edited.status == 201, edited.body
    api.regenerate(cid, edited.body["assistant_message"]["message_id"])
    assert api.append(cid, [{"role": "user", "content": [large]}]).status == 201
    assert api.tree(cid).status == 200
    assert api.delete_message(cid, edited.body["user_message"]["message_id"]).status == 200
    token = _current.set("purge_conversation")
    try:
        assert retention.purge_partition("alice", cid).attachments >= 1
    finally:
        _current.reset(token)
    assert set(s3_calls) == {
        "post_message",
        "chat_completions",
        "responses",
        "openai_conversations",
        "get_conversation",
        "update_message",
        "purge_conversation",
        "edit_message",
        "regenerate_message",
        "append_messages",
        "get_tree",
        "delete_message",
    }
    granted = granted_s3_actions()
    for function, actions in s3_calls.items():
        missing = actions - granted[function]
        assert not missing, (
            f"{function} performs s3:{sorted(missing)} but its route entry does not grant them"
        )
    needless = {
        f: a
        for f, a in granted.items()
        # stream_chat and responses_socket run the same turns as post_message and responses (RSP-12)
        if a
        and f not in s3_calls
        and f not in ("stream_chat", "responses_socket")
        and f not in _WORLD_S3_FUNCTIONS
        and f not in _USER_DATA_S3_FUNCTIONS
    }
    assert not needless, f"functions granted S3 actions they never use: {needless}"


def _world_call(function: str, method: str, route: str, body: Any = None, **params: str) -> Any:
    query = params.pop("query", None)
    extra: dict[str, Any] = {"query": query} if query else {}
    if body is not None:
        extra["body"] = body
    event = events.http_event(method, route.format(**params), route=route, path_parameters=params, **extra)
    answer = api.invoke(function, event)
    assert answer.status < 300, (function, answer.status, answer.body)
    return answer.body


def test_every_action_of_the_dialogue_functions_is_granted(
    chat_service: None, recorded: dict[str, set[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DLG-1..6: entries (with audiences), history and witness lists, the prompt, listings, export and
    import (direct and through S3 with the job worker), saves and loads, deletions and the world purge:
    each function's DynamoDB and S3 actions are in its policy, and no world function holds S3 actions
    it never uses."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="blobs-iam")
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="imports-iam")["QueueUrl"]
    monkeypatch.setenv("BLOB_BUCKET", "blobs-iam")
    monkeypatch.setenv("IMPORT_QUEUE_URL", queue)
    renew()
    s3_calls: dict[str, set[str]] = defaultdict(set)
    original = botocore.client.BaseClient._make_api_call

    def record_s3(self: Any, operation: str, params: dict[str, Any]) -> Any:
        function = _current.get()
        if function is not None and self.meta.service_model.service_name == "s3":
            s3_calls[function].add(_S3_ACTIONS[operation])
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", record_s3)
    for name in ("presign", "presign_put"):
        signer = getattr(blobs, name)

        def signed(*args: Any, _name: str = name, _signer: Any = signer, **kwargs: Any) -> Any:
            if _current.get() is not None:
                s3_calls[str(_current.get())].add(_S3_ACTIONS[_name])
            return _signer(*args, **kwargs)

        monkeypatch.setattr(blobs, name, signed)
    w = "/worlds/{world_id}"
    said = {"participant_id": "A", "role": "character", "content": "hi", "game_tick": 1, "entry_id": "e1"}
    whisper = {**said, "entry_id": "e2", "visibility": "whisper", "audience": ["B"]}
    entries = {"participants": ["A", "B", "C"], "entries": [said, whisper]}
    _world_call("add_dialogue_entries", "POST", w + "/dialogues/entries", entries, world_id="iam")
    _world_call(
        "get_dialogue_history",
        "GET",
        w + "/history",
        world_id="iam",
        query={"participants": "A,B", "for": "A"},
    )
    _world_call("get_dialogue_history", "GET", w + "/history", world_id="iam", query={"for": "B"})
    _world_call(
        "build_dialogue_prompt",
        "POST",
        w + "/prompt",
        {"participants": ["A", "B", "C"], "system_prompt": "s", "ai_participant": "C"},
        world_id="iam",
    )
    _world_call("list_worlds", "GET", "/worlds")
    _world_call("list_dialogues", "GET", w + "/dialogues", world_id="iam")
    _world_call("save_world", "POST", w + "/saves", {"save_id": "s1", "game_tick": 0}, world_id="iam")
    _world_call("list_saves", "GET", w + "/saves", world_id="iam")
    _world_call("load_save", "POST", w + "/saves/{save_id}/load", world_id="iam", save_id="s1")
    _world_call("revert_load", "DELETE", w + "/saves/{save_id}/load", world_id="iam", save_id="s1")
    exported = api.load("export_world").lambda_handler(
        events.http_event(
            "GET", "/worlds/iam/export", route=w + "/export", path_parameters={"world_id": "iam"}
        ),
        LambdaContext(function_name="export_world"),
    )["body"]
    api.invoke(
        "import_world",
        events.http_event(
            "POST",
            "/worlds/copy/import",
            route=w + "/import",
            path_parameters={"world_id": "copy"},
            raw_body=exported,
        ),
    )
    _world_call("export_world_s3", "POST", w + "/exports", world_id="iam")
    job = _world_call("create_import", "POST", w + "/imports", world_id="big")
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket="blobs-iam",
        Key=str(job["upload_url"]).split("blobs-iam.s3.amazonaws.com/")[1].split("?")[0],
        Body=exported,
    )
    _world_call("start_import", "POST", w + "/imports/{job_id}/start", world_id="big", job_id=job["job_id"])
    _world_call("get_import", "GET", w + "/imports/{job_id}", world_id="big", job_id=job["job_id"])
    message = boto3.client("sqs", region_name="us-east-1").receive_message(QueueUrl=queue)["Messages"][0]
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1",
            "SenderId": "x",
            "ApproximateFirstReceiveTimestamp": "1",
        },
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:imports-iam",
        "awsRegion": "us-east-1",
    }
    answer = api.load("run_import").lambda_handler(
        {"Records": [record]}, LambdaContext(function_name="run_import")
    )
    assert answer == {"batchItemFailures": []}
    route = w + "/dialogues/{dialogue_id}"
    _world_call(
        "delete_dialogue_entry",
        "DELETE",
        route + "/entries/{entry_id}",
        world_id="iam",
        dialogue_id="A+B+C",
        entry_id="e1",
    )
    _world_call("delete_dialogue", "DELETE", route, world_id="copy", dialogue_id="A+B+C")
    _world_call("delete_world", "DELETE", w, world_id="iam")
    # TTL removes the deleted world's item; the retention function purges the rest
    stream = TableStream("chat-history-it")
    boto3.client("dynamodb", region_name="us-east-1").delete_item(
        TableName="chat-history-it", Key={"pk": {"S": "USER#alice#WORLDS"}, "sk": {"S": "W#iam"}}
    )
    removal = [r for r in stream.read() if r["eventName"] == "REMOVE"]
    for r in removal:
        r["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    token = _current.set("purge_conversation")
    try:
        assert retention.process_stream(removal)["worlds"] == 1
    finally:
        _current.reset(token)
    granted = granted_actions()
    world_functions = {
        "add_dialogue_entries",
        "get_dialogue_history",
        "build_dialogue_prompt",
        "list_worlds",
        "list_dialogues",
        "save_world",
        "list_saves",
        "load_save",
        "revert_load",
        "export_world",
        "import_world",
        "export_world_s3",
        "create_import",
        "start_import",
        "get_import",
        "run_import",
        "delete_dialogue_entry",
        "delete_dialogue",
        "delete_world",
        "purge_conversation",
    }
    assert set(recorded) >= world_functions
    for function, actions in recorded.items():
        missing = actions - granted[function]
        assert not missing, f"{function} performs {sorted(missing)} but its route entry does not grant them"
    granted_s3 = granted_s3_actions()
    for function, actions in s3_calls.items():
        missing = actions - granted_s3[function]
        assert not missing, (
            f"{function} performs s3:{sorted(missing)} but its route entry does not grant them"
        )
    for function in _WORLD_S3_FUNCTIONS:
        assert granted_s3[function] == s3_calls[function], (
            function,
            granted_s3[function],
            s3_calls[function],
        )
