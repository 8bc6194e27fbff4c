"""LOC-1: the embedded AWS services' HTTP server (chat_local.moto_server) keeps connections alive.

Every AWS call of the local server (handlers, stream and queue pollers, snapshots) goes to it over
loopback HTTP. These drive it with a raw socket, as an SDK's connection pool would: requests one after
another on one connection, each answered whole, the next request line found where the body ended.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from chat_local.dynamodb import EmbeddedDynamoDB

_AUTH = (
    "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/{service}/aws4_request, "
    "SignedHeaders=host, Signature=0"
)


def _request(method: str, path: str, service: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        f"Authorization: {_AUTH.format(service=service)}",
    ]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    if "Transfer_Encoding" not in headers:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _dynamodb(operation: str, body: bytes = b"{}") -> bytes:
    return _request(
        "POST",
        "/",
        "dynamodb",
        body,
        X_Amz_Target=f"DynamoDB_20120810.{operation}",
        Content_Type="application/x-amz-json-1.0",
    )


class _Answers:
    """HTTP answers read off one socket, each by its Content-Length (the way a client's pool reads them)."""

    def __init__(self, sock: socket.socket) -> None:
        self.file = sock.makefile("rb")

    def next(self, head: bool = False) -> tuple[int, dict[str, str], bytes]:
        status = self.file.readline()
        assert status.startswith(b"HTTP/1.1 "), status
        headers: dict[str, str] = {}
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b"" if head else self.file.read(int(headers.get("content-length", "0")))
        return int(status.split()[1]), headers, body


@pytest.fixture
def connection(store: EmbeddedDynamoDB) -> Iterator[socket.socket]:
    with socket.create_connection((store.host, store.port), timeout=30) as sock:
        yield sock


def test_calls_sent_one_after_another_on_one_connection_are_each_answered(connection: Any) -> None:
    """Two DynamoDB calls written at once (the second right behind the first's body): both answered, on
    the same connection, which stays open."""
    connection.sendall(_dynamodb("ListTables", b'{"Limit": 5}') + _dynamodb("DescribeLimits"))
    answers = _Answers(connection)
    first, second = answers.next(), answers.next()
    assert first[0] == 200
    assert b"TableNames" in first[2]
    assert second[0] == 200
    assert b"AccountMaxReadCapacityUnits" in second[2]
    assert "close" not in first[1].get("connection", "") + second[1].get("connection", "")
    connection.sendall(_dynamodb("ListTables"))
    assert answers.next()[0] == 200


def test_a_head_answer_states_the_length_and_sends_no_body(connection: Any) -> None:
    """S3: a HEAD answer carries the object's length and no body, so the GET behind it reads the object."""
    connection.sendall(_request("PUT", "/keepalive-bucket", "s3"))
    answers = _Answers(connection)
    assert answers.next()[0] == 200
    connection.sendall(_request("PUT", "/keepalive-bucket/k", "s3", b"hello", Content_Type="text/plain"))
    assert answers.next()[0] == 200
    connection.sendall(
        _request("HEAD", "/keepalive-bucket/k", "s3") + _request("GET", "/keepalive-bucket/k", "s3")
    )
    status, headers, _ = answers.next(head=True)
    assert (status, headers["content-length"]) == (200, "5")
    assert answers.next()[2] == b"hello"


def test_a_chunked_request_is_answered_and_its_connection_closed(connection: Any) -> None:
    """A body without a stated length cannot be told from the next request: answered, then closed."""
    body = b'{"Limit": 5}'
    chunked = _dynamodb("ListTables").split(b"Content-Length")[0] + b"Transfer-Encoding: chunked\r\n\r\n"
    connection.sendall(chunked + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
    answers = _Answers(connection)
    status, headers, body_read = answers.next()
    assert status == 200
    assert b"TableNames" in body_read
    assert headers["connection"] == "close"
    assert answers.file.read() == b""  # the server closed it
