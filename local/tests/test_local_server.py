"""chat_local.server in-process: the test-only template's handlers behind a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from chat_local.server import LocalApi, RequestLog, ServerConfig, serve

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "local_app" / "template.yaml"


class Running:
    def __init__(self, api: LocalApi, url: str, log: io.StringIO) -> None:
        self.api = api
        self.url = url
        self.log = log


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """LocalApi on the fixture template; the process environment is restored afterwards."""
    saved = dict(os.environ)
    log = io.StringIO()
    api = LocalApi(
        ServerConfig(
            port=0,
            template=FIXTURE,
            data_dir=tmp_path_factory.mktemp("local"),
            ttl_sweep_interval_s=0,
            concurrency=2,
        ),
        request_log=RequestLog(log),
    )
    httpd = serve(api, "127.0.0.1", 0)
    try:
        api.start()
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        yield Running(api, f"http://127.0.0.1:{httpd.server_port}", log)
    finally:
        httpd.shutdown()
        httpd.server_close()
        api.stop()
        os.environ.clear()
        os.environ.update(saved)  # `stop` put back the runtime of before: nothing later sees this endpoint


@pytest.fixture
def http(running: Running) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=running.url, timeout=30) as client:
        yield client


def test_handler_receives_a_v2_event_with_identity_and_its_context(http: httpx.Client) -> None:
    """LOC-1: the real handler runs in-process on an API Gateway v2 event; context from the template."""
    # When the echo route is called with an identity, a query and a path parameter
    response = http.get("/echo/bob?x=1&x=2", headers={"X-User-Id": "u-1", "X-Custom": "Yes"})
    # Then the handler saw the event API Gateway would send, and a context with the function's Timeout
    assert response.status_code == 200
    seen = response.json()
    event = seen["event"]
    assert event["routeKey"] == "GET /echo/{name}"
    assert event["pathParameters"] == {"name": "bob"}
    assert event["queryStringParameters"] == {"x": "1,2"}
    assert event["headers"]["x-custom"] == "Yes"
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] == "u-1"
    assert seen["function_name"] == "EchoFunction"
    assert 10_000 < seen["remaining_ms"] <= 11_000  # Timeout: 11 in the template
    assert seen["env"]["TABLE_NAME"] == "chat-history-local"
    assert seen["env"]["STAGE"] == "test-stage"
    # and the response headers and cookies came back
    assert response.headers["x-echo"] == "yes"
    assert response.headers["set-cookie"] == "flavour=oat; Path=/"


def test_binary_request_bodies_arrive_base64_encoded(http: httpx.Client) -> None:
    """LOC-1: body base64 when binary (isBase64Encoded)."""
    # When a binary body is posted
    response = http.post(
        "/echo", content=b"\x00\xffdata", headers={"Content-Type": "application/octet-stream"}
    )
    # Then the handler got it base64-encoded
    event = response.json()["event"]
    assert event["isBase64Encoded"] is True
    assert event["body"] == "AP9kYXRh"


def test_binary_responses_are_decoded(http: httpx.Client) -> None:
    """A base64 proxy response body is sent as bytes."""
    # When the handler answers with a base64 body
    response = http.get("/any/binary")
    # Then the client receives the bytes
    assert response.headers["content-type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")


def test_unhandled_exception_is_a_500_without_internal_details(
    http: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crashing handler: 500 in the error shape, the traceback on the server console only."""
    # When the handler raises
    response = http.get("/boom")
    # Then the client gets a generic 500, and the detail went to the console
    assert response.status_code == 500
    assert response.json() == {"error": {"code": "internal_error", "message": "Internal Server Error"}}
    assert "secret internal detail" not in response.text
    assert "secret internal detail" in capsys.readouterr().err


def test_a_handler_that_cannot_be_imported_is_a_502_naming_the_problem(
    http: httpx.Client, running: Running
) -> None:
    """A broken handler module does not stop the server: its route answers 502 with the import error."""
    # When the broken route is called
    response = http.get("/broken")
    # Then
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "handler_unavailable"
    assert "module_that_does_not_exist" in response.json()["error"]["message"]
    assert "BrokenFunction" in running.api.import_errors


