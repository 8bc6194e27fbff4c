"""The routes the web console stands on, over the real handlers: WIN-6 (the window inspector), API-23
(title search), DLG-2 (worlds and their dialogues), CON-1 (the console's own files)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.support import events
from tests.support import functions as api
from tests.support.functions import Answer, invoke, load
from tests.support.lambda_context import LambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def _pin(conversation_id: str, message_id: str, pinned: bool) -> Answer:
    event = events.http_event(
        "PATCH",
        f"/conversations/{conversation_id}/messages/{message_id}",
        route="/conversations/{conversation_id}/messages/{message_id}",
        path_parameters={"conversation_id": conversation_id, "message_id": message_id},
        body={"pinned": pinned},
    )
    return invoke("update_message", event)


def _get(function: str, path: str, route: str, *, user: str | None = "alice", **query: str) -> Answer:
    world = path.split("/")[2] if path.count("/") > 1 else None
    event = events.http_event(
        "GET",
        path,
        route=route,
        path_parameters={"world_id": world} if world else None,
        query=query or None,
        user=user,
    )
    return invoke(function, event)


def _say(world: str, participants: list[str], text: str, tick: int, *, user: str = "alice") -> None:
    entry = {"participant_id": participants[0], "role": "character", "content": text, "game_tick": tick}
    event = events.http_event(
        "POST",
        f"/worlds/{world}/dialogues/entries",
        route="/worlds/{world_id}/dialogues/entries",
        path_parameters={"world_id": world},
        body={"participants": participants, "entries": [entry]},
        user=user,
    )
    assert invoke("add_dialogue_entries", event).status == 201


# ------------------------------------------------------------------------------------------- WIN-6


def _entries(conversation_id: str, content: str = "next") -> list[dict[str, Any]]:
    answer = api.window(conversation_id, content)
    assert answer.status == 200
    entries: list[dict[str, Any]] = answer.body["inspect"]["entries"]
    return entries


def test_inspector_marks_each_message_kept_or_dropped_with_the_engines_reason(chat_service: None) -> None:
    """WIN-6: every stored message the window could use, oldest first, with its stored token count,
    kept or dropped with the reason, matching what the window sends; the budget line is there too."""
    conversation_id = api.create(system_prompt="Be brief.", window_policy={"max_messages": 3}).body[
        "conversation_id"
    ]
    for text in ("one", "two", "three"):
        api.post(text, conversation_id)
    answer = api.window(conversation_id, "four")
    inspect = answer.body["inspect"]
    entries = inspect["entries"]
    assert [e["role"] for e in entries] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert entries[0]["state"] == "kept"
    history = entries[1:]
    assert [e["state"] for e in history] == ["dropped"] * 4 + ["kept"] * 2
    assert {e["reason"] for e in history[:4]} == {"max_messages"}
    stored = {m["message_id"]: m for m in api.detail(conversation_id).body["messages"]}
    assert [e["message_id"] for e in history] == list(stored)
    assert [e["preview"] for e in history[::2]] == ["one", "two", "three"]
    # The kept ones are exactly the history the window sends, and the counts are the stored counts.
    sent = [m["content"] for m in answer.body["messages"][1:-1]]
    assert sent == [stored[e["message_id"]]["content"] for e in history if e["state"] == "kept"]
    assert all(e["tokens"] > 0 for e in entries)
    assert sum(e["tokens"] for e in entries if e["state"] == "kept") < inspect["budget"]["tokens_used"]
    budget = inspect["budget"]
    assert budget["tokens_used"] == answer.body["stats"]["tokens_used"]
    assert budget["token_budget"] == budget["context_length"] - budget["reserve_tokens"]
    assert inspect["summary"] is None


def test_inspector_shows_a_pin_keeping_an_old_message(chat_service: None) -> None:
    """WIN-6 (WIN-3): a pinned message is kept whatever its age, and says so."""
    conversation_id = api.create(window_policy={"max_messages": 3}).body["conversation_id"]
    for text in ("keep me", "two", "three"):
        api.post(text, conversation_id)
    first = _entries(conversation_id)[0]
    assert first["state"] == "dropped"
    assert _pin(conversation_id, first["message_id"], True).status == 200
    pinned = _entries(conversation_id)[0]
    assert pinned == {**first, "state": "kept", "reason": "pinned", "pinned": True}


def test_inspector_groups_a_tool_call_with_its_results_and_names_failed_replies(chat_service: None) -> None:
    """WIN-6: a tool call and its result carry the same tool_group and share one fate; a failed reply
    is marked failed (never sent)."""
    conversation_id = api.create(window_policy={"max_messages": 3}).body["conversation_id"]
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    appended = api.append(
        conversation_id,
        [
            {"role": "user", "content": "look it up"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "found"},
            {"role": "assistant", "content": "It is found."},
            {"role": "user", "content": "thanks"},
            {"role": "assistant", "content": "welcome"},
        ],
    )
    assert appended.status == 201
    entries = _entries(conversation_id)
    by_role = [(e["role"], e["tool_group"], e["state"]) for e in entries]
    call_id = entries[1]["message_id"]
    assert by_role[1:3] == [("assistant", call_id, "dropped"), ("tool", call_id, "dropped")]
    assert entries[1]["preview"] == "lookup"
    assert entries[0]["tool_group"] is None


def test_inspector_shows_the_summary_text_and_what_it_stands_for(chat_service: None) -> None:
    """WIN-6: messages covered by the summary are `summarised`; the summary's text and range are given."""
    from chat_core.chat import summaries

    conversation_id = api.create(window_policy={"max_messages": 2}).body["conversation_id"]
    for n in range(5):
        api.post(f"message {n}", conversation_id)
    assert summaries.summarize_conversation("alice", conversation_id).status == "summarized"
    answer = api.window(conversation_id, "next")
    inspect = answer.body["inspect"]
    summary = inspect["summary"]
    assert summary is not None
    assert summary["text"]
    assert summary["from_seq"] == 1
    covered = [e for e in inspect["entries"] if e["state"] == "summarised"]
    assert [e["seq"] for e in covered] == list(range(1, summary["to_seq"] + 1))
    assert all(e["reason"] == f"in the summary of messages 1–{summary['to_seq']}" for e in covered)


