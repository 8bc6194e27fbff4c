"""CLIENT-1: `ChatHistoryClient` and `AsyncChatHistoryClient` against the local server over HTTP, and
their retries against a loopback server that answers 429/503 first."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from chat_history_client import (
    AsyncChatHistoryClient,
    AuthenticationError,
    BudgetExceeded,
    ChatHistoryClient,
    Conflict,
    ErasureReceipt,
    ImportFailed,
    InvalidRequest,
    JobNotDone,
    NotFound,
    ServiceUnavailable,
    TransportError,
    UserExport,
    UserImport,
)

from tests.support.local_server import ServerProcess, settle_streams
from tests.support.openai_standin import OpenAIStandin
from tests.support.tls_server import TlsServer

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def alice(server: ServerProcess, model: OpenAIStandin) -> Iterator[ChatHistoryClient]:
    with ChatHistoryClient(server.url, user_id="alice") as client:
        yield client


def test_a_conversation_by_key_posts_appends_and_reads_back(alice: ChatHistoryClient) -> None:
    """CLIENT-1 / API-21: the typed results of the main calls, from a key to the messages."""
    conversation = alice.conversation_for_key("client:basics@x", title="Basics")
    assert conversation.key == "client:basics@x"
    assert alice.conversation_for_key("client:basics@x").conversation_id == conversation.conversation_id
    answer = alice.post_message("hello there", conversation.conversation_id)
    assert answer.user_message is not None
    assert answer.user_message.content == "hello there"
    assert answer.assistant_message.role == "assistant"
    stored = alice.append_messages(
        conversation.conversation_id,
        [{"role": "user", "content": "noted"}, {"role": "assistant", "content": "ok", "metadata": {"n": 1}}],
    )
    assert [m.content for m in stored] == ["noted", "ok"]
    messages = list(alice.iter_messages(conversation.conversation_id, page_size=1))
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[-1].metadata == {"n": 1}
    assert messages[1].parent_id == messages[0].message_id
    found = alice.find_conversation("client:basics@x")
    assert found is not None
    assert found.message_count == 4
    assert alice.find_conversation("no-such-key") is None
    popped = alice.delete_message(conversation.conversation_id, messages[-1].message_id)
    assert [m.message_id for m in popped] == [messages[-1].message_id]


def test_the_apis_errors_are_typed_exceptions(alice: ChatHistoryClient, server: ServerProcess) -> None:
    """CLIENT-1: 404, 422 (with the code and the field), 409 and 401 surface as their own exceptions."""
    with pytest.raises(NotFound) as missing:
        alice.get_conversation("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert missing.value.status == 404
    with pytest.raises(InvalidRequest) as too_long:
        alice.post_message("x" * 5001)
    assert too_long.value.code == "message_too_long"
    alice.create_conversation(key="client-taken")
    with pytest.raises(Conflict) as taken:
        alice.create_conversation(key="client-taken")
    assert taken.value.code == "conversation_key_taken"
    with pytest.raises(InvalidRequest) as bad_key:
        alice.conversation_for_key("has space")
    assert "key" in bad_key.value.message
    with ChatHistoryClient(server.url, token="not-a-jwt") as stranger, pytest.raises(AuthenticationError):
        stranger.list_conversations()


def test_the_async_client_does_the_same(server: ServerProcess, model: OpenAIStandin) -> None:
    """CLIENT-1: the async client's calls and iteration."""

    async def run() -> list[str]:
        async with AsyncChatHistoryClient(server.url, user_id="alice") as client:
            conversation = await client.conversation_for_key("client-async")
            await client.append_messages(
                conversation.conversation_id,
                [{"role": "user", "content": f"m{i}"} for i in range(5)],
            )
            return [
                m.content or "" async for m in client.iter_messages(conversation.conversation_id, page_size=2)
            ]

    assert asyncio.run(run()) == [f"m{i}" for i in range(5)]


