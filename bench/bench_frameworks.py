"""LangChain's chat history, two ways on one embedded DynamoDB (moto): our adapter
(`chat_history_client.langchain.ChatHistoryMessageHistory`, over HTTP to the local server's real
handlers, in this process) and LangChain's own `DynamoDBChatMessageHistory`. DynamoDB calls and bytes
per message, appending 1,000 messages a turn at a time (as `RunnableWithMessageHistory` does) and reading
them all back."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import Section, progress, verdict
from bench.dynamodb_meter import Tally, install, metered, moto_env

MESSAGES = 1_000
CONTENT_CHARS = 200
PEER_TABLE = "langchain-peer-history"
SESSION = "bench-frameworks"
USER = "bench-user"


def _turns() -> list[list[Any]]:
    from langchain_core.messages import AIMessage, HumanMessage

    text = "The quarterly figures arrived late again, so the team compared margins by region. " * 4
    return [
        [
            HumanMessage(f"[{i}] " + text[: CONTENT_CHARS - 8]),
            AIMessage(f"[{i + 1}] " + text[: CONTENT_CHARS - 8]),
        ]
        for i in range(0, MESSAGES, 2)
    ]


@contextlib.contextmanager
def local_api() -> Iterator[tuple[str, str]]:
    """The local server in this process (its handlers' DynamoDB clients metered): its URL and its
    embedded DynamoDB endpoint."""
    from chat_local.server import LocalApi, RequestLog, ServerConfig, serve

    # Its request log and the functions' metrics lines would land among the tables on stdout.
    with (
        tempfile.TemporaryDirectory() as data,
        open(os.devnull, "w") as quiet,
        contextlib.redirect_stdout(quiet),
    ):
        saved = dict(os.environ)  # the server points the process's environment at its store
        config = ServerConfig(port=0, data_dir=Path(data), persist=False, log_level="ERROR")
        api = LocalApi(config, request_log=RequestLog(stream=quiet)).start()
        httpd = serve(api, "127.0.0.1", 0)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            assert api.embedded is not None
            yield f"http://127.0.0.1:{httpd.server_address[1]}", api.embedded.endpoint
        finally:
            httpd.shutdown()
            api.stop()
            os.environ.clear()
            os.environ.update(saved)
            _forget_store()


def _forget_store() -> None:
    """chat_core's cached settings and connections go with the server's store (later benches bind their
    own)."""
    from chat_core.runtime import Runtime, use

    # A new runtime: the models re-bind with new connections, TransactWrite gets its own.
    previous = use(Runtime.from_env())
    if previous is not None:
        previous.close()


def ours(url: str) -> tuple[Tally, Tally, int, str | None]:
    from chat_history_client.langchain import ChatHistoryMessageHistory

    history = ChatHistoryMessageHistory(SESSION, base_url=url, user_id=USER)
    with metered() as appended:
        for turn in _turns():
            history.add_messages(turn)
    with metered() as read:
        count = len(ChatHistoryMessageHistory(SESSION, base_url=url, user_id=USER).messages)
    return appended, read, count, None


def peer(endpoint: str) -> tuple[Tally, Tally, int, str | None]:
    import boto3
    from botocore.exceptions import ClientError
    from langchain_community.chat_message_histories import DynamoDBChatMessageHistory

    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    client.create_table(
        TableName=PEER_TABLE,
        AttributeDefinitions=[{"AttributeName": "SessionId", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "SessionId", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    history = DynamoDBChatMessageHistory(table_name=PEER_TABLE, session_id=SESSION, endpoint_url=endpoint)
    refused = None
    with metered() as appended:
        for index, turn in enumerate(_turns()):
            try:
                history.add_messages(turn)
            except ClientError as exc:  # its one item passed DynamoDB's 400 KB: the history is full
                refused = f"refused message {2 * index + 1:,}: {exc.response['Error']['Message']}"
                break
    with metered() as read:
        fresh = DynamoDBChatMessageHistory(table_name=PEER_TABLE, session_id=SESSION, endpoint_url=endpoint)
        count = len(fresh.messages)
    return appended, read, count, refused


def run() -> list[Section]:
    install()
    with moto_env(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench"), local_api() as (url, endpoint):
        progress(f"frameworks: our LangChain adapter, {MESSAGES:,} messages over HTTP")
        our_append, our_read, our_count, _ = ours(url)
        progress(f"frameworks: LangChain's DynamoDBChatMessageHistory, {MESSAGES:,} messages")
        lc_append, lc_read, lc_count, lc_refused = peer(endpoint)
    rows = []
    for label, append, read, count in (
        ("ours: ChatHistoryMessageHistory (HTTP API)", our_append, our_read, our_count),
        ("LangChain: DynamoDBChatMessageHistory", lc_append, lc_read, lc_count),
    ):
        calls, sent, received = (
            append.total_calls / max(count, 1),
            append.sent / max(count, 1),
            append.received / max(count, 1),
        )
        rows.append(
            [
                label,
                f"{calls:.2f}",
                f"{sent:,.0f}",
                f"{received:,.0f}",
                append.describe_calls(),
                read.describe_calls(),
                f"{read.received / 1024:,.0f}",
                count,
            ]
        )
    ours_sent = our_append.sent / max(our_count, 1)
    lc_sent = lc_append.sent / max(lc_count, 1)
    theirs = f"LangChain's DynamoDB history {lc_sent:,.0f} B" + (f" ({lc_refused})" if lc_refused else "")
    summary = [
        [
            f"LangChain history, {MESSAGES:,} messages appended: DynamoDB bytes sent per message stored",
            f"ours {ours_sent:,.0f} B, all {our_count:,} kept; {theirs}",
            "all kept, fewer bytes than rewriting the whole history each turn",
            verdict(ours_sent < lc_sent and our_count == MESSAGES),
        ]
    ]
    notes = (
        f"{MESSAGES // 2} turns of add_messages([human, ai]) ({CONTENT_CHARS}-character messages), then one "
        "fresh history reading every message. Ours: the client adapter over HTTP to the local server's "
        "handlers (running in this process, their DynamoDB calls metered; the conversation for the "
        "session key is created by the first add; each add is one append: the Query that reads the "
        "active path's end, one TransactWrite, Powertools' idempotency record; the counts also hold what "
        "the stream-triggered summarizer did in the background as the conversation grew). Theirs: one "
        "item per session holding the whole history, read "
        "and written back whole on every add (its size grows with the history: it stops at DynamoDB's "
        "400 KB item limit). Per-message figures divide by the messages stored. Both on the same embedded "
        "moto; calls and bytes are request and response bodies of DynamoDB calls, not moto timings."
        + (f" LangChain's history {lc_refused}." if lc_refused else "")
    )
    return [
        {
            "title": "LangChain chat history: our adapter vs LangChain's DynamoDBChatMessageHistory",
            "summary": summary,
            "columns": [
                "store",
                "calls / message appended",
                "bytes sent / message",
                "bytes read / message",
                f"calls for {MESSAGES:,} appended",
                "calls to read all",
                "KB read to read all",
                "messages read back",
            ],
            "rows": rows,
            "notes": notes,
        }
    ]
