"""The stream-triggered functions on the local server (`make run`): summaries (seed 001) and retention.

The server runs template.yaml as shipped; its table stream is delivered in-process to the summarizer
and the purge through their FilterCriteria. The stand-in model answers both the posts and the summaries.
A retention of 0 days and a fast TTL sweep make a deleted conversation expire at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from chat_core.store.keys import conversation_pk

from tests.support.local_server import ServerProcess, local_client
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e

SUMMARY_HEADING = "Summary of earlier conversation (messages 1\u2013"


def wait_for[T](probe: Callable[[], T | None], what: str, timeout_s: float = 30.0) -> T:
    """Poll until `probe` returns something (the stream is asynchronous by design); fail saying what."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def stream_server(
    standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    process = ServerProcess(
        tmp_path_factory.mktemp("stream-data"),
        env={
            "LLM_BASE_URL": standin.base_url,
            "LLM_MODEL": "standin-model",
            "LLM_MAX_RETRIES": "1",
            "SUMMARY_MARGIN_MESSAGES": "2",
            "RETENTION_DAYS": "0",
        },
        args=["--ttl-sweep-interval", "0.5"],
    )
    process.start()
    yield process
    process.stop()


def test_seed001_summary_is_produced_off_the_stream_and_shown_by_the_window(
    stream_server: ServerProcess, model: OpenAIStandin
) -> None:
    """Seed 001 end to end: posts only store turns; the summarizer, fed by the table's stream, asks the
    model for a summary of what fell out of the window; the window route then carries it."""
    with stream_server.client("stella") as api:
        # Given six turns (12 messages: 3 beyond the 9 the default window holds, margin 2)
        conversation_id: str | None = None
        for turn in range(1, 7):
            body: dict[str, Any] = {"content": f"turn {turn}: remember the number {turn * 111}"}
            if conversation_id:
                body["conversation_id"] = conversation_id
            answer = api.post("/messages", json=body)
            assert answer.status_code == 201, answer.text
            conversation_id = answer.json()["conversation_id"]

        # When the stream has been processed
        def summarized() -> dict[str, Any] | None:
            window = api.post(f"/conversations/{conversation_id}/window", json={"content": "what next?"})
            assert window.status_code == 200, window.text
            data: dict[str, Any] = window.json()
            summary = data["stats"]["summary"]
            # A summary is made once SUMMARY_MARGIN_MESSAGES (2) have fallen out unsummarized. If the
            # stream reaches the summarizer while the sixth post is half stored (its question in, two
            # messages out), the summary covers 1-2 and message 3 waits for the next turns, by design;
            # else it covers 1-3. Either way it grows, never shrinks.
            return data if summary is not None and summary["to_seq"] >= 2 else None

        window = wait_for(summarized, "a summary through seq 2 or later in the window's stats")
        health = api.get("/_local/health").json()
    # Then the window starts with the summary of the earliest messages, and its stats say what it covers
    first = window["messages"][0]
    assert first["role"] == "system"
    assert first["content"].startswith(SUMMARY_HEADING)
    stats = window["stats"]["summary"]
    assert stats["from_seq"] == 1
    assert stats["to_seq"] >= 2
    assert stats["included"] is True
    # and the model was asked for it with the earliest user message in the prompt
    prompts = [
        m[-1]["content"] for m in model.iter_sent_messages() if "New messages (" in str(m[-1]["content"])
    ]
    assert prompts
    assert "[1] user: turn 1: remember the number 111" in prompts[0]
    summarizer = next(s for s in health["streams"] if s["subscription"].startswith("SummarizeConversation"))
    assert summarizer["records"] >= 1
    assert summarizer["dropped"] == 0


def test_retention_purges_a_deleted_conversation_after_ttl_removal(
    stream_server: ServerProcess, model: OpenAIStandin
) -> None:
    """Retention end to end: a deleted conversation expires (RETENTION_DAYS=0), the local TTL sweep
    removes its item, and the purge function deletes everything in its partition; another stays."""
    with stream_server.client("tess") as api:
        # Given two conversations of two turns each
        ids = []
        for _ in range(2):
            first = api.post("/messages", json={"content": "keep or go"}).json()["conversation_id"]
            assert (
                api.post("/messages", json={"conversation_id": first, "content": "again"}).status_code == 201
            )
            ids.append(first)
        doomed, kept = ids
        endpoint = api.get("/_local/health").json()["dynamodb_endpoint"]
        table = api.get("/_local/health").json()["table"]
        # When one is deleted
        assert api.delete(f"/conversations/{doomed}").status_code == 204
        dynamodb = local_client(endpoint)

        def count(conversation_id: str) -> int:
            answer = dynamodb.query(
                TableName=table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": conversation_pk("tess", conversation_id)}},
                Select="COUNT",
            )
            return int(answer["Count"])

        # Then its partition empties once TTL has removed the conversation item
        wait_for(lambda: True if count(doomed) == 0 else None, "the purge of the deleted conversation")
        assert count(kept) >= 5
        assert api.get(f"/conversations/{kept}").status_code == 200

        def purge_stats() -> dict[str, Any] | None:
            # The poller counts a batch once the function has returned (after the partition emptied and
            # the conversation's S3 objects were deleted): wait for that too.
            streams = api.get("/_local/health").json()["streams"]
            stats: dict[str, Any] = next(s for s in streams if s["subscription"].startswith("Purge"))
            return stats if stats["records"] >= 1 else None

        purge = wait_for(purge_stats, "the purge's stream batch to be counted")
    assert purge["failures"] == 0
