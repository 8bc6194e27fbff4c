"""RSP-12: the WebSocket function's events as API Gateway sends them, run in-process on moto (the table,
and the management API whose PostToConnection calls are counted): what a turn costs beside the same turn
over HTTP, and that every call it makes is granted to it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import boto3
import botocore.client
import pytest
from chat_core.chat.response_items import parse_response_id

from functions.routes import FUNCTIONS
from tests.integration.conftest import TABLE
from tests.support.events import http_event
from tests.support.functions import invoke, load
from tests.support.lambda_context import LambdaContext

SOCKET = next(f for f in FUNCTIONS if f.folder == "responses_socket")


@pytest.fixture
def aws_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every AWS call made, as "service:Operation"."""
    calls: Counter[str] = Counter()
    original = botocore.client.BaseClient._make_api_call

    def counting(self: Any, operation: str, params: Any) -> Any:
        calls[f"{self.meta.service_model.service_name}:{operation}"] += 1
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", counting)
    return calls


def socket_event(
    route: str, connection_id: str, body: Any = None, user: str | None = "alice"
) -> dict[str, Any]:
    context: dict[str, Any] = {
        "routeKey": route,
        "eventType": {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route, "MESSAGE"),
        "connectionId": connection_id,
        "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
        "stage": "responses",
        "apiId": "abc123",
        "requestId": "req-1",
    }
    if route == "$connect" and user is not None:
        context["authorizer"] = {"jwt": {"claims": {"sub": user}}}
    event: dict[str, Any] = {"requestContext": context, "isBase64Encoded": False}
    if body is not None:
        event["body"] = body if isinstance(body, str) else json.dumps(body)
    return event


def run(event: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = load("responses_socket").lambda_handler(
        event, LambdaContext(function_name="responses_socket")
    )
    return answer


def delta(calls: Counter[str], before: Counter[str]) -> dict[str, int]:
    return {k: v - before[k] for k, v in calls.items() if v - before[k]}


def dynamodb(calls: dict[str, int]) -> dict[str, int]:
    return {k.split(":", 1)[1]: v for k, v in calls.items() if k.startswith("dynamodb:")}


def test_a_socket_turn_costs_the_http_turn_and_one_read(chat_service: None, aws_calls: Counter[str]) -> None:
    """RSP-12: a `response.create` on a socket makes the DynamoDB calls of the same POST /v1/responses
    and one GetItem (the connection); its events are one PostToConnection each; connecting and
    disconnecting are one write each."""
    request = {"model": "gpt-4o-mini", "input": "How far is the moon?"}
    # Given the cost of the turn over HTTP
    before = Counter(aws_calls)
    answer = invoke("responses", http_event("POST", "/v1/responses", body=request))
    assert answer.status == 200
    http = dynamodb(delta(aws_calls, before))
    # When a socket connects, sends the same request and disconnects
    before = Counter(aws_calls)
    assert run(socket_event("$connect", "conn-1"))["statusCode"] == 200
    connect = delta(aws_calls, before)
    before = Counter(aws_calls)
    assert (
        run(socket_event("response.create", "conn-1", {"type": "response.create", **request}))["statusCode"]
        == 200
    )
    turn = delta(aws_calls, before)
    before = Counter(aws_calls)
    run(socket_event("$disconnect", "conn-1"))
    disconnect = delta(aws_calls, before)
    # Then the turn cost the HTTP turn's calls and one GetItem, and each event was one post
    assert dynamodb(turn) == dict(Counter(http) + Counter({"GetItem": 1}))
    assert turn["apigatewaymanagementapi:PostToConnection"] >= 8
    assert connect == {"dynamodb:PutItem": 1}
    assert disconnect == {"dynamodb:DeleteItem": 1}
    print(f"\nRSP-12 cost: http {http}; socket turn {turn}; connect {connect}; disconnect {disconnect}")


def test_a_store_false_chain_costs_one_write_a_turn_for_what_the_socket_keeps(
    chat_service: None, aws_calls: Counter[str]
) -> None:
    """RSP-12: a `store: false` turn on a socket writes what the socket keeps (one UpdateItem) beside its
    own calls, so its continuation reads it back with the connection's GetItem."""
    run(socket_event("$connect", "conn-2"))
    first = {"type": "response.create", "model": "gpt-4o-mini", "input": "one", "store": False}
    before = Counter(aws_calls)
    run(socket_event("response.create", "conn-2", first))
    one = dynamodb(delta(aws_calls, before))
    kept = load("responses_socket").socket_state.find("conn-2")
    assert kept is not None
    assert kept.kept_id is not None
    second = {**first, "input": "two", "previous_response_id": kept.kept_id}
    before = Counter(aws_calls)
    run(socket_event("response.create", "conn-2", second))
    two = dynamodb(delta(aws_calls, before))
    assert one["UpdateItem"] == 1
    assert two["GetItem"] >= 1
    print(f"\nRSP-12 store: false turns: first {one}; continuation {two}")


def test_every_call_of_the_socket_function_is_granted(chat_service: None, aws_calls: Counter[str]) -> None:
    """RSP-12, OPS-1: the function's DynamoDB calls and its management API calls are in its grants."""
    run(socket_event("$connect", "conn-3"))
    run(socket_event("response.create", "conn-3", {"type": "response.create", "input": "hi", "store": False}))
    run(socket_event("$default", "conn-3", "not an event"))
    run(socket_event("$disconnect", "conn-3"))
    made = {call.replace("dynamodb:", "") for call in aws_calls if call.startswith("dynamodb:")}
    # A TransactWriteItems is authorized item by item (PutItem, UpdateItem: the post's, granted).
    assert made - {"TransactWriteItems"} <= SOCKET.granted("dynamodb")
    assert {"PutItem", "UpdateItem"} <= SOCKET.granted("dynamodb")
    assert {c for c in aws_calls if c.startswith("apigatewaymanagementapi:")} == {
        "apigatewaymanagementapi:PostToConnection",
        "apigatewaymanagementapi:DeleteConnection",
    }
    assert "execute-api:ManageConnections" in SOCKET.actions


def test_connect_without_a_caller_is_refused(chat_service: None, aws_calls: Counter[str]) -> None:
    """RSP-12, CON-2: no JWT on $connect (and no issuer to check one against) answers 401, writes nothing."""
    answer = run(socket_event("$connect", "conn-4", user=None))
    assert answer["statusCode"] == 401
    assert not [c for c in aws_calls if c.startswith("dynamodb:")]


def test_a_store_false_response_is_gone_before_its_last_event(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RSP-12, RSP-9: when a `store: false` turn's `response.completed` reaches the client, nothing of
    its conversation is left in the table, so a GET of the response right after it is a 404."""
    original = botocore.client.BaseClient._make_api_call
    left_at_last_event: list[int] = []

    def watching(self: Any, operation: str, params: Any) -> Any:
        if operation == "PostToConnection" and json.loads(params["Data"])["type"] == "response.completed":
            conversation_id = parse_response_id(json.loads(params["Data"])["response"]["id"])[0]
            scan = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=TABLE)
            left_at_last_event.append(sum(conversation_id in json.dumps(item) for item in scan["Items"]))
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", watching)
    run(socket_event("$connect", "conn-4"))
    # When a store: false turn streams on the socket
    request = {"type": "response.create", "model": "gpt-4o-mini", "input": "Forget this.", "store": False}
    run(socket_event("response.create", "conn-4", request))
    # Then at its last event no item of its conversation was left
    assert left_at_last_event == [0]
