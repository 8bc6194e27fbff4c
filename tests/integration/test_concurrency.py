"""REL-5: concurrent posts to one conversation never lose or reorder messages; the sequence stays strict."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from chat_core.chat.post import post_message
from chat_core.chat.views import PostOutcome
from chat_core.http.request_commands import post_command
from chat_core.http.schemas import PostMessageIn
from chat_core.http.statuses import post_status

from tests.integration.conftest import TABLE
from tests.support import functions as api
from tests.support.agent_api import full_log

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

POSTERS = 6


def test_concurrent_posts_lose_nothing_and_keep_turns_in_order(
    chat_service: None, serialized_moto: None
) -> None:
    """REL-5 / §9: posters race for next_seq; every turn lands whole, in one strict sequence."""
    # Given a conversation with one turn
    conversation_id = api.post("opening").body["conversation_id"]
    start = threading.Barrier(POSTERS)

    def post(n: int) -> PostOutcome:
        request = PostMessageIn(conversation_id=conversation_id, content=f"racer {n}")
        start.wait()
        # Lambda runs one invocation per process; threads share the operation, not a handler.
        return post_message("alice", post_command(request))

    # When several posts to it start at the same moment
    with ThreadPoolExecutor(max_workers=POSTERS) as pool:
        outcomes = list(pool.map(post, range(POSTERS)))

    # Then every post succeeded
    assert [post_status(o) for o in outcomes] == [201] * POSTERS
    # And every message is stored once, each reply right after its own question
    messages = api.detail(conversation_id).body["messages"]
    assert len(messages) == 2 + 2 * POSTERS
    users = [m for m in messages if m["role"] == "user"]
    assert sorted(m["content"] for m in users[1:]) == sorted(f"racer {n}" for n in range(POSTERS))
    for question, reply in zip(messages[0::2], messages[1::2], strict=True):
        assert question["role"] == "user"
        assert reply["role"] == "assistant"
        assert f"“{question['content']}”" in reply["content"]
    # And the per-conversation sequence is strict and gap-free, the counters exact
    items = boto3.client("dynamodb", region_name="us-east-1").query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"USER#alice#CONV#{conversation_id}"}},
    )["Items"]
    seqs = [int(i["seq"]["N"]) for i in items if i["sk"]["S"].startswith("MSG#")]
    assert seqs == list(range(1, 3 + 2 * POSTERS))
    meta = next(i for i in items if i["sk"]["S"] == "~META")
    assert int(meta["next_seq"]["N"]) == 3 + 2 * POSTERS
    assert int(meta["message_count"]["N"]) == 2 + 2 * POSTERS
    detail = api.detail(conversation_id).body
    assert detail["message_count"] == 2 + 2 * POSTERS
    assert detail["usage"]["total_tokens"] == sum(
        m["usage"]["total_tokens"] for m in messages if m["role"] == "assistant"
    )
    # And (COST-5) the turns' events rode on the messages, contended posts too: the only EventItem is
    # session_start, and the log reads every turn whole, in turn order
    assert [i["sk"]["S"] for i in items if i["sk"]["S"].startswith("EVT#")] == ["EVT#0000000000#0000"]
    log = full_log(conversation_id)
    whole = ["turn_start", "assistant", "final", "turn_end"]
    assert [line["type"] for line in log] == ["session_start", *whole * (1 + POSTERS)]
    assert [line["turn"] for line in log[1:]] == [t for t in range(1, 2 + POSTERS) for _ in whole]


def test_concurrent_first_messages_make_separate_conversations(
    chat_service: None, serialized_moto: None
) -> None:
    """API-1: simultaneous first messages each create their own conversation."""
    # Given nothing
    start = threading.Barrier(4)

    def post(n: int) -> PostOutcome:
        start.wait()
        return post_message("alice", post_command(PostMessageIn(content=f"first {n}")))

    # When four first messages race
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(post, range(4)))

    # Then four conversations exist, each with its own two messages
    ids = {o.body["conversation_id"] for o in outcomes}
    assert len(ids) == 4
    listed = api.listing().body["items"]
    assert {c["conversation_id"] for c in listed} == ids
    assert all(c["message_count"] == 2 for c in listed)
