"""The service side of `python -m bench recall`: a conversation loaded into the table (moto, in-process),
the recall index brought up to date by the table stream's handler, and windows built by the window
route's code (`chat.assembly.build_window`), each metered: DynamoDB calls, bytes read, and our own CPU
time (the build's CPU time minus the CPU time moto spends answering its DynamoDB calls).

Recall is switched on with the window-policy option `recall` (issue 32): when the tree has no such
option yet, `recall_available()` is False and only the recency windows run.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench import progress
from bench.dynamodb_meter import metered, moto_env, moto_fixes

TABLE = "chat-history-recall-bench"
OWNER = "bench-recall-user"
MODEL = "gpt-4o-mini"
BATCH = 25  # BatchWriteItem's per-call maximum
STREAM_FUNCTION = "SummarizeConversationFunction"


def recall_available() -> bool:
    """Whether the window policy takes the `recall` option in this tree."""
    from chat_core.http.schemas import WindowPolicyIn

    return "recall" in WindowPolicyIn.model_fields


@dataclass
class WindowRun:
    """One window built through the route's code."""

    ids: set[str]  # dataset message ids of the history messages the window sends
    recalled: int
    calls: int
    described: str
    read_bytes: int
    own_seconds: float
    store_seconds: float


@dataclass
class Loaded:
    """A dataset conversation in the table: its id and the dataset id of each stored seq."""

    conversation_id: str
    ids_by_seq: dict[int, str] = field(default_factory=dict)


@contextmanager
def service(*, semantic: bool = False, embeddings: Mapping[str, str] | None = None) -> Iterator[Any]:
    """A fresh moto table and the post path with the model stubbed; yields a loader. `semantic`: with
    RECALL_EMBEDDINGS_MODEL set (the offline stand-in's vectors: no provider in the bench's table);
    `embeddings`: the environment of a real embeddings provider instead (EMBEDDINGS_BASE_URL, ...)."""
    import boto3
    from moto import mock_aws

    from bench.bench_storage import FixedReplyModel, _reset_pynamodb, chat_service
    from tests.support.table import create_table

    offline = {"RECALL_EMBEDDINGS_MODEL": "text-embedding-3-small"} if semantic else {}
    extra = dict(embeddings) if embeddings else offline
    with (
        moto_fixes(),
        moto_env(TABLE_NAME=TABLE, **extra),
        mock_aws(),
        chat_service(FixedReplyModel()) as post,
    ):
        create_table(TABLE)
        _reset_pynamodb()
        client = boto3.client("dynamodb", region_name="us-east-1")
        yield Loader(client, post)


