"""events/<folder>.json, one per function in its trigger's shape (OPS-2): each is what scripts/gen_events.py
writes from the route table, and each function's handler, invoked in-process on moto with its event,
answers it: HTTP routes with the data their sample names created first (the ids swapped in), workers with
their batch answer, the streaming function over its own HTTP server as the Lambda Web Adapter would."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from chat_core.http.jwt import JwtVerifier

from functions.routes import FUNCTIONS, Function
from tests.support.functions import load
from tests.support.jwt_issuer import Issuer, jwt_issuer
from tests.support.lambda_context import LambdaContext
from tests.support.runtime import drop, renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
BUCKET = "chat-history-blobs-it"
#: The ids the samples name (scripts/event_samples.py), replaced by ids the test created.
SAMPLE_CONVERSATION = "01JD8ZQ5N6Y4T3W2V1S0R9P8QM"
SAMPLE_MESSAGE = "01JD8ZQ5P0000000018XKQ3R2T"
SAMPLE_ANSWER = "01JD8ZQ5P0000000019XKQ3R2V"
SAMPLE_JOB = "0123456789abcdef0123456789abcdef"

HTTP = [f for f in FUNCTIONS if f.http]
#: What each HTTP function answers its sample once the data the sample names exists.
EXPECTED = {
    "create_conversation": 201,
    "post_message": 201,
    "chat_completions": 200,
    "list_models": 200,
    "responses": 200,
    "openai_conversations": 200,
    "serve_console": 200,
    "list_conversations": 200,
    "get_conversation": 200,
    "delete_conversation": 204,
    "build_window": 200,
    "get_events": 200,
    "get_usage": 200,
    "memory_facts": 200,
    "search_memory": 200,
    # COST-4: the sample caller is in chat-admins, the deployment's administrators here.
    "set_budget": 200,
    "update_message": 200,
    "update_conversation": 200,
    "edit_message": 201,
    "regenerate_message": 201,
    "get_tree": 200,
    "set_active": 200,
    "append_messages": 201,
    "delete_message": 200,
    "memory_items": 200,
    "add_dialogue_entries": 200,
    "get_dialogue_history": 200,
    "list_worlds": 200,
    "list_dialogues": 200,
    "build_dialogue_prompt": 200,
    "export_world": 200,
    "delete_world": 200,
    "delete_dialogue": 200,
    "delete_dialogue_entry": 200,
    "save_world": 201,
    "list_saves": 200,
    "load_save": 200,
    "revert_load": 200,
    "export_world_s3": 201,
    "create_import": 202,
    "start_import": 202,
    "get_import": 200,
    "import_world": 201,
    "user_erasure": 202,
    "user_exports": 202,
    "user_imports": 202,
}
#: The samples that must run first, in order, so that what a sample names exists.
GIVEN = {
    "load_save": ["save_world"],
    "revert_load": ["save_world", "load_save"],
}


def _event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _call(name: str, event: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = load(name).lambda_handler(event, LambdaContext(function_name=name))
    return answer


def _swap(event: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    text = json.dumps(event)
    for sample, real in ids.items():
        text = text.replace(sample, real)
    swapped: dict[str, Any] = json.loads(text)
    return swapped


@pytest.fixture
def service(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The table, the blob bucket and the import queue in moto; chat-admins administer."""
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="imports-it")["QueueUrl"]
    monkeypatch.setenv("BLOB_BUCKET", BUCKET)
    monkeypatch.setenv("IMPORT_QUEUE_URL", queue)
    monkeypatch.setenv("USER_DATA_QUEUE_URL", queue)
    monkeypatch.setenv("ADMIN_GROUP", "chat-admins")
    renew()
    yield
    drop()


def _upload(job: dict[str, Any]) -> None:
    """PUT the import sample's world file where the job's upload URL points (moto serves no URL)."""
    key = str(job["upload_url"]).split(f"{BUCKET}.s3.amazonaws.com/")[1].split("?")[0]
    data = _event("import_world")["body"].encode()
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key=key, Body=data)


def _seed(function: Function) -> dict[str, str]:
    """Create what the function's sample names, through the other samples; the ids to swap in."""
    ids: dict[str, str] = {}
    path = function.http[0].path
    if path.startswith("/conversations/{conversation_id}"):
        created = json.loads(_call("create_conversation", _event("create_conversation"))["body"])
        ids[SAMPLE_CONVERSATION] = created["conversation_id"]
        post = _event("post_message")
        body = json.loads(post["body"])
        post["body"] = json.dumps({**body, "conversation_id": created["conversation_id"]})
        posted = json.loads(_call("post_message", post)["body"])
        ids[SAMPLE_MESSAGE] = posted["user_message"]["message_id"]
        ids[SAMPLE_ANSWER] = posted["assistant_message"]["message_id"]
    if path.startswith("/worlds"):
        assert _call("add_dialogue_entries", _event("add_dialogue_entries"))["statusCode"] == 201
    if "{job_id}" in path:
        job = json.loads(_call("create_import", _event("create_import"))["body"])
        ids[SAMPLE_JOB] = job["job_id"]
        _upload(job)
    for name in GIVEN.get(function.folder, []):
        assert _call(name, _swap(_event(name), ids))["statusCode"] < 300, name
    return ids