class _Flaky(BaseHTTPRequestHandler):
    """Answers the first `failures` requests with `status` (and Retry-After), then 201."""

    script: list[tuple[int, dict[str, Any]]]
    seen: list[dict[str, str]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(dict(self.headers))
        status, body = self.script.pop(0) if self.script else (201, _POSTED)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status in (429, 503, 409):
            # A budget resets at midnight UTC (COST-4): hours away; other answers say "now".
            budget = body.get("error", {}).get("code") == "budget_exceeded"
            self.send_header("Retry-After", "19508" if budget else "0")
        self.end_headers()
        self.wfile.write(payload)


_MESSAGE = {"message_id": "m", "conversation_id": "c", "role": "user", "content": "hi"}
_POSTED = {
    "conversation_id": "c",
    "user_message": _MESSAGE,
    "assistant_message": {**_MESSAGE, "role": "assistant", "content": "hello"},
}


def _serve(script: list[tuple[int, dict[str, Any]]]) -> tuple[ThreadingHTTPServer, list[dict[str, str]]]:
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Flaky,), {"script": script, "seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, seen


def _error(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": code}}


def test_429_503_and_busy_are_retried_with_one_idempotency_key() -> None:
    """CLIENT-1 / API-6: retried answers are sent again with the same Idempotency-Key, so the service
    never stores the post twice; the result is the final answer's."""
    httpd, seen = _serve(
        [
            (429, _error("rate_limited")),
            (503, _error("store_unavailable")),
            (409, _error("conversation_busy")),
        ]
    )
    try:
        with ChatHistoryClient(f"http://127.0.0.1:{httpd.server_port}", user_id="alice") as client:
            answer = client.post_message("hi")
    finally:
        httpd.shutdown()
    assert answer.assistant_message.content == "hello"
    assert len(seen) == 4
    keys = {headers["Idempotency-Key"] for headers in seen}
    assert len(keys) == 1
    assert next(iter(keys))


def test_retries_stop_at_the_limit_and_a_reply_not_stored_is_not_retried() -> None:
    """CLIENT-1: after max_retries the error is raised; 503 reply_not_stored carries the reply and is
    handed over at once."""
    httpd, seen = _serve([(503, _error("store_unavailable"))] * 3)
    try:
        with (
            ChatHistoryClient(
                f"http://127.0.0.1:{httpd.server_port}", user_id="alice", max_retries=2
            ) as client,
            pytest.raises(ServiceUnavailable),
        ):
            client.post_message("hi")
        assert len(seen) == 3
        seen.clear()
        httpd.RequestHandlerClass.script.append((503, {**_POSTED, **_error("reply_not_stored")}))  # type: ignore[attr-defined]
        url = f"http://127.0.0.1:{httpd.server_port}"
        with ChatHistoryClient(url, user_id="alice") as client, pytest.raises(ServiceUnavailable) as kept:
            client.post_message("hi")
        assert len(seen) == 1
        assert kept.value.body["assistant_message"]["content"] == "hello"
    finally:
        httpd.shutdown()


def test_a_budget_refusal_is_raised_at_once_not_retried() -> None:
    """CLIENT-1 / COST-4: 429 budget_exceeded is final (its window resets hours away): raised at once as
    BudgetExceeded with the seconds until the reset, never slept on."""
    httpd, seen = _serve([(429, _error("budget_exceeded"))])
    try:
        with (
            ChatHistoryClient(f"http://127.0.0.1:{httpd.server_port}", user_id="alice") as client,
            pytest.raises(BudgetExceeded) as refused,
        ):
            client.post_message("hi")
    finally:
        httpd.shutdown()
    assert len(seen) == 1
    assert refused.value.status == 429
    assert refused.value.retry_after == 19508.0


def test_usage_and_budgets_are_methods(alice: ChatHistoryClient, server: ServerProcess) -> None:
    """CLIENT-1 / COST-3 / COST-4: the caller's usage by day and model; setting a budget without being an
    administrator is refused (403). Usage is added from the table's stream: each read below waits until
    the server's stream has delivered what was written before it."""
    settle_streams(server.url)
    before = alice.usage()["totals"]["calls"]
    alice.post_message("count me")
    settle_streams(server.url)
    report = alice.usage()
    assert report["user_id"] == "alice"
    assert report["totals"]["calls"] == before + 1
    assert [m["model"] for m in report["models"]] == ["standin-model"]
    with pytest.raises(AuthenticationError) as refused:
        alice.set_budget("alice", daily_tokens=None)
    assert (refused.value.status, refused.value.code) == (403, "forbidden")


def _until(check: Any, read: Any, url: str, timeout_s: float = 30.0) -> Any:
    """`read()` once `check` holds of it (the stream indexes a turn and extracts its facts in the
    background), or its last value at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        settle_streams(url)
        value = read()
        if check(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_memory_search_and_facts_are_methods(tmp_path: Path) -> None:
    """CLIENT-1 / MEM-11 / MEM-32 / MEM-33: `search_memory` finds what the caller said in any of their
    conversations; `memory_facts` lists the facts taken from it and `delete_memory_fact` deletes one for
    good; the async client answers the same."""
    server = ServerProcess(tmp_path, env={"FACTS_EXTRACTION": "all"}, args=["--no-persist"]).start()
    try:
        with ChatHistoryClient(server.url, user_id="fiona") as fiona:
            # Given a turn in which the user says where they live
            posted = fiona.post_message("Hi! I live in Lisbon.")
            # Then a search finds it, in all their conversations and in that one
            found = _until(bool, lambda: fiona.search_memory("where do I live Lisbon"), server.url)
            assert found[0]["conversation_id"] == posted.conversation_id
            assert "Lisbon" in found[0]["snippet"]
            one = fiona.search_memory("Lisbon", limit=1, conversation_id=posted.conversation_id)
            assert [r["message_id"] for r in one] == [found[0]["message_id"]]
            # And the fact taken from it is listed, page by page too
            facts = _until(lambda page: page.items, fiona.memory_facts, server.url).items
            assert [f["text"] for f in facts] == ["The user lives in Lisbon"]
            assert [f["id"] for f in fiona.iter_memory_facts(page_size=1)] == [facts[0]["id"]]
            with pytest.raises(InvalidRequest):
                fiona.search_memory("")

            async def in_async() -> tuple[list[dict[str, Any]], list[str]]:
                async with AsyncChatHistoryClient(server.url, user_id="fiona") as client:
                    results = await client.search_memory("Lisbon")
                    ids = [f["id"] async for f in client.iter_memory_facts()]
                    return results, ids

            results, ids = asyncio.run(in_async())
            assert results[0]["message_id"] == found[0]["message_id"]
            assert ids == [facts[0]["id"]]
            # When the fact is deleted, it is gone, and deleting it again is NotFound
            fiona.delete_memory_fact(facts[0]["id"])
            assert fiona.memory_facts(include_superseded=True).items == []
            with pytest.raises(NotFound):
                fiona.delete_memory_fact(facts[0]["id"])
    finally:
        server.stop()


def test_prv1_prv2_a_user_exports_then_erases_their_data(server: ServerProcess, tmp_path: Path) -> None:
    """CLIENT-1 / PRV-4 (PRV-2, PRV-1): `export_user_data` waits for the archive and `download_user_export` /
    `read_user_export` fetch it; `erase_user_data` refuses without the user id typed again, then waits for
    the receipt, and the user's conversations are gone; the async client does the same."""
    with ChatHistoryClient(server.url, user_id="erin") as erin:
        # Given a user with a conversation of one turn
        posted = erin.post_message("keep this safe")
        # When they export their data (user_id: the client's own)
        export = erin.export_user_data(timeout=60)
        # Then the export is done, with a URL, and its archive holds the conversation
        assert (export.status, export.user_id) == ("done", "erin")
        assert export.url
        assert export.counts == {"conversations": 1, "messages": 2}
        archive = erin.read_user_export(export)
        assert [c["conversation_id"] for c in archive["conversations"]] == [posted.conversation_id]
        saved = erin.download_user_export(export, tmp_path / "erin.json.gz")
        assert gzip.decompress(saved.read_bytes()).startswith(b"{")
        # When the erasure is asked for without the typed confirmation, nothing is sent
        with pytest.raises(ValueError, match="confirm='erin'"):
            erin.erase_user_data(confirm="eri")
        assert erin.get_user_erasure().status == "none"
        # When it is confirmed
        receipt = erin.erase_user_data(confirm="erin", timeout=60)
        # Then the receipt says what was erased, and nothing of the user is left
        assert (receipt.status, receipt.requested_by) == ("done", "erin")
        assert receipt.counts["items"] > 0
        assert erin.list_conversations().items == []
        # And another user's data cannot be erased by them
        with pytest.raises(AuthenticationError):
            erin.erase_user_data("alice", confirm="alice")

    async def in_async() -> tuple[UserExport, ErasureReceipt]:
        async with AsyncChatHistoryClient(server.url, user_id="fern") as fern:
            await fern.post_message("and mine")
            export = await fern.export_user_data(timeout=60)
            assert (await fern.read_user_export(export))["user_id"] == "fern"
            saved = await fern.download_user_export(export, tmp_path / "fern.json.gz")
            assert json.loads(gzip.decompress(saved.read_bytes()))["user_id"] == "fern"
            return export, await fern.erase_user_data(confirm="fern", timeout=60)

    export, receipt = asyncio.run(in_async())
    assert export.counts == {"conversations": 1, "messages": 2}
    assert receipt.done


def test_prv3_an_export_and_a_chatgpt_file_import_through_the_client(
    server: ServerProcess, tmp_path: Path
) -> None:
    """CLIENT-1 / PRV-4 (PRV-3): `import_user_data` uploads a file (bytes or a path), starts the job and waits
    for its conversations; a refused file raises ImportFailed naming where it is wrong, and nothing of it is
    written; the async client does the same."""
    with (
        ChatHistoryClient(server.url, user_id="gil") as gil,
        ChatHistoryClient(server.url, user_id="hal") as hal,
    ):
        # Given a user's export saved to a file
        posted = gil.post_message("carry this over")
        export = gil.export_user_data(timeout=60)
        saved = gil.download_user_export(export, tmp_path / "gil.json.gz")
        # When another user imports it from its path
        job = hal.import_user_data(saved, timeout=60)
        # Then the job is done and the conversation is theirs, message by message
        assert (job.status, job.format) == ("done", "chat-history.user-export")
        [imported] = job.conversation_ids
        mine = [(m.role, m.content) for m in hal.iter_messages(imported)]
        theirs = [(m.role, m.content) for m in gil.iter_messages(posted.conversation_id)]
        assert mine == theirs
        # When ChatGPT's conversations.json is imported as bytes
        chatgpt = (REPO / "tests" / "data" / "chatgpt" / "conversations.json").read_bytes()
        assert len(hal.import_user_data(chatgpt, timeout=60).conversation_ids) >= 1
        # When a file that is neither is imported
        before = len(hal.list_conversations().items)
        with pytest.raises(ImportFailed) as refused:
            hal.import_user_data(b'{"format": "chat-history.user-export", "version": 2}', timeout=60)
        # Then the error names what is wrong, and nothing was added
        assert refused.value.job.status == "failed"
        assert "version 2" in str(refused.value)
        assert len(hal.list_conversations().items) == before

    async def in_async() -> UserImport:
        async with AsyncChatHistoryClient(server.url, user_id="ida") as ida:
            return await ida.import_user_data(saved, timeout=60)

    assert len(asyncio.run(in_async()).conversation_ids) == 1


def test_prv4_waiting_on_a_job_stops_at_its_deadline_and_the_jwt_names_the_user() -> None:
    """PRV-4: a job not done by the deadline raises JobNotDone carrying its last state (no request is
    made for that); with a JWT and no user_id, the user is the token's `sub`."""
    # Given a client with a JWT whose subject is "sam" (never sent: the deadline is already past)
    payload = base64.urlsafe_b64encode(json.dumps({"sub": "sam"}).encode()).decode().rstrip("=")
    with ChatHistoryClient("http://127.0.0.1:9", token=f"e30.{payload}.sig") as client:
        queued = UserExport(export_id="e1", user_id="sam", status="queued")
        # When it waits on a queued export for no time at all
        with pytest.raises(JobNotDone) as late:
            client.wait_user_export(queued, timeout=0)
        # Then the error carries the last state
        assert late.value.job is queued
        # And an erasure of someone else's id typed as confirmation is refused before any request
        with pytest.raises(ValueError, match="confirm='sam'"):
            client.erase_user_data(confirm="alice")


def test_a_service_with_its_own_certificate_is_trusted_once_ssl_cert_file_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLIENT-1: a deployment behind a private CA, the sync and the async client alike: refused while only
    the default CAs are trusted, answered once SSL_CERT_FILE names its certificate, refused again when the
    variable is gone (clients made in one process share a TLS context per value of the variables)."""
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with TlsServer(tmp_path, {"items": [], "next_cursor": None}) as server:

        def listed() -> tuple[Any, Any]:
            with ChatHistoryClient(server.url, user_id="tls", max_retries=0) as client:
                sync = client.list_conversations()

            async def run() -> Any:
                async with AsyncChatHistoryClient(server.url, user_id="tls", max_retries=0) as client:
                    return await client.list_conversations()

            return sync, asyncio.run(run())

        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        with pytest.raises(TransportError, match=r"(?i)certificate"):
            listed()
        monkeypatch.setenv("SSL_CERT_FILE", str(server.certificate))
        assert [page.items for page in listed()] == [[], []]
        monkeypatch.delenv("SSL_CERT_FILE")
        with pytest.raises(TransportError):
            listed()
