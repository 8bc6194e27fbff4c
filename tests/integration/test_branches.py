"""API-18 branches (edit, regenerate, switch, tree), API-19 append and API-20 delete, through the handlers
on moto with the stand-in model on loopback."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from chat_core.store import conversations as store
from chat_core.store.items import Summary

from tests.support import agent_api
from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _turns(*questions: str) -> tuple[str, list[dict[str, Any]]]:
    """A conversation of one turn per question; its id and the posts' bodies."""
    bodies = []
    conversation_id: str | None = None
    for question in questions:
        answer = api.post(question, conversation_id)
        assert answer.status == 201, answer.body
        conversation_id = answer.body["conversation_id"]
        bodies.append(answer.body)
    assert conversation_id is not None
    return conversation_id, bodies


def _sent(standin: OpenAIStandin) -> list[str]:
    """The contents of the messages the model received last."""
    return [str(m.get("content")) for m in standin.requests[-1].json["messages"]]


def _path(conversation_id: str, user: str = "alice") -> list[dict[str, Any]]:
    answer = api.detail(conversation_id, user=user)
    assert answer.status == 200, answer.body
    return list(answer.body["messages"])


def _tree(conversation_id: str) -> dict[str, Any]:
    answer = api.tree(conversation_id, limit="200")
    assert answer.status == 200, answer.body
    return dict(answer.body)


def test_edit_makes_a_sibling_and_the_new_branch_sends_none_of_the_old(standin_llm: OpenAIStandin) -> None:
    """API-18: an edit is a new user message beside the old one; its window and the next post's hold
    only the new branch."""
    # Given three turns
    cid, bodies = _turns("q1", "q2 old", "q3 old")
    old_q2 = bodies[1]["user_message"]
    # When the second question is edited
    edited = api.edit(cid, old_q2["message_id"], "q2 new")
    # Then it answers like a post, and the model saw the first turn and the new question only
    assert edited.status == 201, edited.body
    assert edited.body["user_message"]["content"] == "q2 new"
    assert edited.body["assistant_message"]["status"] == "ok"
    sent = _sent(standin_llm)
    assert "q1" in sent
    assert "q2 new" in sent
    assert not any("old" in text for text in sent)
    # And the new question is the old one's sibling (same parent), and the active path is the new branch
    assert (
        edited.body["user_message"]["parent_id"]
        == old_q2["parent_id"]
        == bodies[0]["assistant_message"]["message_id"]
    )
    assert [m["content"] for m in _path(cid) if m["role"] == "user"] == ["q1", "q2 new"]
    tree = _tree(cid)
    by_id = {m["message_id"]: m for m in tree["messages"]}
    first_answer = by_id[bodies[0]["assistant_message"]["message_id"]]
    assert first_answer["children"] == [old_q2["message_id"], edited.body["user_message"]["message_id"]]
    assert by_id[old_q2["message_id"]]["active"] is False
    assert by_id[edited.body["user_message"]["message_id"]]["active"] is True
    assert tree["active_message_id"] == edited.body["assistant_message"]["message_id"]
    # When the conversation goes on, it continues the new branch
    assert api.post("q4", cid).status == 201
    sent = _sent(standin_llm)
    assert "q2 new" in sent
    assert not any("old" in text for text in sent)