class Loader:
    def __init__(self, client: Any, post: Any) -> None:
        self.client = client
        self.post = post

    def load(self, turns: Sequence[Mapping[str, Any]]) -> Loaded:
        """Two real posts give the item shapes; BatchWriteItem writes the turns as seq 1..n over them."""
        from chat_core.engine import tokens
        from chat_core.http.request_commands import post_command
        from chat_core.http.schemas import PostMessageIn
        from chat_core.store.keys import conversation_pk, message_id_for, message_sk

        first = self.post(OWNER, post_command(PostMessageIn(content="hello")))
        conversation_id = str(first.body["conversation_id"])
        self.post(OWNER, post_command(PostMessageIn(conversation_id=conversation_id, content="hello again")))
        pk = conversation_pk(OWNER, conversation_id)
        items = self._query_all(pk)
        messages = {i["sk"]["S"]: i for i in items if i["type"]["S"] == "message"}
        templates = {"user": messages[message_sk(3)], "assistant": messages[message_sk(4)]}
        meta = next(i for i in items if i["type"]["S"] == "conversation")
        loaded = Loaded(conversation_id)
        puts = []
        for seq, turn in enumerate(turns, start=1):
            role = str(turn["role"])
            content = str(turn["content"])
            item = dict(templates[role])
            count = tokens.count_message_tokens({"role": role, "content": content}, model=MODEL)
            item.update(
                sk={"S": message_sk(seq)},
                seq={"N": str(seq)},
                message_id={"S": message_id_for(seq)},
                content={"S": content},
                tokens={"N": str(count)},
            )
            if "parent_seq" in item:
                item["parent_seq"] = {"N": str(seq - 1)}
            puts.append({"PutRequest": {"Item": item}})
            loaded.ids_by_seq[seq] = str(turn["message_id"])
        for start in range(0, len(puts), BATCH):
            pending: dict[str, Any] = {TABLE: puts[start : start + BATCH]}
            while pending:
                pending = self.client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        n = len(turns)
        self.client.update_item(
            TableName=TABLE,
            Key={"pk": meta["pk"], "sk": meta["sk"]},
            UpdateExpression="SET next_seq = :n, message_count = :c, turn_count = :t",
            ExpressionAttributeValues={
                ":n": {"N": str(n + 1)},
                ":c": {"N": str(n)},
                ":t": {"N": str(n // 2)},
            },
        )
        return loaded

    def _query_all(self, pk: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": TABLE,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
        }
        while True:
            page = self.client.query(**kwargs)
            items += page["Items"]
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def upkeep(self, loaded: Loaded, last_assistant_seq: int) -> tuple[float, str]:
        """The table stream's handler, given the INSERT record of the newest assistant message (what its
        filter passes; the index's Query above its watermark brings every older message along)."""
        from chat_core.store.keys import conversation_pk, message_sk

        from tests.support.lambda_context import LambdaContext

        key = {
            "pk": {"S": conversation_pk(OWNER, loaded.conversation_id)},
            "sk": {"S": message_sk(last_assistant_seq)},
        }
        item = self.client.get_item(TableName=TABLE, Key=key)["Item"]
        record = {
            "eventID": "bench-1",
            "eventName": "INSERT",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "Keys": key,
                "NewImage": item,
                "SequenceNumber": "1",
                "SizeBytes": 1,
                "StreamViewType": "NEW_IMAGE",
            },
        }
        from chat_core.chat.recall import embedding

        from tests.support.functions import load

        app = load("summarize_conversation")
        with metered() as tally:
            started = time.process_time()
            app.lambda_handler({"Records": [record]}, LambdaContext(function_name="summarize_conversation"))
            while embedding.embed_conversation(OWNER, loaded.conversation_id):  # 256 a pass; off: 0
                pass
            elapsed = time.process_time() - started - tally.server_seconds
        return elapsed, tally.describe_calls()

    def window(self, loaded: Loaded, question: str, policy: dict[str, Any]) -> WindowRun:
        """POST /conversations/{id}/window's code for `question` under `policy`, metered."""
        from chat_core.chat import assembly
        from chat_core.chat.commands import BuildWindow

        request = BuildWindow(text=question, parts=None, model=None, window_policy=policy)
        with metered() as tally:
            started = time.process_time()
            answer = assembly.build_window(OWNER, loaded.conversation_id, request)
            elapsed = time.process_time() - started
        sent = [
            e for e in answer["inspect"]["entries"] if e.get("seq") and e.get("state") in ("kept", "recalled")
        ]
        return WindowRun(
            ids={loaded.ids_by_seq[int(e["seq"])] for e in sent if int(e["seq"]) in loaded.ids_by_seq},
            recalled=sum(1 for e in sent if e.get("state") == "recalled"),
            calls=tally.total_calls,
            described=tally.describe_calls(),
            read_bytes=tally.received,
            own_seconds=elapsed - tally.server_seconds,
            store_seconds=tally.server_seconds,
        )


@contextmanager
def frozen_gc() -> Iterator[None]:
    """moto's table lives in this process: keep the collector off its objects while timing."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def recall_policy(budget: int, share: int | None) -> dict[str, Any]:
    """The window policy of a post with recall on: `true` (the default share) or a share in tokens."""
    return {
        "max_tokens": budget,
        "method": "exact",
        "recall": True if share is None else {"max_tokens": share},
    }


def semantic_policy(budget: int) -> dict[str, Any]:
    """`recall` at its default share, with semantic recall."""
    return {"max_tokens": budget, "method": "exact", "recall": {"semantic": True}}


def recency_policy(budget: int) -> dict[str, Any]:
    return {"max_tokens": budget, "method": "exact"}


def note(message: str) -> None:
    progress(f"recall: {message}")
