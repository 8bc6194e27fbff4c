"""A long session against `make run`'s server: N sequential posts into one conversation (REL-6).

Starts the real local server (a subprocess, summaries on, the offline model unless LLM_BASE_URL is set,
the embedded store or an external endpoint), posts N messages one after another into one conversation,
samples the server's resident memory and every post's latency, and prints the figures: non-2xx answers,
messages lost or duplicated, RSS at the start and the end, the mean latency of the first and last 100
posts, and a bare Query's latency at the start and the end (moto's Query scans the whole table: that
growth is moto's, not the service's). Progress is printed every 50 posts.

    python -m tests.reliability.soak --posts 1000
    python -m tests.reliability.soak --posts 300 --external   # a standalone moto server as the endpoint
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.local_server import ServerProcess, local_client

TABLE = "chat-history-local"


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _bare_query_ms(endpoint: str) -> float:
    client = local_client(endpoint)
    started = time.perf_counter()
    for _ in range(5):
        client.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "USER#nobody#CONV#none"}},
        )
    return (time.perf_counter() - started) * 1000 / 5


def soak(posts: int, *, external: bool) -> dict[str, float]:
    data = Path(tempfile.mkdtemp(prefix="soak-"))
    store: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = {}
    if external:
        port = _free_port()
        moto_server = Path(sys.executable).with_name("moto_server")
        store = subprocess.Popen(
            [str(moto_server), "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        env["DYNAMODB_ENDPOINT"] = f"http://127.0.0.1:{port}"
    # As `make run` does: a snapshot at most every 2 s (the test fixture default is 0.5 s).
    server = ServerProcess(data, env=env, args=["--snapshot-interval", "2"]).start(timeout_s=120)
    try:
        assert server.proc is not None
        endpoint = env.get("DYNAMODB_ENDPOINT") or server.wait_for(r"embedded moto at (http://\S+),").group(1)
        client = httpx.Client(base_url=server.url, headers={"X-User-Id": "soak"}, timeout=120)
        first = client.post("/messages", json={"content": "hello"})
        conversation_id = first.json()["conversation_id"]
        rss_start = _rss_mb(server.proc.pid)
        query_start = _bare_query_ms(endpoint)
        latencies: list[float] = []
        failures = 0
        rss_max = rss_start
        for n in range(posts):
            started = time.perf_counter()
            answer = client.post(
                "/messages", json={"conversation_id": conversation_id, "content": f"message {n}"}
            )
            latencies.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 201:
                failures += 1
                print(f"post {n}: {answer.status_code} {answer.text[:200]}", flush=True)
            if n % 50 == 0 or n == posts - 1:
                rss_max = max(rss_max, _rss_mb(server.proc.pid))
                recent = sum(latencies[-50:]) / len(latencies[-50:])
                print(f"{n + 1}/{posts} posts, RSS {rss_max:.0f} MB, last 50: {recent:.0f} ms", flush=True)
        detail = client.get(f"/conversations/{conversation_id}", params={"limit": 200}).json()
        stored = detail["message_count"]
        contents: list[str] = []
        cursor = None
        while True:
            params: dict[str, str | int] = {"limit": 200}
            if cursor:
                params["cursor"] = cursor
            page = client.get(f"/conversations/{conversation_id}", params=params).json()
            contents += [m["content"] for m in page["messages"] if m["role"] == "user"]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        expected = ["hello", *(f"message {n}" for n in range(posts))]
        return {
            "posts": posts,
            "non_2xx": failures,
            "lost": len(set(expected) - set(contents)),
            "duplicated": len(contents) - len(set(contents)),
            "in_order": float(contents == expected),
            "message_count": stored,
            "rss_start_mb": rss_start,
            "rss_max_mb": max(rss_max, _rss_mb(server.proc.pid)),
            "first_100_ms": sum(latencies[:100]) / min(100, len(latencies)),
            "last_100_ms": sum(latencies[-100:]) / min(100, len(latencies)),
            "bare_query_start_ms": query_start,
            "bare_query_end_ms": _bare_query_ms(endpoint),
        }
    finally:
        server.stop()
        if store is not None:
            store.terminate()
            store.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="N sequential posts into one conversation via make run")
    parser.add_argument("--posts", type=int, default=1000)
    parser.add_argument(
        "--external", action="store_true", help="a standalone moto server as DYNAMODB_ENDPOINT"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
    figures = soak(args.posts, external=args.external)
    print("| figure | value |")
    print("|---|---:|")
    for key, value in figures.items():
        print(
            f"| {key.replace('_', ' ')} | {value:.1f} |"
            if isinstance(value, float)
            else f"| {key} | {value} |"
        )
    return 0 if figures["non_2xx"] == figures["lost"] == figures["duplicated"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