def test_regenerating_twice_gives_three_answers_and_switching_picks_what_the_next_post_sees(
    standin_llm: OpenAIStandin,
) -> None:
    """API-18: each regeneration is a new sibling answer from the same context; switching among them
    changes what the next post's window contains."""
    # Given a turn answered "first"
    standin_llm.configure(reply="answer one")
    cid, bodies = _turns("question")
    first = bodies[0]["assistant_message"]
    # When the answer is regenerated twice
    standin_llm.configure(reply="answer two")
    second = api.regenerate(cid, first["message_id"])
    standin_llm.configure(reply="answer three")
    third = api.regenerate(cid, second.body["assistant_message"]["message_id"], temperature=0.2)
    # Then each is a new answer to the same question, sent the same context
    assert second.status == third.status == 201, (second.body, third.body)
    assert second.body["user_message"] is None
    assert _sent(standin_llm) == ["question"]
    assert standin_llm.requests[-1].json["temperature"] == 0.2
    question = bodies[0]["user_message"]["message_id"]
    tree = {m["message_id"]: m for m in _tree(cid)["messages"]}
    answers = [first["message_id"], second.body["assistant_message"]["message_id"]]
    answers.append(third.body["assistant_message"]["message_id"])
    assert tree[question]["children"] == answers
    assert [m["content"] for m in _path(cid)] == ["question", "answer three"]
    # When the first answer is made active and the conversation goes on
    switched = api.switch(cid, first["message_id"])
    assert switched.status == 200, switched.body
    assert switched.body["active_message_id"] == first["message_id"]
    standin_llm.configure(reply="later")
    assert api.post("next", cid).status == 201
    # Then the model saw the first answer only
    sent = _sent(standin_llm)
    assert "answer one" in sent
    assert "answer two" not in sent
    assert "answer three" not in sent
    # And switching to the second answer shows the path to it
    assert api.switch(cid, answers[1]).status == 200
    assert [m["content"] for m in _path(cid)] == ["question", "answer two"]
    api.window(cid, "peek")
    assert api.window(cid, "peek").body["messages"][-2]["content"] == "answer two"


def test_append_stores_messages_as_given_without_calling_the_model(standin_llm: OpenAIStandin) -> None:
    """API-19: user, assistant (tool calls, usage), tool and system messages stored with no model call,
    counted, usage in the totals; the next post's window has them."""
    # Given an empty conversation
    cid = api.create(title="imported").body["conversation_id"]
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "é"}'}}
    given = [
        {"role": "system", "content": "note: the user prefers metric units"},
        {"role": "user", "content": "天气怎么样?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7},
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "晴, 21°C"},
        {
            "role": "assistant",
            "content": "Sunny, 21°C.",
            "model": "gpt-4o",
            "usage": {"prompt_tokens": 70, "completion_tokens": 5, "total_tokens": 75},
        },
    ]
    # When they are appended
    appended = api.append(cid, given)
    # Then they are stored in order, counted, with nothing sent to the model
    assert appended.status == 201, appended.body
    assert standin_llm.requests == []
    stored = appended.body["messages"]
    assert [m["role"] for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
    assert stored[3]["name"] == "lookup"
    assert stored[4]["usage"] == {"prompt_tokens": 70, "completion_tokens": 5, "total_tokens": 75}
    detail = api.detail(cid).body
    assert [m["message_id"] for m in detail["messages"]] == [m["message_id"] for m in stored]
    assert detail["usage"] == {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}
    assert detail["message_count"] == 5
    # When the user posts next, the model gets the appended history
    assert api.post("and tomorrow?", cid).status == 201
    sent = standin_llm.requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["tool_calls"] == [call]


def test_append_checks_tool_results_against_the_open_calls(standin_llm: OpenAIStandin) -> None:
    """API-19: a tool result must answer a call still open on the path, across appends; an orphan is
    422 and nothing is stored."""
    cid = api.create().body["conversation_id"]
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    # An orphan result is refused, nothing stored
    orphan = api.append(cid, [{"role": "tool", "tool_call_id": "c9", "content": "x"}])
    assert orphan.status == 422, orphan.body
    assert orphan.error_code == "orphan_tool_result"
    assert api.detail(cid).body["messages"] == []
    # A call appended alone stays open, and a later append answers it
    assert (
        api.append(
            cid, [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]}]
        ).status
        == 201
    )
    answered = api.append(cid, [{"role": "tool", "tool_call_id": "c9", "content": "done"}])
    assert answered.status == 201, answered.body
    # Answering it twice is an orphan
    again = api.append(cid, [{"role": "tool", "tool_call_id": "c9", "content": "done"}])
    assert again.status == 422, again.body
    assert standin_llm.requests == []


