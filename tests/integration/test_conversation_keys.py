"""API-21 conversations named by a caller-chosen key, and API-22 metadata kept with appended messages,
through the handlers on moto."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from chat_core.store import names

from tests.support import functions as api
from tests.support.agent_api import direct
from tests.support.openai_standin import OpenAIStandin

pytestmark = [
    pytest.mark.filterwarnings("ignore:No application metrics to publish"),
    pytest.mark.usefixtures("chat_service"),
]


def test_put_by_key_creates_once_then_returns_the_same_conversation() -> None:
    """API-21: the first PUT creates (201, with the settings given), later ones return it (200)."""
    first = api.put_key("user_123", {"title": "Support", "system_prompt": "Be brief."})
    assert first.status == 201, first.body
    assert first.body["key"] == "user_123"
    assert first.body["title"] == "Support"
    again = api.put_key("user_123", {"title": "ignored: it exists"})
    assert again.status == 200
    assert again.body["conversation_id"] == first.body["conversation_id"]
    assert again.body["title"] == "Support"
    # a PUT without a body works too
    bare = api.put_key("user_456")
    assert bare.status == 201, bare.body
    # and the GET reads it like the detail route
    read = api.get_key("user_123")
    assert read.status == 200
    assert read.body["conversation_id"] == first.body["conversation_id"]
    assert read.body["messages"] == []


def test_keys_are_per_user_and_never_cross() -> None:
    """API-21: the same key names two separate conversations for two users; neither can reach the
    other's through the key, and a key nobody used is 404."""
    alice = api.put_key("shared-name", user="alice")
    bob = api.put_key("shared-name", user="bob")
    assert alice.status == bob.status == 201
    assert alice.body["conversation_id"] != bob.body["conversation_id"]
    assert api.get_key("shared-name", user="bob").body["conversation_id"] == bob.body["conversation_id"]
    assert api.detail(alice.body["conversation_id"], user="bob").status == 404
    assert api.get_key("nobody-used-this").status == 404
    assert api.get_key("shared-name", user="carol").status == 404


def test_concurrent_puts_of_one_new_key_make_one_conversation(serialized_moto: None) -> None:
    """API-21: many PUTs of a new key at once all answer with the one conversation created."""
    answers: list[Any] = []
    lock = threading.Lock()

    def run() -> None:
        answer = api.put_key("raced-key")
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status for a in answers) == [200] * 7 + [201], [a.body for a in answers]
    assert len({a.body["conversation_id"] for a in answers}) == 1
    listed = api.listing(limit="100").body["items"]
    assert [c["key"] for c in listed].count("raced-key") == 1


def test_a_deleted_conversation_frees_its_key(standin_llm: OpenAIStandin) -> None:
    """API-21: after DELETE the key reads 404, and the next PUT starts a new, empty conversation."""
    first = api.put_key("to-clear")
    cid = first.body["conversation_id"]
    assert api.post("remember me", cid).status == 201
    assert api.delete(cid).status == 204
    assert api.get_key("to-clear").status == 404
    second = api.put_key("to-clear")
    assert second.status == 201
    assert second.body["conversation_id"] != cid
    assert api.get_key("to-clear").body["messages"] == []
    # and the deleted conversation's key leaves no item of its own behind
    assert names.find_name("alice", "to-clear") == second.body["conversation_id"]
    assert api.delete(second.body["conversation_id"]).status == 204
    assert names.find_name("alice", "to-clear") is None


def test_create_with_a_taken_key_is_409_and_bad_keys_are_refused() -> None:
    """API-21: POST /conversations with a key in use is 409 conversation_key_taken; keys outside the
    allowed characters or length are refused with the field named."""
    assert api.create(key="taken").status == 201
    again = api.create(key="taken")
    assert again.status == 409
    assert again.body["error"]["code"] == "conversation_key_taken"
    for bad in ("has space", "a#b", "x" * 201, "ключ"):
        answer = api.put_key(bad)
        assert answer.status == 400, (bad, answer.body)
        assert "key" in answer.body["error"]["message"]
    assert api.create(key="a/b").status == 422


def test_metadata_is_kept_as_given_and_never_sent_to_the_model(standin_llm: OpenAIStandin) -> None:
    """API-22: `metadata` on appended messages reads back exactly (nested, null values, non-ASCII); the
    model never sees it; an empty assistant text is accepted (a step that said nothing)."""
    cid = api.put_key("with-metadata").body["conversation_id"]
    meta = {"item": {"type": "reasoning", "id": "rs_1", "summary": [], "note": None, "文": "保留"}}
    stored = api.append(
        cid,
        [
            {"role": "user", "content": "hello", "metadata": {"id": "u1"}},
            {"role": "assistant", "content": "", "metadata": meta},
            {"role": "assistant", "content": "hi", "metadata": {"id": "a1"}},
        ],
    )
    assert stored.status == 201, stored.body
    read = api.get_key("with-metadata").body["messages"]
    assert [m.get("metadata") for m in read] == [{"id": "u1"}, meta, {"id": "a1"}]
    assert api.post("next", cid).status == 201
    sent = str(standin_llm.requests[-1].json["messages"])
    assert "rs_1" not in sent
    assert "u1" not in sent
    assert "保留" not in sent


def test_oversized_metadata_is_refused_naming_it() -> None:
    """API-22 / REL-9: metadata over 64 KiB is 413 naming `messages[i].metadata`; nothing is stored."""
    cid = api.put_key("big-metadata").body["conversation_id"]
    answer = api.append(cid, [{"role": "user", "content": "x", "metadata": {"blob": "y" * 70_000}}])
    assert answer.status == 413, answer.body
    assert "messages[0].metadata" in answer.body["error"]["message"]
    assert api.get_key("big-metadata").body["messages"] == []


def test_direct_invocation_picks_the_key_route_by_its_path_parameters() -> None:
    """API-21 / EVT-1: a function serving a route and its by-key twin takes a direct payload's
    `path_parameters` to tell them apart, so existing payloads keep working unchanged."""
    created = direct("create_conversation", {"user_id": "alice", "path_parameters": {"key": "direct-key"}})
    assert created["statusCode"] == 201
    plain = direct("create_conversation", {"user_id": "alice", "body": {"title": "plain"}})
    assert plain["statusCode"] == 201
    assert plain["body"]["key"] is None
    read = direct("get_conversation", {"user_id": "alice", "path_parameters": {"key": "direct-key"}})
    assert read["statusCode"] == 200
    assert read["body"]["conversation_id"] == created["body"]["conversation_id"]


def test_every_allowed_character_of_a_key_works_percent_encoded() -> None:
    """API-21: a key with every allowed punctuation character, percent-encoded in the path as clients
    send it, names one conversation and reads back as given."""
    key = "user:1@example.com+tag=a~b_c-d"
    created = api.put_key(key)
    assert created.status == 201, created.body
    assert created.body["key"] == key
    assert api.put_key(key).status == 200
    assert api.get_key(key).body["conversation_id"] == created.body["conversation_id"]