def test_functions_do_not_share_same_named_sibling_modules(http: httpx.Client) -> None:
    """Like Lambda, each function imports its own `fixture_sibling.py` from its CodeUri."""
    # When both functions report their sibling module
    echo = http.get("/echo/x").json()["sibling"]
    writer = http.post("/items", json={"pk": "SIB", "sk": "1"}).json()["sibling"]
    # Then each got its own
    assert (echo, writer) == ("echo", "writer")


def test_concurrent_requests_run_in_separate_containers(http: httpx.Client, running: Running) -> None:
    """Concurrency: two overlapping requests to one function use two warm containers (module imports)."""
    # When two slow requests overlap
    with ThreadPoolExecutor(2) as pool:
        modules = list(pool.map(lambda _: http.get("/echo/slow?sleep=0.5").json()["module"], range(2)))
    # Then they ran in different module instances
    assert len(set(modules)) == 2


def test_request_body_over_the_api_gateway_limit_is_413(http: httpx.Client) -> None:
    """API Gateway HTTP API refuses payloads over 10 MB; so does the local server."""
    # When 10 MB + 1 byte is posted
    response = http.post("/echo", content=b"x" * (10 * 1024 * 1024 + 1))
    # Then
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_one_log_line_per_request(http: httpx.Client, running: Running) -> None:
    """LOC-1: method, path, status, milliseconds, and which function answered."""
    # When a request is made
    http.get("/echo/logged")
    # Then the request log has its line
    lines = [ln for ln in running.log.getvalue().splitlines() if "/echo/logged" in ln]
    assert len(lines) == 1
    parts = lines[0].split()
    assert parts[1:4] == ["GET", "/echo/logged", "200"]
    assert parts[5] == "ms"
    assert parts[6] == "EchoFunction"