def test_deleting_a_tool_call_removes_its_results(standin_llm: OpenAIStandin) -> None:
    """API-20: deleting an answer with tool calls deletes their results with it; neither is listed or
    sent to the model again; the tree keeps them, marked."""
    cid, _ = _turns("start")
    call = {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    appended = api.append(
        cid,
        [
            {"role": "assistant", "content": "let me check", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_x", "content": "SECRET RESULT"},
        ],
    ).body["messages"]
    # When the answer that made the call is deleted
    deleted = api.delete_message(cid, appended[0]["message_id"])
    # Then its result went with it
    assert deleted.status == 200, deleted.body
    assert [m["message_id"] for m in deleted.body["deleted"]] == [m["message_id"] for m in appended]
    ids = {m["message_id"] for m in _path(cid)}
    assert not ids & {m["message_id"] for m in appended}
    assert api.post("continue", cid).status == 201
    assert not any("SECRET" in text or "let me check" in text for text in _sent(standin_llm))
    tree = {m["message_id"]: m for m in _tree(cid)["messages"]}
    assert tree[appended[1]["message_id"]]["deleted_at"]
    # And deleting it again deletes nothing
    again = api.delete_message(cid, appended[0]["message_id"])
    assert again.status == 200
    assert again.body["deleted"] == []


def test_popping_until_empty(standin_llm: OpenAIStandin) -> None:
    """API-20: deleting the last message repeatedly empties the conversation; a post then starts over."""
    cid, _ = _turns("one", "two")
    while messages := _path(cid):
        assert api.delete_message(cid, messages[-1]["message_id"]).status == 200
    assert api.detail(cid).body["message_count"] == 0
    assert api.post("fresh start", cid).status == 201
    assert _sent(standin_llm) == ["fresh start"]


def test_every_new_route_is_404_for_another_user(standin_llm: OpenAIStandin) -> None:
    """API-18..20: another user's conversation and messages are not found on every new route, and
    nothing changes."""
    cid, bodies = _turns("mine")
    user_id = bodies[0]["user_message"]["message_id"]
    answer_id = bodies[0]["assistant_message"]["message_id"]
    calls = len(standin_llm.requests)
    answers = [
        api.edit(cid, user_id, "hijack", user="mallory"),
        api.regenerate(cid, answer_id, user="mallory"),
        api.tree(cid, user="mallory"),
        api.switch(cid, user_id, user="mallory"),
        api.append(cid, [{"role": "user", "content": "x"}], user="mallory"),
        api.delete_message(cid, answer_id, user="mallory"),
    ]
    assert [a.status for a in answers] == [404] * 6, [a.body for a in answers]
    assert len(standin_llm.requests) == calls
    assert [m["message_id"] for m in _path(cid)] == [user_id, answer_id]


def test_edit_and_regenerate_refuse_the_wrong_kind_of_message(standin_llm: OpenAIStandin) -> None:
    """API-18: only a user message is edited, only an answer regenerated (400, nothing written)."""
    cid, bodies = _turns("q")
    user_id = bodies[0]["user_message"]["message_id"]
    answer_id = bodies[0]["assistant_message"]["message_id"]
    assert api.edit(cid, answer_id, "x").status == 400
    assert api.regenerate(cid, user_id).status == 400
    assert api.edit(cid, user_id, "").status == 400  # a post's content rules
    assert len(_tree(cid)["messages"]) == 2


def test_edit_with_an_idempotency_key_runs_once(standin_llm: OpenAIStandin) -> None:
    """API-18 + API-6: a retried edit replays the first answer; the same key on another route is 422."""
    cid, bodies = _turns("q")
    user_id = bodies[0]["user_message"]["message_id"]
    first = api.edit(cid, user_id, "q'", idempotency_key="edit-1")
    again = api.edit(cid, user_id, "q'", idempotency_key="edit-1")
    assert first.status == again.status == 201
    assert first.body == again.body
    assert len(standin_llm.requests) == 2
    other = api.regenerate(cid, first.body["assistant_message"]["message_id"], idempotency_key="edit-1")
    assert other.status == 422
    assert other.error_code == "idempotency_key_reused"


def test_summaries_and_pins_follow_the_active_path(standin_llm: OpenAIStandin) -> None:
    """API-18: a summary whose last message is on another branch, and a pin there, are left out of the
    active branch's window."""
    cid, bodies = _turns("branch a secret", "more a")
    # Given a summary of branch A's first turn, and its second question pinned
    owner_summary = Summary.new(
        "alice", cid, from_seq=1, to_seq=2, text="SUMMARY OF A", model="m", created_at="2026-01-01T00:00:00Z"
    )
    owner_summary.save()
    assert agent_api.pin(cid, bodies[1]["user_message"]["message_id"]).status == 200
    window = api.window(cid, "now").body
    assert any("SUMMARY OF A" in str(m["content"]) for m in window["messages"])
    # When the first question is edited (branch B starts before both)
    assert api.edit(cid, bodies[0]["user_message"]["message_id"], "branch b").status == 201
    # Then branch B's window has neither the summary nor the pin
    window = api.window(cid, "now").body
    texts = [str(m["content"]) for m in window["messages"]]
    assert not any("SUMMARY" in t or "more a" in t or "secret" in t for t in texts), texts
    assert window["stats"]["summary"] is None
    # And switching back to A brings both back
    assert api.switch(cid, bodies[1]["assistant_message"]["message_id"]).status == 200
    texts = [str(m["content"]) for m in api.window(cid, "now").body["messages"]]
    assert any("SUMMARY OF A" in t for t in texts)
    assert "more a" in texts


def test_the_turn_log_records_every_change_of_history(standin_llm: OpenAIStandin) -> None:
    """API-18..20 (seed 002): edits and regenerations start turns saying what they replace; switches,
    appends and deletions are steps of their own turns."""
    cid, bodies = _turns("q")
    user_id = bodies[0]["user_message"]["message_id"]
    answer_id = bodies[0]["assistant_message"]["message_id"]
    api.edit(cid, user_id, "q2")
    api.regenerate(cid, answer_id)
    api.switch(cid, answer_id)
    appended = api.append(cid, [{"role": "user", "content": "noted"}]).body["messages"][0]
    api.delete_message(cid, appended["message_id"])
    lines = agent_api.full_log(cid)
    starts = [line["meta"] for line in lines if line["type"] == "turn_start"]
    assert starts[1]["edits"] == user_id
    assert starts[2]["regenerates"] == answer_id
    kinds = [line["type"] for line in lines if line["type"] in ("switch", "append", "delete")]
    assert kinds == ["switch", "append", "delete"]
    turns = [line["turn"] for line in lines if line["type"] in ("switch", "append", "delete")]
    assert len(set(turns)) == 3


def test_concurrent_edits_and_posts_keep_the_tree_whole(
    standin_llm: OpenAIStandin, serialized_moto: None
) -> None:
    """API-18: posts and edits at once on one conversation: every message stored has its parent in the
    tree, the active path reaches the first message, and every accepted write is there."""
    cid, bodies = _turns("root question", "second question")
    user_id = bodies[1]["user_message"]["message_id"]
    results: list[Any] = []
    lock = threading.Lock()

    def run(index: int) -> None:
        answer = api.edit(cid, user_id, f"edit {index}") if index % 2 else api.post(f"post {index}", cid)
        with lock:
            results.append(answer)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    accepted = [r for r in results if r.status == 201]
    assert accepted
    assert all(r.status in (201, 409) for r in results), [r.body for r in results]
    tree = _tree(cid)["messages"]
    ids = {m["message_id"] for m in tree}
    assert all(m["parent_id"] in ids for m in tree if m["parent_id"] is not None)
    assert sum(1 for m in tree if m["parent_id"] is None) == 1
    for answer in accepted:
        assert answer.body["user_message"]["message_id"] in ids
        assert answer.body["assistant_message"]["message_id"] in ids
    path = _path(cid)
    assert path[0]["parent_id"] is None
    assert all(later["parent_id"] == earlier["message_id"] for earlier, later in itertools.pairwise(path))


def test_a_post_on_a_never_branched_conversation_still_costs_one_query(
    standin_llm: OpenAIStandin, dynamo_calls: Counter[str]
) -> None:
    """API-18 + API-4: 1 Query + 2 TransactWrites at 10 and 1,000 messages when it never branched; a
    branched one adds at most one Query per branch point the window reaches past."""
    counts = []
    conversations = []
    for size in (10, 1000):
        cid = api.create().body["conversation_id"]
        for start in range(0, size, 30):
            batch = [
                {"role": "user" if (start + i) % 2 == 0 else "assistant", "content": f"m{start + i}"}
                for i in range(min(30, size - start))
            ]
            assert api.append(cid, batch).status == 201
        dynamo_calls.clear()
        assert api.post("next", cid).status == 201
        counts.append(Counter(dynamo_calls))
        conversations.append(cid)
    assert counts[0] == counts[1] == Counter({"Query": 1, "TransactWriteItems": 2})
    # A branched one: an edit of the 501st message puts one branch point on the active path, far below
    # the newest page; a post then reads one more page there
    cid = conversations[1]
    middle = store.get_message("alice", cid, 501)
    assert middle is not None
    assert middle.content == "m500"
    assert api.edit(cid, middle.message_id, "m500 edited").status == 201
    dynamo_calls.clear()
    assert api.post("after the edit", cid).status == 201
    assert dynamo_calls == Counter({"Query": 2, "TransactWriteItems": 2})
    assert "m499" in _sent(standin_llm)
    assert "m998" not in _sent(standin_llm)


def test_concurrent_posts_on_a_branched_conversation_all_land_on_its_active_path(
    standin_llm: OpenAIStandin,
) -> None:
    """API-18 + REL: many posts at once on a branched conversation take their slots like on a line
    (none is refused as busy), and every one of them, question and answer, is on the active path."""
    cid, bodies = _turns("first", "second")
    assert api.edit(cid, bodies[1]["user_message"]["message_id"], "second, edited").status == 201
    results: list[Any] = []
    lock = threading.Lock()

    def run(index: int) -> None:
        answer = api.post(f"burst {index}", cid)
        with lock:
            results.append(answer)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status for r in results] == [201] * 12, [r.body for r in results]
    path = _path(cid)
    on_path = {m["message_id"] for m in path}
    for answer in results:
        assert answer.body["user_message"]["message_id"] in on_path
        assert answer.body["assistant_message"]["message_id"] in on_path
    assert [m["content"] for m in path[:3]] == ["first", path[1]["content"], "second, edited"]
    assert all(later["parent_id"] == earlier["message_id"] for earlier, later in itertools.pairwise(path))


def test_a_parent_out_of_order_never_hangs_a_read(standin_llm: OpenAIStandin) -> None:
    """API-18: a message whose stored parent is not before it (an item edited by hand) cannot trap the
    path walk in a loop: the detail route and the next post still answer, treating it as following the
    message before it."""
    cid, bodies = _turns("first", "second")
    api.edit(cid, bodies[1]["user_message"]["message_id"], "second, edited")
    leaf = _path(cid)[-1]
    message = store.find_message("alice", cid, leaf["message_id"])
    assert message is not None
    replace(message, parent_seq=message.seq + 5).to_item().save()
    path = _path(cid)
    assert [m["content"] for m in path][-2:] == ["second, edited", leaf["content"]]
    assert api.post("third", cid).status == 201
