"""DLG-4 on the template's table in moto, through the handlers: deleting a world (soft, then purged by
the retention function when TTL removes its world item), a dialogue, one entry; 404 across users."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from chat_core.dialogue.entries import add_entries, get_historical_context, get_witnessed

from tests.support import events
from tests.support.functions import Answer, invoke, load
from tests.support.lambda_context import LambdaContext
from tests.support.stream_records import TableStream, as_ttl_removal, event, for_function

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

TABLE = "chat-history-it"
PURGE = "PurgeConversationFunction"


def call(
    function: str, method: str, route: str, user: str = "alice", body: Any = None, **params: str
) -> Answer:
    query = params.pop("query", None)
    path = route.format(**params)
    kwargs: dict[str, Any] = {"query": query} if query else {}
    if body is not None:
        kwargs["body"] = body
    http = events.http_event(method, path, route=route, path_parameters=params, user=user, **kwargs)
    return invoke(function, http)


def line(who: str, text: str, tick: int, **kw: object) -> dict[str, object]:
    return {"participant_id": who, "role": "character", "content": text, "game_tick": tick, **kw}


def world_with_two_dialogues(owner: str = "alice") -> str:
    w = f"w-{uuid.uuid4().hex[:8]}"
    add_entries(owner, w, ["A", "B"], [line("A", "ab-1", 1, entry_id="ab1"), line("B", "ab-2", 2)])
    add_entries(owner, w, ["A", "B", "C"], [line("C", "abc-1", 3, entry_id="abc1"), line("A", "abc-2", 4)])
    return w


def world_keys(owner: str, world_id: str) -> list[tuple[str, str]]:
    """Every item of the table whose key belongs to this world (a scan: test tables are small)."""
    client = boto3.client("dynamodb", region_name="us-east-1")
    found = []
    for page in client.get_paginator("scan").paginate(TableName=TABLE):
        for item in page["Items"]:
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            if pk.startswith(f"USER#{owner}#WORLD#{world_id}#") or (
                pk == f"USER#{owner}#WORLDS" and sk == f"W#{world_id}"
            ):
                found.append((pk, sk))
    return found


def export(world_id: str, user: str = "alice") -> tuple[int, str]:
    """GET …/export (JSON Lines, so read raw)."""
    route = "/worlds/{world_id}/export"
    http = events.http_event(
        "GET", route.format(world_id=world_id), route=route, path_parameters={"world_id": world_id}, user=user
    )
    raw = load("export_world").lambda_handler(http, LambdaContext(function_name="export_world"))
    return int(raw["statusCode"]), raw.get("body") or ""


def reads(world_id: str, user: str = "alice") -> dict[str, int]:
    """The status of every read route of a world."""
    route = "/worlds/{world_id}"
    return {
        "history": call(
            "get_dialogue_history",
            "GET",
            route + "/history",
            user,
            world_id=world_id,
            query={"participants": "A,B"},
        ).status,
        "witnessed": call(
            "get_dialogue_history", "GET", route + "/history", user, world_id=world_id, query={"for": "A"}
        ).status,
        "dialogues": call("list_dialogues", "GET", route + "/dialogues", user, world_id=world_id).status,
        "export": export(world_id, user)[0],
        "prompt": call(
            "build_dialogue_prompt",
            "POST",
            route + "/prompt",
            user,
            body={"participants": ["A", "B"], "system_prompt": "s"},
            world_id=world_id,
        ).status,
    }


@pytest.fixture
def stream(chat_service: None) -> TableStream:
    return TableStream(TABLE)


def test_dlg4_a_deleted_world_leaves_every_route_and_is_purged_by_ttl(stream: TableStream) -> None:
    """DLG-4: DELETE /worlds/{id} is 404 for another user; for its owner the world is gone from every
    read route (404), from GET /worlds, closed to writes (409); TTL's removal of its world item purges
    every item it had (dialogues, directory, indexes, witness rows) and nothing of another world."""
    doomed, kept = world_with_two_dialogues(), world_with_two_dialogues()
    assert set(reads(doomed).values()) == {200}
    # Another user cannot delete it (nor see it)
    assert call("delete_world", "DELETE", "/worlds/{world_id}", "mallory", world_id=doomed).status == 404
    # When its owner deletes it
    answer = call("delete_world", "DELETE", "/worlds/{world_id}", world_id=doomed)
    assert answer.status == 200, answer.body
    assert set(answer.body) == {"world_id", "deleted_at", "purge_after"}
    # Then every route answers as if it never existed, and writes are refused until the purge
    assert set(reads(doomed).values()) == {404}
    assert call("delete_world", "DELETE", "/worlds/{world_id}", world_id=doomed).status == 404
    listed = call("list_worlds", "GET", "/worlds").body["items"]
    assert doomed not in [w["world_id"] for w in listed]
    assert kept in [w["world_id"] for w in listed]
    write = call(
        "add_dialogue_entries",
        "POST",
        "/worlds/{world_id}/dialogues/entries",
        body={"participants": ["A", "B"], "entry": line("A", "x", 9)},
        world_id=doomed,
    )
    assert (write.status, write.body["error"]["code"]) == (409, "world_deleted")
    assert set(reads(kept).values()) == {200}
    # When DynamoDB's TTL removes the world item, the retention function purges the rest
    client = boto3.client("dynamodb", region_name="us-east-1")
    key = {"pk": {"S": "USER#alice#WORLDS"}, "sk": {"S": f"W#{doomed}"}}
    assert world_keys("alice", doomed)
    client.delete_item(TableName=TABLE, Key=key)
    removals = [
        as_ttl_removal(r)
        for r in stream.read()
        if r["eventName"] == "REMOVE" and r["dynamodb"]["Keys"] == key
    ]
    records = for_function(PURGE, removals)
    assert len(records) == 1
    result = load("purge_conversation").lambda_handler(event(records), LambdaContext(function_name="purge"))
    assert result["worlds"] == 1
    assert world_keys("alice", doomed) == []
    assert len(world_keys("alice", kept)) > 10
    # And the id is free again: a new world of that id starts empty
    assert (
        call(
            "add_dialogue_entries",
            "POST",
            "/worlds/{world_id}/dialogues/entries",
            body={"participants": ["A", "B"], "entry": line("A", "new", 9)},
            world_id=doomed,
        ).status
        == 201
    )
    assert [e.content for e in get_historical_context("alice", doomed, ["A", "B"], 10, "A").primary] == [
        "new"
    ]


def test_dlg4_deleting_a_dialogue_removes_it_and_only_it(chat_service: None) -> None:
    """DLG-4: DELETE /worlds/{w}/dialogues/{id}: its entries leave history, ancillary and witness lists,
    the world's listing, and the same participants start afresh; other users get 404."""
    w = world_with_two_dialogues()
    route = "/worlds/{world_id}/dialogues/{dialogue_id}"
    assert call("delete_dialogue", "DELETE", route, "mallory", world_id=w, dialogue_id="A+B+C").status == 404
    answer = call("delete_dialogue", "DELETE", route, world_id=w, dialogue_id="A+B+C")
    assert answer.status == 200, answer.body
    assert answer.body["entries_deleted"] == 2
    assert call("delete_dialogue", "DELETE", route, world_id=w, dialogue_id="A+B+C").status == 404
    ctx = get_historical_context("alice", w, ["A", "B"], 10, "A")
    assert ([e.content for e in ctx.primary], ctx.ancillary, ctx.ancillary_dialogues) == (
        ["ab-1", "ab-2"],
        [],
        [],
    )
    assert [e.content for e in get_witnessed("alice", w, "C", 10)] == []
    assert [e.content for e in get_witnessed("alice", w, "A", 10)] == ["ab-1", "ab-2"]
    listed = call("list_dialogues", "GET", "/worlds/{world_id}/dialogues", world_id=w).body["items"]
    assert [d["dialogue_id"] for d in listed] == ["A+B"]
    worlds = {x["world_id"]: x["dialogues"] for x in call("list_worlds", "GET", "/worlds").body["items"]}
    assert worlds[w] == 1
    add_entries("alice", w, ["A", "B", "C"], [line("C", "fresh", 5, entry_id="abc1")])
    assert [e.content for e in get_historical_context("alice", w, ["A", "B", "C"], 10).primary] == ["fresh"]
    assert call("delete_dialogue", "DELETE", route, world_id=w, dialogue_id="not a dialogue").status == 400


def test_dlg4_removing_one_entry_for_moderation(chat_service: None) -> None:
    """DLG-4: DELETE …/entries/{entry_id}: the entry leaves history, witness lists and the export; the
    rest of the dialogue stays; another user, a second delete and an unknown id get 404."""
    w = world_with_two_dialogues()
    route = "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}"
    ids = {"world_id": w, "dialogue_id": "A+B", "entry_id": "ab1"}
    assert call("delete_dialogue_entry", "DELETE", route, "mallory", **ids).status == 404
    answer = call("delete_dialogue_entry", "DELETE", route, **ids)
    assert answer.status == 200, answer.body
    assert answer.body["deleted"]["content"] == "ab-1"
    assert call("delete_dialogue_entry", "DELETE", route, **ids).status == 404
    assert [e.content for e in get_historical_context("alice", w, ["A", "B"], 10).primary] == ["ab-2"]
    assert [e.content for e in get_witnessed("alice", w, "B", 10)] == ["ab-2", "abc-1", "abc-2"]
    status, text = export(w)
    assert status == 200
    assert "ab-1" not in text
    assert '"entry_count":1' in text
