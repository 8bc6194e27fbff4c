"""COST-1..COST-4 through the handlers: prices, costs on replies and conversations, usage per user and
day, budgets refused before the model is asked. The model is the stand-in on loopback."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from chat_core.chat import budgets
from chat_core.errors import BudgetExceeded
from chat_core.settings import get_settings
from chat_core.store import conversations as store

from tests.reliability.faults import injected
from tests.support import functions as api
from tests.support import usage_feed
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

#: A provider answer with every usage detail: 2000 prompt tokens of which 1536 cached, 300 completion
#: tokens of which 200 reasoning. At gpt-4o's prices: 464 x 2.5 + 1536 x 1.25 + 300 x 10 = 6080 micro-$.
CANNED: dict[str, Any] = {
    "id": "chatcmpl-priced",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "a priced answer"}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 2000,
        "completion_tokens": 300,
        "total_tokens": 2300,
        "prompt_tokens_details": {"cached_tokens": 1536},
        "completion_tokens_details": {"reasoning_tokens": 200},
    },
}
CANNED_MICROS = 6080


def _env(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    renew()


@pytest.fixture
def priced(standin_llm: OpenAIStandin) -> OpenAIStandin:
    standin_llm.set_mode("canned", canned=CANNED)
    return standin_llm


def _reply(answer: api.Answer) -> dict[str, Any]:
    assert answer.status == 201, answer.body
    reply: dict[str, Any] = answer.body["assistant_message"]
    return reply


def test_a_reply_costs_what_its_usage_says(priced: OpenAIStandin) -> None:
    """COST-2: the reply's cost from the provider's usage (cached and reasoning details included), and
    the conversation's total beside its tokens."""
    # Given a model that reports cached and reasoning tokens
    # When two turns are posted
    first = api.post("hello")
    conversation_id = first.body["conversation_id"]
    second = api.post("again", conversation_id)
    # Then each reply carries its exact cost, reported
    for answer in (first, second):
        assert _reply(answer)["cost"] == {"micros": CANNED_MICROS, "usd": "$0.006080", "status": "reported"}
    # And the conversation's total is their sum
    detail = api.detail(conversation_id).body
    assert detail["cost"] == {"micros": 2 * CANNED_MICROS, "usd": "$0.012160", "unpriced_calls": 0}
    assert [m["cost"]["micros"] for m in detail["messages"] if m["role"] == "assistant"] == [
        CANNED_MICROS
    ] * 2


def test_without_usage_the_cost_is_estimated_from_the_local_count(standin_llm: OpenAIStandin) -> None:
    """COST-2: a provider that sent no usage: the cost comes from the local count, marked estimated."""
    # Given a model that reports no usage
    standin_llm.set_mode("no_usage")
    # When a turn is posted
    answer = api.post("how much is this?")
    reply = _reply(answer)
    # Then the cost is the local count at gpt-4o-mini's prices ($0.15 in, $0.60 out), estimated
    stored = store.find_message("alice", answer.body["conversation_id"], reply["message_id"])
    assert stored is not None
    assert stored.local_usage is not None
    local_in, local_out = int(stored.local_usage.prompt_tokens), int(stored.local_usage.completion_tokens)
    assert min(local_in, local_out) > 0
    expected = int(Decimal(local_in) * Decimal("0.15") + Decimal(local_out) * Decimal("0.6") + Decimal("0.5"))
    assert reply["cost"] == {"micros": expected, "usd": f"${expected / 1e6:.6f}", "status": "estimated"}


def test_a_model_without_a_price_costs_unknown(standin_llm: OpenAIStandin) -> None:
    """COST-1: a model the table does not price costs null ("unknown"), and the conversation counts it."""
    # When a turn is posted to a model nobody priced
    answer = api.post("hi", model="llama3.1:8b")
    # Then its cost is unknown, not zero
    assert _reply(answer)["cost"] == {"micros": None, "usd": None, "status": "unknown"}
    detail = api.detail(answer.body["conversation_id"]).body
    assert detail["cost"] == {"micros": 0, "usd": "$0.000000", "unpriced_calls": 1}


