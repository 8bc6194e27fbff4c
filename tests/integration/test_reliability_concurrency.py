"""REL-5, in-process on moto (made atomic per request, as DynamoDB is): 20 posters on one
conversation, and posts racing a delete. The same scenarios run over HTTP in tests/reliability."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from chat_core.chat.delete import delete_conversation
from chat_core.chat.post import post_message
from chat_core.errors import ChatError
from chat_core.http.request_commands import post_command
from chat_core.http.schemas import PostMessageIn
from chat_core.http.statuses import post_status, status_for

from tests.integration.conftest import TABLE
from tests.reliability.figures import FIGURES
from tests.support import functions as api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

SECTION = "concurrency"
POSTERS = 20


def _stored(conversation_id: str) -> dict[int, dict[str, str]]:
    items = boto3.client("dynamodb", region_name="us-east-1").query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :msg)",
        ExpressionAttributeValues={
            ":pk": {"S": f"USER#alice#CONV#{conversation_id}"},
            ":msg": {"S": "MSG#"},
        },
        ConsistentRead=True,
    )["Items"]
    return {int(i["seq"]["N"]): {"role": i["role"]["S"], "content": i["content"]["S"]} for i in items}


def _outcome(request: PostMessageIn, start: threading.Barrier) -> int:
    start.wait()
    try:
        return post_status(post_message("alice", post_command(request)))
    except ChatError as exc:
        return status_for(exc)


def test_twenty_posters_on_one_conversation_land_exactly_once_in_order(
    chat_service: None, serialized_moto: None
) -> None:
    """REL-5: 20 simultaneous posts (operation level): all land, strict sequence, exact counters."""
    # Given a conversation with one turn
    conversation_id = api.post("opening").body["conversation_id"]
    start = threading.Barrier(POSTERS)
    # When 20 posts to it start at the same moment
    with ThreadPoolExecutor(max_workers=POSTERS) as pool:
        statuses = list(
            pool.map(
                lambda n: _outcome(
                    PostMessageIn(conversation_id=conversation_id, content=f"racer {n}"), start
                ),
                range(POSTERS),
            )
        )
    FIGURES.add(SECTION, requests=POSTERS, messages_posted=POSTERS)
    # Then all landed: each question once, its reply right after it, no gap, exact counters
    assert Counter(statuses) == {201: POSTERS}
    stored = _stored(conversation_id)
    assert sorted(stored) == list(range(1, 2 * POSTERS + 3))
    questions = [stored[s]["content"] for s in sorted(stored) if stored[s]["role"] == "user"]
    assert Counter(questions) == Counter(["opening", *(f"racer {n}" for n in range(POSTERS))])
    for seq in range(1, 2 * POSTERS + 3, 2):
        assert (stored[seq]["role"], stored[seq + 1]["role"]) == ("user", "assistant")
        assert f"“{stored[seq]['content']}”" in stored[seq + 1]["content"]
    detail = api.detail(conversation_id, limit="200").body
    assert detail["message_count"] == len(stored)
    assert detail["usage"]["total_tokens"] == sum(
        m["usage"]["total_tokens"] for m in detail["messages"] if m["role"] == "assistant"
    )
    FIGURES.add(SECTION, messages_lost=POSTERS + 1 - len(set(questions)))


def test_posts_racing_a_delete_land_whole_or_not_at_all(chat_service: None, serialized_moto: None) -> None:
    """API-8/§5: posts and two deletes at once: one delete wins; each post is whole or a clean 404."""
    # Given a conversation with one turn
    conversation_id = api.post("opening").body["conversation_id"]
    posters = 10
    start = threading.Barrier(posters + 2)

    def delete(_: int) -> int:
        start.wait()
        try:
            delete_conversation("alice", conversation_id)
        except ChatError as exc:
            return status_for(exc)
        return 204

    # When 10 posts and 2 deletes start together
    with ThreadPoolExecutor(max_workers=posters + 2) as pool:
        posts = [
            pool.submit(_outcome, PostMessageIn(conversation_id=conversation_id, content=f"late {n}"), start)
            for n in range(posters)
        ]
        deletes = [pool.submit(delete, n) for n in range(2)]
        post_status = [f.result() for f in posts]
        delete_status = sorted(f.result() for f in deletes)
    FIGURES.add(SECTION, requests=posters + 2, messages_posted=posters)
    # Then one delete won, each post landed whole or was refused cleanly, and nothing is half-written
    assert delete_status == [204, 404]
    assert set(post_status) <= {201, 404, 409}
    stored = _stored(conversation_id)
    landed = {f"late {n}" for n, s in enumerate(post_status) if s == 201}
    questions = {s: m["content"] for s, m in stored.items() if m["role"] == "user"}
    assert set(questions.values()) == {"opening"} | landed
    assert all(stored[s + 1]["role"] == "assistant" for s in questions)
    assert api.detail(conversation_id).status == 404