def test_every_function_has_a_sample_event_in_its_trigger_shape() -> None:
    """OPS-2: one event per function, shaped as its trigger delivers it."""
    for function in FUNCTIONS:
        # Given the function's sample event
        event = _event(function.folder)
        # Then it has its trigger's shape
        if function.http:
            routes = {f"{route.method} {route.path}" for route in function.http}
            assert event["version"] == "2.0", function.folder
            assert event["routeKey"] in routes, function.folder
            claims = event["requestContext"].get("authorizer", {}).get("jwt", {}).get("claims")
            assert (claims is None) == all(route.public for route in function.http), function.folder
        elif function.queue:
            assert all(r["eventSource"] == "aws:sqs" for r in event["Records"]), function.folder
            assert all(r["eventSourceARN"].endswith(f":{function.queue.queue}") for r in event["Records"])
        elif function.stream:
            assert all(r["eventSource"] == "aws:dynamodb" for r in event["Records"]), function.folder
        elif function.socket:
            assert event["requestContext"]["routeKey"] in {route.key for route in function.socket}
            assert event["requestContext"]["eventType"] == "MESSAGE"
        else:
            assert function.function_url
            assert event["routeKey"] == "$default"
            assert "authorizer" not in event["requestContext"]
            assert event["headers"]["authorization"].startswith("Bearer ")


def test_the_sample_events_are_what_the_route_table_generates() -> None:
    """OPS-2: events/ is written by `make events` from the route table and the samples; a hand edit or a
    new function without `make events` fails here."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_events.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("function", HTTP, ids=lambda f: f.folder)
def test_each_http_function_answers_its_sample_event(service: None, function: Function) -> None:
    """OPS-2: the function's sample, with the data it names created first, is answered with success."""
    # Given what the sample names (a conversation and its message, the world save1, an import job)
    ids = _seed(function)
    # When the function is invoked with its sample event
    answer = _call(function.folder, _swap(_event(function.folder), ids))
    # Then it answers as that route does
    assert answer["statusCode"] == EXPECTED[function.folder], answer.get("body")


def test_the_queue_workers_answer_their_sample_batches(service: None) -> None:
    """OPS-2: the SQS samples are batches their workers answer with a partial-batch response; the
    ingestion sample's poisoned message is the one reported."""
    ingested = _call("ingest_dialogue_entries", _event("ingest_dialogue_entries"))
    assert ingested == {"batchItemFailures": [{"itemIdentifier": "2e1424d4-f796-459a-8184-9c92662be6da"}]}
    job = json.loads(_call("create_import", _event("create_import"))["body"])
    _upload(job)
    batch = _swap(_event("run_import"), {SAMPLE_JOB: job["job_id"]})
    assert _call("run_import", batch) == {"batchItemFailures": []}
    assert _call("run_user_job", _event("run_user_job")) == {"batchItemFailures": []}


def test_the_stream_functions_answer_their_sample_records(service: None) -> None:
    """OPS-2: the stream samples pass each function's filter and are processed, one record each."""
    assert _call("summarize_conversation", _event("summarize_conversation"))["records"] == 1
    assert _call("purge_conversation", _event("purge_conversation"))["records"] == 1


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with jwt_issuer() as running:
        yield running


def test_the_streaming_function_answers_its_function_url_sample(service: None, issuer: Issuer) -> None:
    """OPS-2, API-16: the function-URL sample, as the Lambda Web Adapter hands it to the function's HTTP
    server: refused with the placeholder token, streamed with a token of the configured issuer."""
    # Given the streaming function's server, verifying tokens of the issuer
    app = load("stream_chat")
    server = app.StreamServer(0, JwtVerifier(issuer.url, "client-1"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    event = _event("stream_chat")
    url = f"http://127.0.0.1:{server.server_address[1]}{event['rawPath']}"
    headers = {k: v for k, v in event["headers"].items() if k != "host"}
    try:
        # When the sample is sent as shipped, and again with a real token
        refused = httpx.post(url, headers=headers, content=event["body"], timeout=30)
        headers["authorization"] = f"Bearer {issuer.token()}"
        streamed = httpx.post(url, headers=headers, content=event["body"], timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    # Then the placeholder is refused and the real caller gets the reply as Server-Sent Events
    assert refused.status_code == 401
    assert streamed.status_code == 200, streamed.text
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert "data: [DONE]" in streamed.text
