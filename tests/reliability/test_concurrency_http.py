"""REL-5: concurrent clients over real HTTP against the local server.

What this proves: `chat-local-server` serves each request on its own thread and runs up to 32 warm
containers per function (as `make run`), so 20 or 30 posts really are in flight at once in the
handler code (Query, TransactWrite #1, model call, TransactWrite #2 interleave between requests).
The embedded DynamoDB applies one request at a time, as DynamoDB applies each request atomically.
It does not prove behaviour under DynamoDB's own transaction conflicts (TransactionConflict), which
moto never raises; those are covered by the injected faults in
tests/integration/test_reliability_faults.py and tests/integration/test_reliability_replies.py.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.reliability.conftest import ClientFactory
from tests.reliability.figures import FIGURES
from tests.reliability.leaks import assert_clean
from tests.support.local_server import ServerProcess, local_client
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.reliability, pytest.mark.e2e]

SECTION = "concurrency"
CLIENTS = 20
RETRYABLE = ("conversation_busy", "request_in_progress", "store_unavailable")


def _post(url: str, user: str, body: dict[str, Any], start: threading.Barrier) -> httpx.Response:
    """One client: its own connection, an Idempotency-Key, and the documented retry on 409/503."""
    key = f"k-{uuid.uuid4()}"
    with httpx.Client(
        base_url=url, headers={"X-User-Id": user, "Idempotency-Key": key}, timeout=120
    ) as client:
        start.wait()
        attempts: list[str] = []
        for _ in range(5):
            response = client.post("/messages", json=body)
            attempts.append(f"{response.status_code} {response.text[:120]}")
            response.extensions["attempts"] = attempts  # what this client saw, for a failure's message
            FIGURES.response(SECTION, response.status_code)
            assert_clean(response.status_code, response.text, "concurrent post")
            code = response.json().get("error", {}).get("code") if response.status_code >= 400 else None
            if code not in RETRYABLE:
                return response
            FIGURES.add(SECTION, client_retries=1)
            time.sleep(float(response.headers.get("Retry-After", "1")))
        return response


def _partition(endpoint: str, table: str, owner: str, conversation_id: str) -> list[dict[str, Any]]:
    """Every item of the conversation's partition, read straight from the embedded DynamoDB."""
    client = local_client(endpoint)
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"USER#{owner}#CONV#{conversation_id}"}},
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _messages(items: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {int(i["seq"]["N"]): i for i in items if i["sk"]["S"].startswith("MSG#")}


def test_twenty_clients_posting_to_one_conversation_store_every_message_once_in_order(
    rel_server: ServerProcess,
    rel_model: OpenAIStandin,
    counted_client: ClientFactory,
    store_endpoint: str,
    store_table: str,
) -> None:
    """REL-5: 20 simultaneous posts: each stored exactly once, each reply right after its
    question, the sequence strict and gap-free, message_count and usage totals exact."""
    # Given a conversation with one turn
    owner = f"conc-{uuid.uuid4().hex[:8]}"
    opener = counted_client(owner, SECTION)
    conversation_id = opener.post("/messages", json={"content": "opening"}).json()["conversation_id"]
    start = threading.Barrier(CLIENTS)
    # When 20 clients post to it at the same moment
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(
            pool.map(
                lambda n: _post(
                    rel_server.url,
                    owner,
                    {"conversation_id": conversation_id, "content": f"racer {n}"},
                    start,
                ),
                range(CLIENTS),
            )
        )
    FIGURES.add(SECTION, messages_posted=CLIENTS + 1)
    # Then every post succeeded
    assert Counter(a.status_code for a in answers) == {201: CLIENTS}, [
        a.extensions.get("attempts") for a in answers if a.status_code != 201
    ]
    # And every question is stored exactly once, its reply right after it
    detail = opener.get(f"/conversations/{conversation_id}", params={"limit": 200}).json()
    messages = detail["messages"]
    questions = [m["content"] for m in messages if m["role"] == "user"]
    assert Counter(questions) == Counter(["opening", *(f"racer {n}" for n in range(CLIENTS))])
    for question, reply in zip(messages[0::2], messages[1::2], strict=True):
        assert (question["role"], reply["role"]) == ("user", "assistant")
        assert f'you said "{question["content"]}"' in reply["content"]
    lost = (CLIENTS + 1) - len(set(questions))
    FIGURES.add(SECTION, messages_lost=lost)
    # And the stored sequence is strict and gap-free, the counters exact
    items = _partition(store_endpoint, store_table, owner, conversation_id)
    stored = _messages(items)
    assert sorted(stored) == list(range(1, 2 * (CLIENTS + 1) + 1))
    meta = next(i for i in items if i["sk"]["S"] == "~META")
    assert int(meta["next_seq"]["N"]) == 2 * (CLIENTS + 1) + 1
    assert detail["message_count"] == len(messages) == 2 * (CLIENTS + 1)
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert detail["usage"][key] == sum(m["usage"][key] for m in messages if m["role"] == "assistant")


def test_posts_racing_a_delete_either_land_whole_or_get_a_clean_404(
    rel_server: ServerProcess,
    rel_model: OpenAIStandin,
    counted_client: ClientFactory,
    store_endpoint: str,
    store_table: str,
) -> None:
    """REL-5: posts and deletes at once. Exactly one delete wins; each post either landed
    whole (question and reply stored) or got a clean 404/409 and left nothing; afterwards the
    conversation is gone for every route and no post succeeds."""
    # Given a conversation with one turn
    owner = f"del-{uuid.uuid4().hex[:8]}"
    opener = counted_client(owner, SECTION)
    conversation_id = opener.post("/messages", json={"content": "opening"}).json()["conversation_id"]
    posters, deleters = 12, 3
    start = threading.Barrier(posters + deleters)

    def delete(_: int) -> httpx.Response:
        with httpx.Client(base_url=rel_server.url, headers={"X-User-Id": owner}, timeout=120) as client:
            start.wait()
            response = client.delete(f"/conversations/{conversation_id}")
            FIGURES.response(SECTION, response.status_code)
            return response

    # When 12 posts and 3 deletes start at the same moment
    with ThreadPoolExecutor(max_workers=posters + deleters) as pool:
        posted = [
            pool.submit(
                _post,
                rel_server.url,
                owner,
                {"conversation_id": conversation_id, "content": f"late {n}"},
                start,
            )
            for n in range(posters)
        ]
        deleted = [pool.submit(delete, n) for n in range(deleters)]
        post_answers = [f.result() for f in posted]
        delete_answers = [f.result() for f in deleted]
    FIGURES.add(SECTION, messages_posted=posters)
    # Then exactly one delete succeeded, and each post is a 201 or a clean 404/409
    assert sorted(a.status_code for a in delete_answers) == [204, 404, 404]
    assert all(a.status_code in (201, 404, 409) for a in post_answers), [a.text for a in post_answers]
    landed = {f"late {n}" for n, a in enumerate(post_answers) if a.status_code == 201}
    refused = {f"late {n}" for n, a in enumerate(post_answers) if a.status_code != 201}
    # And in the table: every landed question has its reply next to it, no refused one was written
    stored = _messages(_partition(store_endpoint, store_table, owner, conversation_id))
    questions = {int(s): i["content"]["S"] for s, i in stored.items() if i["role"]["S"] == "user"}
    assert set(questions.values()) == {"opening"} | landed
    assert not refused & set(questions.values())
    for seq in questions:
        assert stored[seq + 1]["role"]["S"] == "assistant", f"question at {seq} has no reply"
    assert len(stored) == 2 * len(questions)
    FIGURES.add(SECTION, messages_lost=len(landed - set(questions.values())))
    # And the conversation is gone: detail, listing, window and further posts all answer 404
    assert opener.get(f"/conversations/{conversation_id}").status_code == 404
    listed = opener.get("/conversations").json()["items"]
    assert conversation_id not in [c["conversation_id"] for c in listed]
    again = opener.post("/messages", json={"conversation_id": conversation_id, "content": "anyone?"})
    assert again.status_code == 404
    window = opener.post(f"/conversations/{conversation_id}/window", json={"content": "x"})
    assert window.status_code == 404


def test_thirty_posters_for_three_rounds_all_land_in_order(
    rel_server: ServerProcess,
    rel_model: OpenAIStandin,
    counted_client: ClientFactory,
    store_endpoint: str,
    store_table: str,
) -> None:
    """REL-5: 3 rounds of 30 simultaneous posts to one conversation: every post answers 201
    (the documented 409/503 retry aside), each question is stored once with its reply right after it,
    the sequence is strict. Latencies are reported (RESULTS.md), not asserted: speed belongs to figures."""
    # Given a conversation with one turn
    owner = f"thirty-{uuid.uuid4().hex[:8]}"
    opener = counted_client(owner, SECTION)
    conversation_id = opener.post("/messages", json={"content": "opening"}).json()["conversation_id"]
    posters, rounds = 30, 3
    latencies: list[float] = []

    def timed(n: int, start: threading.Barrier) -> httpx.Response:
        body = {"conversation_id": conversation_id, "content": f"round poster {n}"}
        started = time.monotonic()
        response = _post(rel_server.url, owner, body, start)
        latencies.append(time.monotonic() - started)
        return response

    answers: list[httpx.Response] = []
    for round_number in range(rounds):
        start = threading.Barrier(posters)
        # When 30 clients post at the same moment
        with ThreadPoolExecutor(max_workers=posters) as pool:
            first = round_number * posters
            answers += list(pool.map(lambda n: timed(first + n, start), range(posters)))  # noqa: B023
    FIGURES.add(SECTION, messages_posted=posters * rounds + 1)
    # Then every post landed
    assert Counter(a.status_code for a in answers) == {201: posters * rounds}, [
        a.extensions.get("attempts") for a in answers if a.status_code != 201
    ]
    # And every question is stored once, each followed by its own reply, the sequence gap-free
    stored = _messages(_partition(store_endpoint, store_table, owner, conversation_id))
    assert sorted(stored) == list(range(1, 2 * (posters * rounds + 1) + 1))
    questions = [stored[s]["content"]["S"] for s in sorted(stored) if stored[s]["role"]["S"] == "user"]
    assert Counter(questions) == Counter(["opening", *(f"round poster {n}" for n in range(posters * rounds))])
    for seq in sorted(stored):
        if stored[seq]["role"]["S"] == "user":
            reply = stored[seq + 1]
            assert reply["role"]["S"] == "assistant"
            assert stored[seq]["content"]["S"] in reply["content"]["S"]
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    FIGURES.add(
        SECTION,
        **{
            "30 posters x 3 rounds p50 ms": int(latencies[len(latencies) // 2] * 1000),
            "30 posters x 3 rounds p99 ms": int(p99 * 1000),
            "30 posters x 3 rounds max ms": int(latencies[-1] * 1000),
        },
    )