def _day_items(user: str) -> list[dict[str, Any]]:
    usage_feed.deliver()  # the stream has delivered what was stored (COST-3)
    items = boto3.client("dynamodb", region_name="us-east-1").query(
        TableName="chat-history-it",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"USER#{user}#USAGE"}},
        ConsistentRead=True,
    )["Items"]
    return [i for i in items if i["sk"]["S"].startswith("DAY#")]


def test_totals_equal_the_sum_of_their_replies_after_20_concurrent_posts(
    standin_llm: OpenAIStandin, serialized_moto: None
) -> None:
    """COST-2/COST-3: after 20 concurrent posts to 4 conversations, each conversation's cost and tokens
    and the user's day item equal the sums of the stored replies: nothing counted twice or lost."""
    # Given four conversations of one user
    conversations = [api.post(f"open {n}").body["conversation_id"] for n in range(4)]
    start = threading.Barrier(10)

    def post(n: int) -> int:
        if n < 10:
            start.wait()
        # Questions of different lengths cost different amounts.
        return api.post("why " * (n + 1), conversations[n % 4]).status

    # When 20 posts run at once
    with ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(post, range(20)))
    assert statuses == [201] * 20
    # Then each conversation's totals are the sums of its replies
    replies: list[dict[str, Any]] = []
    for conversation_id in conversations:
        detail = api.detail(conversation_id, limit="100").body
        mine = [m for m in detail["messages"] if m["role"] == "assistant"]
        assert len(mine) == 6
        assert detail["cost"]["micros"] == sum(m["cost"]["micros"] for m in mine)
        assert detail["usage"]["prompt_tokens"] == sum(m["usage"]["prompt_tokens"] for m in mine)
        replies += mine
    assert len({m["cost"]["micros"] for m in replies}) > 1
    # And the user's day item holds all 24 replies, tokens and cost
    [day] = _day_items("alice")
    assert int(day["calls"]["N"]) == 24
    assert int(day["cost_micros"]["N"]) == sum(m["cost"]["micros"] for m in replies)
    assert int(day["prompt_tokens"]["N"]) == sum(m["usage"]["prompt_tokens"] for m in replies)
    assert int(day["completion_tokens"]["N"]) == sum(m["usage"]["completion_tokens"] for m in replies)


def test_an_appended_answer_is_costed_and_counted(chat_service: None) -> None:
    """COST-2/COST-3: an answer appended with the usage its model reported is priced and counted."""
    # Given a conversation
    conversation_id = api.create().body["conversation_id"]
    # When an answer given elsewhere is appended with its usage
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 800}}
    answer = api.append(
        conversation_id,
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a", "model": "gpt-4o", "usage": usage},
        ],
    )
    assert answer.status == 201, answer.body
    # Then it is priced (200 x 2.5 + 800 x 1.25 + 100 x 10 = 2500) and counted for the user's day
    assert answer.body["messages"][1]["cost"] == {"micros": 2500, "usd": "$0.002500", "status": "reported"}
    assert api.detail(conversation_id).body["cost"]["micros"] == 2500
    [day] = _day_items("alice")
    assert (int(day["calls"]["N"]), int(day["cost_micros"]["N"]), int(day["cached_tokens"]["N"])) == (
        1,
        2500,
        800,
    )


# -- GET /usage --------------------------------------------------------------------------------------------


def test_usage_gives_the_callers_days_by_model(priced: OpenAIStandin) -> None:
    """COST-3: GET /usage: the caller's totals per day and model, and the range's totals."""
    # Given three priced turns and one of an unpriced model
    conversation_id = api.post("one").body["conversation_id"]
    api.post("two", conversation_id)
    api.post("three", conversation_id)
    priced.set_mode("ok")
    api.post("four", conversation_id, model="llama3.1:8b")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    # When the caller asks for today
    answer = api.usage()
    # Then today's models are listed with their calls, tokens and cost
    assert answer.status == 200, answer.body
    body = answer.body
    assert (body["user_id"], body["from"], body["to"]) == ("alice", today, today)
    [day] = body["days"]
    assert day["date"] == today
    by_model = {m["model"]: m for m in day["models"]}
    assert set(by_model) == {"gpt-4o", "llama3.1:8b"}
    gpt = by_model["gpt-4o"]
    assert (gpt["calls"], gpt["prompt_tokens"], gpt["cached_tokens"], gpt["reasoning_tokens"]) == (
        3,
        6000,
        4608,
        600,
    )
    assert gpt["cost"] == {"micros": 3 * CANNED_MICROS, "usd": "$0.018240"}
    assert (by_model["llama3.1:8b"]["unpriced_calls"], by_model["llama3.1:8b"]["cost"]["micros"]) == (1, 0)
    assert body["totals"]["calls"] == 4
    assert body["totals"]["cost"]["micros"] == 3 * CANNED_MICROS
    # And an earlier range holds nothing
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d")
    assert api.usage(from_=yesterday, to=yesterday).body["days"] == []


