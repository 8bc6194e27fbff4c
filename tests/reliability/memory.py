"""What a warm container keeps: memory allocated by `chat_core` over many post invocations (REL-6).

Runs the post_message handler in-process (moto for DynamoDB, the built-in offline model) N times into a
few conversations and samples, with tracemalloc, the memory still held by allocations made in
`chat_core` files (the layer's code; moto and the SDKs are excluded, since they are not in a Lambda's
layer or they are stand-ins). Flat means a warm Lambda container does not leak however many posts it
serves. `python -m tests.reliability.memory --posts 1000` prints the figures.
"""

from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

CHAT_CORE = str(Path(__file__).resolve().parents[2] / "layers" / "chat_core" / "chat_core")
TABLE = "chat-history-memory"


@dataclass(frozen=True)
class Sample:
    posts: int
    chat_core_bytes: int


def _held_by_chat_core() -> int:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, f"{CHAT_CORE}/*")])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def measure(posts: int, *, every: int = 100, conversations: int = 10) -> list[Sample]:
    """Post `posts` messages round-robin into `conversations` conversations; sample every `every` posts."""
    from chat_local import moto_fidelity
    from moto import mock_aws

    from tests.support import functions as api
    from tests.support.runtime import drop, renew
    from tests.support.table import create_table

    for name, value in {
        "TABLE_NAME": TABLE,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatHistory",
        "SUMMARY_ENABLED": "false",
        # Figures on stdout, not a log line per post.
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }.items():
        os.environ[name] = value
    os.environ.pop("LLM_BASE_URL", None)
    os.environ.pop("DYNAMODB_ENDPOINT", None)
    renew()
    moto_fidelity.install()
    samples: list[Sample] = []
    with mock_aws():
        create_table(TABLE)
        ids: list[str | None] = [None] * conversations
        # Warm up first (imports, encodings, caches that fill once), then start counting.
        for i in range(conversations):
            ids[i] = api.post(f"hello {i}", None).body["conversation_id"]
        tracemalloc.start()
        samples.append(Sample(0, _held_by_chat_core()))
        for n in range(1, posts + 1):
            answer = api.post(f"message {n}: how are things?", ids[n % conversations])
            if answer.status != 201:
                raise AssertionError(f"post {n} answered {answer.status}: {answer.body}")
            if n % every == 0:
                samples.append(Sample(n, _held_by_chat_core()))
        tracemalloc.stop()
    drop()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="chat_core memory over many in-process posts")
    parser.add_argument("--posts", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    args = parser.parse_args(argv)
    samples = measure(args.posts, every=args.every)
    print("| posts | memory held by chat_core allocations |")
    print("|---:|---:|")
    for sample in samples:
        print(f"| {sample.posts} | {sample.chat_core_bytes / 1024:.1f} KiB |")
    growth = samples[-1].chat_core_bytes - samples[1].chat_core_bytes
    print(f"growth from post {samples[1].posts} to {samples[-1].posts}: {growth / 1024:+.1f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
