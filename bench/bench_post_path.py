"""Post path vs history length: DynamoDB calls and bytes per POST /messages at 10 to 10,000 messages."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench import Section, ms, progress, verdict
from bench.bench_storage import (
    DYNAMODB_ITEM_LIMIT,
    PEER_TABLE,
    SESSION,
    FixedReplyModel,
    _peer_table,
    _reset_pynamodb,
    chat_service,
    message_text,
    peer_entries,
    peer_item_sizes,
)
from bench.dynamodb_meter import Tally, kb, metered, moto_env, moto_fixes

LENGTHS = (10, 1_000, 10_000)
TABLE = "chat-history-post-bench"
OWNER = "bench-user"
MODEL = "gpt-4o-mini"
POSTS = {10: 3, 1_000: 3, 10_000: 3}
OWN_POLICY = {"max_tokens": 8_000}  # a conversation's own token budget: reads up to 200 newest messages
BATCH = 25  # BatchWriteItem's per-call maximum
REPLY = message_text(0)


@dataclass
class PostRun:
    """The DynamoDB work of one post (the median post where several were measured)."""

    tally: Tally = field(default_factory=Tally)
    client_seconds: float = 0.0
    posts: int = 0
    status: int = 0


def _seed(client: Any, post: Callable[..., Any], length: int) -> str:
    """A conversation of `length` messages: two real turns give the item shapes, BatchWriteItem the rest."""
    from chat_core.engine import tokens
    from chat_core.http.request_commands import post_command
    from chat_core.http.schemas import PostMessageIn
    from chat_core.store.keys import message_id_for, message_sk

    first = post(OWNER, post_command(PostMessageIn(content=message_text(1))))
    conversation_id = str(first.body["conversation_id"])
    post(OWNER, post_command(PostMessageIn(conversation_id=conversation_id, content=message_text(3))))
    items = client.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": _pk(conversation_id)}},
    )["Items"]
    messages = {i["sk"]["S"]: i for i in items if i["type"]["S"] == "message"}
    templates = {"user": messages[message_sk(3)], "assistant": messages[message_sk(4)]}
    meta = next(i for i in items if i["type"]["S"] == "conversation")

    puts = []
    for seq in range(1, length + 1):
        role = "user" if seq % 2 else "assistant"
        content = message_text(seq)
        item = dict(templates[role])
        item.update(
            sk={"S": message_sk(seq)},
            seq={"N": str(seq)},
            message_id={"S": message_id_for(seq)},
            content={"S": content},
            tokens={"N": str(tokens.count_message_tokens({"role": role, "content": content}, model=MODEL))},
        )
        puts.append({"PutRequest": {"Item": item}})
    for start in range(0, len(puts), BATCH):
        pending: dict[str, Any] = {TABLE: puts[start : start + BATCH]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
    turns = int(meta.get("turn_count", {"N": "0"})["N"])
    client.update_item(
        TableName=TABLE,
        Key={"pk": meta["pk"], "sk": meta["sk"]},
        UpdateExpression="SET next_seq = :n, message_count = :c, turn_count = :t",
        ExpressionAttributeValues={
            ":n": {"N": str(length + 1)},
            ":c": {"N": str(length)},
            ":t": {"N": str(max(turns, length // 2))},
        },
    )
    return conversation_id


def _pk(conversation_id: str) -> str:
    from chat_core.store.keys import conversation_pk

    return conversation_pk(OWNER, conversation_id)


def _set_policy(client: Any, conversation_id: str, policy: dict[str, Any] | None) -> None:
    """Give the conversation its own window policy (as POST /conversations stores it), or the default."""
    import json

    from chat_core.store.keys import META_SK

    key = {"pk": {"S": _pk(conversation_id)}, "sk": {"S": META_SK}}
    if policy is None:
        client.update_item(TableName=TABLE, Key=key, UpdateExpression="REMOVE window_policy")
    else:
        client.update_item(
            TableName=TABLE,
            Key=key,
            UpdateExpression="SET window_policy = :p",
            ExpressionAttributeValues={":p": {"S": json.dumps(policy)}},
        )


def _one_post(post: Callable[..., Any], conversation_id: str, n: int, key_prefix: str | None) -> PostRun:
    from chat_core.http.request_commands import post_command
    from chat_core.http.schemas import PostMessageIn
    from chat_core.http.statuses import post_status

    request = PostMessageIn(conversation_id=conversation_id, content=message_text(90_000 + n))
    key = f"{key_prefix}-{n}" if key_prefix else None
    with metered() as tally:
        started = time.process_time()
        outcome = post(OWNER, post_command(request), idempotency_key=key)
        elapsed = time.process_time() - started
    return PostRun(tally, elapsed - tally.server_seconds, 1, post_status(outcome))


def _measure(post: Callable[..., Any], conversation_id: str, posts: int, key_prefix: str | None) -> PostRun:

    runs: list[PostRun] = []
    # moto's table lives in this process: keep the collector off its objects, as Lambda has none of them.
    gc.collect()
    gc.freeze()
    try:
        for n in range(posts):
            runs.append(_one_post(post, conversation_id, n, key_prefix))
    finally:
        gc.unfreeze()
    shapes = {(r.tally.describe_calls(), r.tally.received) for r in runs}
    median = sorted(runs, key=lambda r: r.client_seconds)[len(runs) // 2]
    median.client_seconds = statistics.median(r.client_seconds for r in runs)
    median.posts = len(runs)
    if len({s[0] for s in shapes}) > 1:
        progress(f"post path: calls differed between posts: {sorted(shapes)}")
    return median


def ours(length: int) -> dict[str, PostRun]:
    """Seed a conversation of `length` messages, then post to it with three configurations."""
    import boto3
    from moto import mock_aws

    from tests.support.table import create_table

    model = FixedReplyModel()
    results: dict[str, PostRun] = {}
    with moto_env(TABLE_NAME=TABLE), mock_aws(), chat_service(model) as post:
        create_table(TABLE)
        _reset_pynamodb()
        client = boto3.client("dynamodb", region_name="us-east-1")
        started = time.perf_counter()
        conversation_id = _seed(client, post, length)
        progress(f"post path: seeded {length:,} messages in {time.perf_counter() - started:.1f}s")
        posts = POSTS[length]
        results["default"] = _measure(post, conversation_id, posts, None)
        results["idempotent"] = _measure(post, conversation_id, posts, f"bench-{length}")
        _set_policy(client, conversation_id, OWN_POLICY)
        results["own"] = _measure(post, conversation_id, posts, None)
    return results


def peer(length: int) -> tuple[PostRun | None, int]:
    """LangChain's turn at the same length: read the history for the prompt, then add_messages([human, ai]).

    Returns None when the history cannot exist in DynamoDB (one item over 400 KB), with the item size.
    """
    import boto3
    from langchain_community.chat_message_histories import DynamoDBChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage
    from moto import mock_aws

    entries = peer_entries(length)
    size = peer_item_sizes(entries)[-1]
    if size > DYNAMODB_ITEM_LIMIT:
        return None, size
    with moto_env(), mock_aws():
        resource = boto3.resource("dynamodb", region_name="us-east-1")
        _peer_table(resource.meta.client)
        resource.Table(PEER_TABLE).put_item(Item={"SessionId": SESSION, "History": entries})
        with metered() as tally:
            started = time.process_time()
            history = DynamoDBChatMessageHistory(table_name=PEER_TABLE, session_id=SESSION)
            prompt = history.messages  # what RunnableWithMessageHistory loads before calling the model
            history.add_messages([HumanMessage(message_text(90_000)), AIMessage(REPLY)])
            elapsed = time.process_time() - started
        assert len(prompt) == length
    return PostRun(tally, elapsed - tally.server_seconds, 1, 200), size


def run() -> list[Section]:
    rows: list[list[Any]] = []
    configs = (
        ("default", "ours, default window (WIN-2, 10 messages)"),
        ("idempotent", "ours, default window + Idempotency-Key"),
        ("own", f"ours, own policy {OWN_POLICY} (up to 200 messages)"),
    )
    measured: dict[int, dict[str, PostRun]] = {}
    with moto_fixes():
        for length in LENGTHS:
            progress(f"post path: {length:,} messages")
            measured[length] = ours(length)
            theirs, peer_size = peer(length)
            for name, label in configs:
                r = measured[length][name]
                rows.append(
                    [
                        f"{length:,}",
                        label,
                        r.posts,
                        r.status,
                        r.tally.describe_calls(),
                        kb(r.tally.sent),
                        kb(r.tally.received),
                        ms(r.client_seconds),
                    ]
                )
            if theirs is None:
                rows.append(
                    [
                        f"{length:,}",
                        "LangChain: history read + add_messages",
                        0,
                        "cannot store",
                        f"one item of {peer_size / 1000:,.0f} KB > 400 KB",
                        "",
                        "",
                        "",
                    ]
                )
            else:
                rows.append(
                    [
                        f"{length:,}",
                        "LangChain: history read + add_messages",
                        1,
                        "n/a",
                        theirs.tally.describe_calls(),
                        kb(theirs.tally.sent),
                        kb(theirs.tally.received),
                        ms(theirs.client_seconds),
                    ]
                )
    # At 10 messages the Query returns all 10; from 1,000 on it returns the newest 10: that is "flat".
    default = [measured[n]["default"] for n in LENGTHS]
    long = [measured[n]["default"] for n in LENGTHS if n > 10]
    flat = len({r.tally.describe_calls() for r in long}) == 1
    spread = max(r.tally.received for r in long) / max(min(r.tally.received for r in long), 1)
    notes = (
        "Each length is a fresh moto table from template.yaml: two real posts give the exact item shapes, "
        "then the rest of the history is written with BatchWriteItem (500-character messages, exact token "
        "counts as a post stores them; turn-log events of seeded turns are not written, and the Query "
        "never reads them). Then real `post_message` calls with the model stubbed "
        f"(a fixed {len(REPLY)}-character completion with usage): {POSTS[10]} posts per configuration "
        "and length (median shown; the calls were the same in every post); the three "
        "configurations post one after another to the same conversation, so each post adds two messages "
        "(the 10-message history is 28 messages long by its last post). KB sent = "
        "request bodies, KB read = response bodies of every DynamoDB call the post made. Client CPU time "
        "excludes moto's own time (moto's Query scans the whole partition, so its time grows with the "
        "history; DynamoDB's does not) and includes exact token counting of the new messages; moto's "
        "objects are frozen out of the garbage collector while posts are timed (Lambda holds none of "
        "them). The own policy reads the default 10 first, then (conversation long enough) up to 200 "
        "in a second Query. "
        f"Goal: flat. Default window from 1,000 to 10,000 messages: calls "
        f"{'identical' if flat else 'DIFFER'}, "
        f"bytes read within {spread:.2f}x. LangChain row: what "
        "`RunnableWithMessageHistory` does per turn with `DynamoDBChatMessageHistory` (its whole history "
        "item read for the prompt, then read again and written back whole)."
    )
    summary = [
        [
            "post path: DynamoDB work per post at " + " / ".join(f"{n:,}" for n in LENGTHS) + " messages",
            f"{default[-1].tally.describe_calls()}; KB read "
            + " / ".join(kb(r.tally.received) for r in default)
            + "; KB sent "
            + " / ".join(kb(r.tally.sent) for r in default),
            "flat",
            verdict(flat and spread < 1.05),
        ]
    ]
    return [
        {
            "title": "Post path vs history length: DynamoDB work per POST /messages (model stubbed)",
            "summary": summary,
            "columns": [
                "history",
                "post",
                "posts",
                "status",
                "DynamoDB calls per post",
                "KB sent",
                "KB read",
                "client CPU ms (moto excluded)",
            ],
            "rows": rows,
            "notes": notes,
        }
    ]
