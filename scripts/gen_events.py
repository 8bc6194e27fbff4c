"""Write events/<folder>.json for every function of functions/routes.py, in its trigger's shape (OPS-2).

    python scripts/gen_events.py           # (re)write the sample events (make events)
    python scripts/gen_events.py --check   # exit 1 when a file in events/ is not what would be written

HTTP API functions get a payload-2.0 event with the JWT authorizer's claims, queue workers an SQS batch,
stream functions DynamoDB stream records, the streaming function a function-URL request, the WebSocket
function a message of its API; direct payloads
are written as named in scripts/event_samples.py. What each event asks is there; the shape is built here.
`sam local invoke <LogicalId>Function -e events/<folder>.json` takes any of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "local"), str(ROOT / "scripts")]

import event_samples  # noqa: E402
from chat_local.apigw import payload_v2_event  # noqa: E402

from functions.routes import FUNCTIONS, Function  # noqa: E402

EVENTS = ROOT / "events"
REGION = "us-east-1"
ACCOUNT = "123456789012"
#: 2025-01-01T00:00:00Z: samples carry a fixed time, so regenerating them changes nothing.
RECEIVED_AT = 1735689600.0
CLAIMS = {"sub": "alice", "iss": "https://issuer.example", "aud": "client"}
API_HOST = "api-id.execute-api.us-east-1.amazonaws.com"
URL_HOST = "abcdefghijklmnopqrstuvwxyz0123456.lambda-url.us-east-1.on.aws"


def _path(template: str, parameters: dict[str, str]) -> str:
    path = template
    for name, value in parameters.items():
        path = path.replace("{" + name + "}", value)
    return path


def _body(sample: dict[str, Any]) -> str | None:
    if "body" not in sample:
        return None
    body = sample["body"]
    return body if isinstance(body, str) else json.dumps(body)


def http_event(function: Function, sample: dict[str, Any]) -> dict[str, Any]:
    route = function.http[sample.get("route", 0)]
    parameters: dict[str, str] = sample.get("path", {})
    query: dict[str, str] | None = sample.get("query")
    body = _body(sample)
    headers = {"user-agent": "curl/8.5.0", "host": API_HOST}
    if body is not None:
        headers["content-type"] = sample.get("content_type", "application/json")
    headers.update(sample.get("headers", {}))
    event = payload_v2_event(
        method=route.method,
        path=_path(route.path, parameters),
        route_key=f"{route.method} {route.path}",
        headers=headers,
        raw_query=urlencode(query or {}),
        query=query,
        path_parameters=parameters or None,
        body=body,
        claims=None if route.public else {**CLAIMS, **sample.get("claims", {})},
        received_at=RECEIVED_AT,
        request_id=f"example-{function.folder}",
    )
    event["requestContext"]["apiId"] = "api-id"
    event["requestContext"]["accountId"] = ACCOUNT
    del event["headers"]["host"]
    return event


def function_url_event(function: Function, sample: dict[str, Any]) -> dict[str, Any]:
    """What a function URL sends (payload 2.0, no authorizer); the Lambda Web Adapter turns it into the
    HTTP request its server answers."""
    body = _body(sample)
    headers = {"user-agent": "curl/8.5.0", "host": URL_HOST, "content-type": "application/json"}
    headers.update(sample["headers"])
    event = payload_v2_event(
        method=sample["method"],
        path=sample["path"],
        route_key="$default",
        headers=headers,
        body=body,
        received_at=RECEIVED_AT,
        request_id=f"example-{function.folder}",
    )
    event["requestContext"]["apiId"] = URL_HOST.split(".")[0]
    event["requestContext"]["accountId"] = "anonymous"
    return event


def sqs_event(function: Function, messages: list[tuple[str, str]]) -> dict[str, Any]:
    assert function.queue is not None
    arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{function.queue.queue}"
    records = [
        {
            "messageId": message_id,
            "receiptHandle": f"AQEB{message_id.replace('-', '')[:30]}",
            "body": body,
            "attributes": {
                "ApproximateReceiveCount": "1",
                "SentTimestamp": str(int(RECEIVED_AT * 1000)),
                "SenderId": "AIDAIENQZJOLO23YVJ4VO",
                "ApproximateFirstReceiveTimestamp": str(int(RECEIVED_AT * 1000) + 1),
            },
            "messageAttributes": {},
            "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
            "eventSource": "aws:sqs",
            "eventSourceARN": arn,
            "awsRegion": REGION,
        }
        for message_id, body in messages
    ]
    return {"Records": records}


def stream_event(function: Function, records: list[dict[str, Any]]) -> dict[str, Any]:
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/chat-history/stream/2025-01-01T00:00:00.000"
    shaped = []
    for record in records:
        head = {
            "eventID": record["eventID"],
            "eventName": record["eventName"],
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": REGION,
            "eventSourceARN": arn,
        }
        if "userIdentity" in record:
            head["userIdentity"] = record["userIdentity"]
        shaped.append({**head, "dynamodb": record["dynamodb"]})
    return {"Records": shaped}


def socket_event(function: Function, sample: dict[str, Any]) -> dict[str, Any]:
    """What an API Gateway WebSocket API sends for one client message on a route (RSP-12)."""
    assert sample["route"] in {route.key for route in function.socket}
    return {
        "requestContext": {
            "routeKey": sample["route"],
            "messageId": "example-message",
            "eventType": "MESSAGE",
            "extendedRequestId": f"example-{function.folder}",
            "requestTime": "01/Jan/2025:00:00:00 +0000",
            "messageDirection": "IN",
            "stage": "responses",
            "connectedAt": int(RECEIVED_AT * 1000),
            "requestTimeEpoch": int(RECEIVED_AT * 1000),
            "identity": {"sourceIp": "192.0.2.1"},
            "requestId": f"example-{function.folder}",
            "domainName": "socket-id.execute-api.us-east-1.amazonaws.com",
            "connectionId": "example-connection=",
            "apiId": "socket-id",
        },
        "body": json.dumps(sample["body"]),
        "isBase64Encoded": False,
    }


def events() -> dict[str, dict[str, Any]]:
    """File name (without .json) -> the event, for every function and every direct sample."""
    written: dict[str, dict[str, Any]] = {}
    for function in FUNCTIONS:
        folder = function.folder
        if function.http:
            written[folder] = http_event(function, event_samples.HTTP[folder])
        elif function.queue:
            written[folder] = sqs_event(function, event_samples.SQS[folder])
        elif function.stream:
            written[folder] = stream_event(function, event_samples.STREAM[folder])
        elif function.function_url:
            written[folder] = function_url_event(function, event_samples.FUNCTION_URL[folder])
        elif function.socket:
            written[folder] = socket_event(function, event_samples.SOCKET[folder])
        else:
            raise SystemExit(f"{function.name}: no trigger, so no sample shape")
    for name, (_folder, payload) in event_samples.DIRECT.items():
        written[name] = payload
    return written


def _text(event: dict[str, Any]) -> str:
    return json.dumps(event, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail when events/ differs from the samples")
    args = parser.parse_args()
    stale = []
    for name, event in events().items():
        path = EVENTS / f"{name}.json"
        text = _text(event)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.name)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        names = ", ".join(stale)
        print(f"events/ differs from scripts/event_samples.py ({names}): run `make events`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