# ------------------------------------------------------------------------------------------ API-23


def _titles(answer: Answer) -> list[str]:
    assert answer.status == 200, answer.body
    return [c["title"] for c in answer.body["items"]]


def test_title_search_is_case_and_accent_insensitive_and_pages(chat_service: None) -> None:
    """API-23: every word of `q` must be in the title (case and accents folded); newest first; the
    cursor goes on from the last match; another user's conversations never match."""
    for title in ("Café in Paris", "Paris trip", "Groceries", "cafe PARIS notes", "Other"):
        api.create(title=title)
    api.create(title="Paris café", user="bob")
    assert _titles(api.listing(q="paris CAFE")) == ["cafe PARIS notes", "Café in Paris"]
    assert _titles(api.listing(q="CAFÉ")) == ["cafe PARIS notes", "Café in Paris"]
    first = api.listing(q="paris", limit="2")
    assert _titles(first) == ["cafe PARIS notes", "Paris trip"]
    second = api.listing(q="paris", limit="2", cursor=first.body["next_cursor"])
    assert _titles(second) == ["Café in Paris"]
    assert second.body["next_cursor"] is None
    assert _titles(api.listing(q="nothing like it")) == []
    assert _titles(api.listing(q="   ")) == [
        "Other",
        "cafe PARIS notes",
        "Groceries",
        "Paris trip",
        "Café in Paris",
    ]


def test_title_search_reads_a_bounded_number_of_pages(chat_service: None, dynamo_calls: Counter[str]) -> None:
    """API-23: one request reads at most SEARCH_MAX_PAGES index pages; a short page with a cursor goes on."""
    from chat_core.chat import reads

    for n in range(7):
        api.create(title=f"note {n}")
    api.create(title="the needle")
    for n in range(7):
        api.create(title=f"later {n}")
    original = (reads.SEARCH_PAGE, reads.SEARCH_MAX_PAGES)
    reads.SEARCH_PAGE, reads.SEARCH_MAX_PAGES = 3, 2
    try:
        dynamo_calls.clear()
        first = api.listing(q="needle")
        assert _titles(first) == []
        assert first.body["next_cursor"] is not None
        assert dynamo_calls["Query"] == 2
        found = api.listing(q="needle", cursor=first.body["next_cursor"])
        assert _titles(found) == ["the needle"]
    finally:
        reads.SEARCH_PAGE, reads.SEARCH_MAX_PAGES = original