def test_another_users_usage_is_forbidden_unless_admin(
    priced: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-3: another user's usage: 403 for everyone but the admin group's members."""
    # Given alice's usage, and a deployment whose administrators are the group chat-admins
    api.post("hello")
    _env(monkeypatch, ADMIN_GROUP="chat-admins")
    # When bob asks for alice's usage, without and then with the group (and with another group)
    plain = api.invoke("get_usage", _usage_event("bob", "alice", None))
    other = api.invoke("get_usage", _usage_event("bob", "alice", "[readers staff]"))
    admin = api.invoke("get_usage", _usage_event("bob", "alice", "[readers chat-admins]"))
    # Then only the admin reads it
    assert (plain.status, plain.error_code) == (403, "forbidden")
    assert other.status == 403
    assert admin.status == 200, admin.body
    assert admin.body["user_id"] == "alice"
    assert admin.body["totals"]["cost"]["micros"] == CANNED_MICROS
    # And bob's own usage is his (empty), alice's stays hers
    assert api.usage(user="bob").body["totals"]["calls"] == 0


def _usage_event(caller: str, user: str, groups: str | None) -> dict[str, Any]:
    from tests.support import events

    event = events.http_event("GET", "/usage", query={"user": user}, user=caller)
    if groups is not None:
        event["requestContext"]["authorizer"]["jwt"]["claims"]["cognito:groups"] = groups
    return event


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"from_": "2026-13-01"}, 400),
        ({"to": "yesterday"}, 422),
        ({"from_": "2026-02-01", "to": "2026-01-01"}, 400),
        ({"from_": "2020-01-01", "to": "2026-01-01"}, 400),
    ],
)
def test_bad_usage_ranges_are_refused(chat_service: None, query: dict[str, str], status: int) -> None:
    """COST-3 / API-5: dates that are not YYYY-MM-DD days, or a range backwards or over a year, are 4xx."""
    answer = api.usage(**query)
    assert answer.status == status, answer.body
    assert answer.body["error"]["message"]


# -- budgets -----------------------------------------------------------------------------------------------


def _stored_state(conversation_id: str) -> tuple[int, int]:
    detail = api.detail(conversation_id).body
    return detail["message_count"], detail["turn_count"]


def test_a_user_over_budget_is_refused_before_the_model_is_asked(
    priced: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: over the daily token budget, a post answers 429 budget_exceeded with Retry-After until
    midnight UTC; the model sees nothing and nothing is stored."""
    # Given a daily budget of 5000 tokens, and a first turn of 2300
    _env(monkeypatch, BUDGET_DAILY_TOKENS="5000")
    conversation_id = api.post("one").body["conversation_id"]
    # When the user posts on: the second turn starts under budget (2300 < 5000) and ends over it (4600),
    # the third starts under budget and is allowed to finish (one reply past the limit at most)
    assert api.post("two", conversation_id).status == 201
    assert api.post("three", conversation_id).status == 201
    asked = len(priced.completion_requests)
    before = _stored_state(conversation_id)
    listed = len(api.listing().body["items"])
    sent_at = datetime.now(UTC)
    refused = api.post("four", conversation_id)
    fresh = api.post("a new conversation")
    answered_at = datetime.now(UTC)
    # Then both posts are refused with the time until the window resets
    for answer in (refused, fresh):
        assert (answer.status, answer.error_code) == (429, "budget_exceeded"), answer.body
        assert "daily tokens budget reached: 6900 of 5000 tokens" in answer.body["error"]["message"]
        seconds = int(answer.headers["Retry-After"])
        midnight = datetime.combine(sent_at.date() + timedelta(days=1), time(0), UTC)
        # Between the seconds left when the posts were sent and when they were answered (however slow).
        assert (
            (midnight - answered_at).total_seconds() - 1
            <= seconds
            <= (midnight - sent_at).total_seconds() + 1
        )
    # And the model was not asked, and nothing was stored
    assert len(priced.completion_requests) == asked
    assert _stored_state(conversation_id) == before
    assert len(api.listing().body["items"]) == listed
    # And another user is not limited by it
    assert api.post("hello", user="bob").status == 201


@pytest.mark.parametrize(
    ("limit", "last_moment", "reset"),
    [
        (
            "BUDGET_DAILY_TOKENS",
            lambda now: datetime.combine(now.date(), time(23, 59, 59), UTC),
            budgets.next_day,
        ),
        (
            "BUDGET_MONTHLY_USD",
            lambda now: budgets.next_month(now) - timedelta(seconds=1),
            budgets.next_month,
        ),
    ],
)
def test_the_budget_resets_at_the_window_boundary(
    priced: OpenAIStandin,
    monkeypatch: pytest.MonkeyPatch,
    limit: str,
    last_moment: Callable[[datetime], datetime],
    reset: Callable[[datetime], datetime],
) -> None:
    """COST-4: refused until the last second of the day (month), allowed from the first of the next."""
    # Given a user over a small budget today
    _env(monkeypatch, **{limit: "0.001" if limit.endswith("USD") else "10"})
    assert api.post("spend").status == 201
    now = datetime.now(UTC)
    # When the check runs at the window's last second, then at its reset
    with pytest.raises(BudgetExceeded) as refused:
        budgets.check("alice", get_settings(), last_moment(now))
    budgets.check("alice", get_settings(), reset(now))
    # Then the refusal asked to come back in one second
    assert refused.value.details["retry_after"] == 1


def test_an_admin_sets_a_users_budget(priced: OpenAIStandin, monkeypatch: pytest.MonkeyPatch) -> None:
    """COST-4: PUT /budgets/{user_id}: administrators only; the limit applies to that user at once, and
    null lifts it."""
    _env(monkeypatch, ADMIN_GROUP="chat-admins", BUDGETS_ENABLED="true")
    api.post("spend")
    # When a user tries to set a budget, then an admin sets alice's to 100 tokens a day
    self_set = api.set_budget("alice", {"daily_tokens": 10**9})
    set_by_admin = api.set_budget(
        "alice", {"daily_tokens": 100, "monthly_usd": 5}, user="root", groups="[chat-admins]"
    )
    # Then only the admin's is taken, and alice is over it
    assert (self_set.status, self_set.error_code) == (403, "forbidden")
    assert set_by_admin.status == 200, set_by_admin.body
    budget = set_by_admin.body["budget"]
    assert budget["limits"] == {
        "daily_tokens": 100,
        "daily_usd": None,
        "monthly_tokens": None,
        "monthly_usd": "$5.000000",
    }
    assert (budget["today"]["tokens"], budget["over"]) == (2300, True)
    assert api.post("more").status == 429
    assert api.post("more", user="bob").status == 201
    # And alice sees her budget in her usage
    assert api.usage().body["budget"]["reached"] == [{"window": "daily", "limit": "tokens"}]
    # When the admin lifts the daily limit
    lifted = api.set_budget("alice", {"daily_tokens": None}, user="root", groups="[chat-admins]")
    assert lifted.status == 200
    # Then alice may post again
    assert api.post("more").status == 201


def test_without_budgets_a_post_reads_nothing_more_and_with_budgets_one_query(
    chat_service: None, dynamo_calls: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: the post path is 1 Query + 2 TransactWrites without budgets, one Query more with them."""
    # Given a conversation
    conversation_id = api.post("hello").body["conversation_id"]
    # When a post is made without budgets, then with a daily budget
    dynamo_calls.clear()
    assert api.post("next", conversation_id).status == 201
    without = Counter(dynamo_calls)
    _env(monkeypatch, BUDGET_DAILY_USD="10")
    usage_feed.deliver()  # the stream consumer's calls are not the post's (COST-3)
    dynamo_calls.clear()
    assert api.post("next", conversation_id).status == 201
    # Then the calls are as stated
    assert without == Counter({"Query": 1, "TransactWriteItems": 2})
    assert dynamo_calls == Counter({"Query": 2, "TransactWriteItems": 2})


#: A stand-in answer of 18 tokens (10 prompt + 8 completion): at gpt-4o's prices 10 x 2.5 + 8 x 10 = 105
#: micro-dollars.
SMALL: dict[str, Any] = {
    **CANNED,
    "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
}
SMALL_MICROS = 105


def test_the_first_post_after_a_reply_reached_the_budget_is_refused_at_once(
    standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: with budgets on, a reply counts toward the budget in the write that stores it: the next
    post, however soon, is refused (429, model not asked, nothing stored) and GET /usage shows the reply
    at once, while the table's stream has delivered nothing; the stream adds it no second time."""
    # Given a daily budget of 30 tokens, a model answering 18 tokens per call, and a stream that is behind
    _env(monkeypatch, BUDGET_DAILY_TOKENS="30")
    standin_llm.set_mode("canned", canned=SMALL)
    with usage_feed.held():
        # When the user posts as fast as replies come: 18 tokens, then 36 (the second started under 30)
        first = api.post("one")
        conversation_id = first.body["conversation_id"]
        assert first.status == 201, first.body
        assert api.post("two", conversation_id).status == 201
        seen = api.usage().body
        asked = len(standin_llm.completion_requests)
        before = _stored_state(conversation_id)
        listed = len(api.listing().body["items"])
        refused = api.post("three", conversation_id)
        fresh = api.post("a new conversation")
        # Then GET /usage right after the second reply held both
        assert (seen["totals"]["calls"], seen["totals"]["total_tokens"]) == (2, 36)
        assert seen["totals"]["cost"]["micros"] == 2 * SMALL_MICROS
        assert [(m["model"], m["calls"]) for m in seen["models"]] == [("gpt-4o", 2)]
        assert seen["budget"]["over"] is True
        # And the next posts are refused before the model is asked, with nothing stored
        for answer in (refused, fresh):
            assert (answer.status, answer.error_code) == (429, "budget_exceeded"), answer.body
            assert "daily tokens budget reached: 36 of 30 tokens" in answer.body["error"]["message"]
        assert len(standin_llm.completion_requests) == asked
        assert _stored_state(conversation_id) == before
        assert len(api.listing().body["items"]) == listed
    # And once the stream delivers, the replies are still counted once
    usage_feed.deliver()
    totals = api.usage().body["totals"]
    assert (totals["calls"], totals["total_tokens"], totals["cost"]["micros"]) == (2, 36, 2 * SMALL_MICROS)


def test_an_appended_answer_counts_toward_the_budget_at_once(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: with budgets on, an answer appended with its usage (API-19) counts in the append's own
    transaction: the next post is refused at once, and the stream adds nothing more."""
    # Given a daily budget of 1000 tokens and a stream that is behind
    _env(monkeypatch, BUDGET_DAILY_TOKENS="1000")
    conversation_id = api.create().body["conversation_id"]
    with usage_feed.held():
        # When an answer of 1100 tokens is appended, then a post follows
        usage = {"prompt_tokens": 1000, "completion_tokens": 100}
        appended = api.append(
            conversation_id,
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "model": "gpt-4o", "usage": usage},
            ],
        )
        assert appended.status == 201, appended.body
        refused = api.post("more", conversation_id)
        # Then the post is refused, and the usage holds the answer
        assert (refused.status, refused.error_code) == (429, "budget_exceeded"), refused.body
        assert api.usage().body["totals"]["total_tokens"] == 1100
    usage_feed.deliver()
    assert api.usage().body["totals"]["calls"] == 1


def test_one_users_concurrent_posts_to_different_conversations_all_land_with_budgets_on(
    standin_llm: OpenAIStandin, serialized_moto: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: with budgets on, 8 concurrent posts of one user to 8 conversations all succeed; each
    reply is counted once, spread over the day's shard items, and the stream adds none again."""
    # Given budgets on (a budget far away) and a stream that is behind
    _env(monkeypatch, BUDGET_DAILY_TOKENS="10000000")
    standin_llm.set_mode("canned", canned=SMALL)
    start = threading.Barrier(8)

    def post(n: int) -> int:
        start.wait()
        return api.post(f"conversation {n}").status

    with usage_feed.held():
        # When 8 posts open 8 conversations at once
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(post, range(8)))
        # Then all of them land, and the usage holds each reply once
        assert statuses == [201] * 8
        totals = api.usage().body["totals"]
        assert (totals["calls"], totals["total_tokens"]) == (8, 8 * 18)
    usage_feed.deliver()
    assert api.usage().body["totals"]["calls"] == 8
    # And the posts counted in shard items of the day, not the stream's item
    shards = [i["sk"]["S"] for i in _day_items("alice")]
    assert shards
    assert all(sk.count("#") == 3 for sk in shards), shards
    assert sum(int(i["calls"]["N"]) for i in _day_items("alice")) == 8


def test_a_count_meeting_another_transaction_moves_to_another_shard(
    standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-4: a reply whose usage shard meets another transaction (TransactionConflict) is written
    again on the next shard: it lands, counted once."""
    _env(monkeypatch, BUDGET_DAILY_TOKENS="10000000")
    standin_llm.set_mode("canned", canned=SMALL)
    conversation_id = api.post("first").body["conversation_id"]
    with injected(monkeypatch) as faults, usage_feed.held():
        # Given the next reply's first write conflicting on its usage shard
        faults.fail("TransactWriteItems", "TransactionCanceled:TransactionConflict", times=1, when="#USAGE")
        # When a message is posted
        answer = api.post("second", conversation_id)
        # Then it is stored and counted once, in a shard other than the first one tried
        assert answer.status == 201, answer.body
        assert faults.injected["TransactWriteItems"] == 1
        assert api.usage().body["totals"]["calls"] == 2
    usage_feed.deliver()
    assert api.usage().body["totals"]["calls"] == 2
    assert len(_day_items("alice")) == 2


def test_without_budgets_the_post_counts_nothing_and_the_stream_counts_it(
    standin_llm: OpenAIStandin,
) -> None:
    """COST-3: with budgets off the post writes no usage item; the stream adds the reply when it comes."""
    standin_llm.set_mode("canned", canned=SMALL)
    with usage_feed.held():
        assert api.post("one").status == 201
        assert api.usage().body["totals"]["calls"] == 0
    assert api.usage().body["totals"]["calls"] == 1
    assert [i["sk"]["S"].count("#") for i in _day_items("alice")] == [2]


# -- prices changed without a code change -----------------------------------------------------------------


def test_a_price_override_takes_effect_without_a_code_change(
    priced: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-1: PRICES (a template parameter) replaces a model's price."""
    _env(monkeypatch, PRICES=json.dumps({"gpt-4o": {"input": 1, "output": 4}}))
    # 2000 x 1 (no cached price: cached tokens pay the input price) + 300 x 4
    assert _reply(api.post("hi"))["cost"]["micros"] == 3200


def test_prices_in_an_ssm_parameter_change_without_a_deploy(
    priced: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COST-1: PRICES_PARAMETER names an SSM parameter; a put-parameter changes prices for the next post
    (here the cache is 0 s; deployed it is 5 minutes)."""
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(
        Name="/chat/prices", Type="String", Value=json.dumps({"gpt-4o": {"input": 1, "output": 1}})
    )
    _env(monkeypatch, PRICES_PARAMETER="/chat/prices", PRICES_CACHE_SECONDS="0", PRICES="{}")
    assert _reply(api.post("first"))["cost"]["micros"] == 2300
    ssm.put_parameter(
        Name="/chat/prices",
        Type="String",
        Value=json.dumps({"gpt-4o": {"input": 0, "cached_input": 0, "output": 10}}),
        Overwrite=True,
    )
    assert _reply(api.post("second"))["cost"]["micros"] == 3000
    # And a parameter that is not a price table leaves the built-in prices in effect (logged)
    ssm.put_parameter(Name="/chat/prices", Type="String", Value="not json", Overwrite=True)
    assert _reply(api.post("third"))["cost"]["micros"] == CANNED_MICROS