def test_direct_invocation_through_the_lambda_invoke_api(running: Running) -> None:
    """EVT-1 direct invocation locally: `aws lambda invoke --endpoint-url <local server>` works."""
    # Given boto3's Lambda client pointed at the local server
    client = boto3.client(
        "lambda",
        endpoint_url=running.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    # When a plain payload is sent to a function, and one that raises
    ok = client.invoke(FunctionName="EchoFunction", Payload=json.dumps({"rawPath": "/plain"}).encode())
    failed = client.invoke(FunctionName="BoomFunction", Payload=b"{}")
    # Then the result comes back, and the error as Lambda reports it
    assert json.loads(ok["Payload"].read()) == {"plain": True}
    assert failed["FunctionError"] == "Unhandled"
    assert json.loads(failed["Payload"].read())["errorType"] == "RuntimeError"


def test_openapi_lists_template_routes_even_without_a_resolver(http: httpx.Client) -> None:
    """The OpenAPI document lists exactly what the template serves (these handlers have no resolver)."""
    # When the document is fetched
    paths = http.get("/openapi.json").json()["paths"]
    # Then every template route is described with its path parameters
    assert set(paths) == {"/echo/{name}", "/echo", "/any/{proxy+}", "/boom", "/broken", "/items"}
    assert paths["/echo/{name}"]["get"]["parameters"][0]["name"] == "name"


def test_health_reports_the_store_and_streams(http: httpx.Client) -> None:
    """GET /_local/health: table, endpoint, routes, stream subscriptions (for scripts and tests)."""
    # When health is fetched
    health = http.get("/_local/health").json()
    # Then
    assert health["status"] == "ok"
    assert health["embedded"] is True
    assert health["dynamodb_endpoint"].startswith("http://127.0.0.1:")
    assert [s["subscription"] for s in health["streams"]] == ["AuditFunction.TableStream"]


def _sqs(running: Running) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=running.api.endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def _wait(condition: Callable[[], Any], timeout_s: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail("condition not met in time")


def test_queue_urls_resolve_to_the_embedded_queues(running: Running) -> None:
    """!Ref of an AWS::SQS::Queue in a function's environment is the local queue's URL."""
    # When the consumer's environment is read / Then it points at the queue the server created
    assert running.api.template is not None
    env = running.api.template.functions["ConsumerFunction"].environment
    assert env["WORK_QUEUE_URL"] == running.api.queue_urls["WorkQueue"]


def test_queue_messages_reach_the_sqs_triggered_function(http: httpx.Client, running: Running) -> None:
    """SQS event source locally: a message sent to the template's queue is delivered to its function."""
    # When a message is sent through the local helper route
    sent = http.post("/_local/queues/WorkQueue", content=json.dumps({"kind": "store", "id": "m1"}))
    # Then the function stored it (first delivery)
    assert sent.status_code == 202
    client = boto3.client(
        "dynamodb",
        endpoint_url=running.api.endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    item = _wait(
        lambda: client.get_item(
            TableName="chat-history-local", Key={"pk": {"S": "QUEUE#m1"}, "sk": {"S": "1"}}
        ).get("Item")
    )
    assert item["source"]["S"].endswith(":chat-local-WorkQueue")


def test_failing_queue_messages_go_to_the_dead_letter_queue(http: httpx.Client, running: Running) -> None:
    """ReportBatchItemFailures + RedrivePolicy: a message that keeps failing ends in the DLQ."""
    # When a message that always fails is sent
    http.post("/_local/queues/WorkQueue", content=json.dumps({"kind": "fail", "id": "bad"}))
    # Then it arrives in the dead-letter queue after its receives
    sqs = _sqs(running)
    dlq = running.api.queue_urls["WorkDeadLetterQueue"]
    messages = _wait(
        lambda: sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=1).get("Messages"), timeout_s=30
    )
    assert json.loads(messages[0]["Body"]) == {"kind": "fail", "id": "bad"}


def test_filtered_out_queue_messages_are_deleted_without_invoking(
    http: httpx.Client, running: Running
) -> None:
    """SQS FilterCriteria: a message that does not match is deleted, as Lambda does, and never delivered."""
    # Given the consumer's current count
    poller = next(p for p in running.api.queue_pollers if p.subscription.name == "ConsumerFunction.Work")
    before = poller.stats.filtered_out
    # When a message of another kind is sent
    http.post("/_local/queues/WorkQueue", content=json.dumps({"kind": "ignore", "id": "x"}))
    # Then it is filtered out and gone from the queue
    _wait(lambda: poller.stats.filtered_out > before)
    attributes = _sqs(running).get_queue_attributes(
        QueueUrl=running.api.queue_urls["WorkQueue"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"


def test_sending_to_an_unknown_queue_is_404(http: httpx.Client) -> None:
    """The local queue route names the queues it knows."""
    # When an unknown queue is used / Then
    response = http.post("/_local/queues/Nope", content="x")
    assert response.status_code == 404
    assert "WorkQueue" in response.json()["error"]["message"]


class _SharedStdout(io.StringIO):
    """A stdout other threads write to as well: another writer's line lands right after each write."""

    def write(self, text: str) -> int:
        written = super().write(text)
        if text.strip():
            super().write("function log line\n")
        return written


def test_an_access_line_stays_whole_when_another_thread_writes_to_the_same_stdout() -> None:
    """LOC-1: `make run`'s access and stream lines are whole lines, whatever the functions' loggers write
    to the same stdout at the same moment (no access line with a log line glued to its end)."""
    # Given the request log on a stdout that another writer uses between any two writes
    out = _SharedStdout()
    log = RequestLog(out)
    # When a request and a stream batch are logged
    log.write("GET", "/v1/responses", 101, 12.0, "websocket")
    log.event("stream", "UsageFeed", "1 record ok", 3.0)
    # Then each is a line of its own, and so is every line of the other writer
    lines = out.getvalue().splitlines()
    assert [line for line in lines if line != "function log line"] == [
        lines[0],
        lines[2],
    ]
    assert lines[0].endswith("GET    /v1/responses 101 12 ms  websocket")
    assert lines[2].endswith("stream UsageFeed 1 record ok 3 ms")
    assert lines[1] == lines[3] == "function log line"