# ------------------------------------------------------------------------------------------- DLG-2


def test_worlds_and_their_dialogues_are_listed_for_their_owner_only(chat_service: None) -> None:
    """DLG-2: GET /worlds lists the caller's worlds with their dialogue counts; GET
    /worlds/{id}/dialogues the participants of each dialogue; another user sees neither."""
    _say("colony", ["ann", "bob"], "hello", 10)
    _say("colony", ["ann", "bob"], "again", 20)
    _say("colony", ["ann", "bob", "cy"], "all of us", 30)
    _say("outpost", ["dee", "eve"], "far away", 5)
    _say("bobs-world", ["x", "y"], "mine", 1, user="bob")
    worlds = _get("list_worlds", "/worlds", "/worlds")
    assert [(w["world_id"], w["dialogues"]) for w in worlds.body["items"]] == [("colony", 2), ("outpost", 1)]
    dialogues = _get("list_dialogues", "/worlds/colony/dialogues", "/worlds/{world_id}/dialogues")
    assert [d["participants"] for d in dialogues.body["items"]] == [["ann", "bob"], ["ann", "bob", "cy"]]
    assert _get("list_worlds", "/worlds", "/worlds", user="bob").body["items"][0]["world_id"] == "bobs-world"
    theirs = _get("list_dialogues", "/worlds/colony/dialogues", "/worlds/{world_id}/dialogues", user="bob")
    assert theirs.body["items"] == []
    assert _get("list_worlds", "/worlds", "/worlds", user=None).status == 401


def test_world_pages_follow_the_cursor(chat_service: None) -> None:
    """DLG-2: limit and cursor page through the worlds in id order, each once."""
    for n in range(5):
        _say(f"w{n}", ["a", "b"], "x", 1)
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        query = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = _get("list_worlds", "/worlds", "/worlds", **query)
        seen += [w["world_id"] for w in page.body["items"]]
        cursor = page.body["next_cursor"]
        if cursor is None:
            break
    assert seen == ["w0", "w1", "w2", "w3", "w4"]
    bad = _get("list_worlds", "/worlds", "/worlds", cursor="no#such")
    assert bad.status in (400, 422)


def test_history_entries_carry_their_game_time_label(chat_service: None) -> None:
    """DLG-2: history answers each entry's tick on the default (RimWorld) calendar."""
    from chat_core.dialogue.gametime import format_tick

    _say("colony", ["ann", "bob"], "at dawn", 62_500)
    history = _get(
        "get_dialogue_history", "/worlds/colony/history", "/worlds/{world_id}/history", participants="ann,bob"
    )
    entry = history.body["primary"][0]
    assert entry["game_time"] == format_tick(62_500)
    assert "1h" in entry["game_time"]


# ------------------------------------------------------------------------------------------- CON-1


def test_console_files_are_served_with_a_policy_that_allows_only_this_origin(chat_service: None) -> None:
    """CON-1: the page and its files answer with their types and a CSP of 'self' only; any other name
    (a path outside the folder included) is the API's 404."""

    def fetch(path: str) -> dict[str, Any]:
        route = "/console" if path == "/console" else "/console/{file+}"
        event = events.http_event("GET", path, route=route, user=None)
        answer: dict[str, Any] = load("serve_console").lambda_handler(event, LambdaContext("serve_console"))
        return answer

    page = fetch("/console")
    assert page["statusCode"] == 200
    assert page["headers"]["Content-Type"].startswith("text/html")
    assert "connect-src 'self'" in page["headers"]["Content-Security-Policy"]
    assert '<script src="/console/console.js"' in page["body"]
    for name, kind in (("console.js", "text/javascript"), ("console.css", "text/css")):
        answer = fetch(f"/console/{name}")
        assert answer["statusCode"] == 200
        assert answer["headers"]["Content-Type"].startswith(kind)
    for name in ("../app.py", "../static/index.html", "missing.js", "static/index.html", "app.py"):
        answer = fetch(f"/console/{name}")
        assert answer["statusCode"] == 404
        assert json.loads(answer["body"])["error"]["code"] == "not_found"
