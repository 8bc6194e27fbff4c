"""DLG-5 on the template's table in moto, through the handlers: save games at a tick; loading one hides
the later history from history, witness lists and prompts; reverting the load brings it back."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from chat_core.dialogue.entries import add_entries, get_historical_context, get_witnessed

from tests.support import events
from tests.support.functions import Answer, invoke

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def call(
    function: str, method: str, route: str, user: str = "alice", body: Any = None, **params: str
) -> Answer:
    http = events.http_event(
        method,
        route.format(**params),
        route=route,
        path_parameters=params,
        user=user,
        **({"body": body} if body is not None else {}),
    )
    return invoke(function, http)


def save(w: str, save_id: str, tick: int, user: str = "alice") -> Answer:
    return call(
        "save_world",
        "POST",
        "/worlds/{world_id}/saves",
        user,
        {"save_id": save_id, "game_tick": tick},
        world_id=w,
    )


def load(w: str, save_id: str, user: str = "alice") -> Answer:
    return call(
        "load_save", "POST", "/worlds/{world_id}/saves/{save_id}/load", user, world_id=w, save_id=save_id
    )


def revert(w: str, save_id: str, user: str = "alice") -> Answer:
    return call(
        "revert_load", "DELETE", "/worlds/{world_id}/saves/{save_id}/load", user, world_id=w, save_id=save_id
    )


def say(w: str, who: str, text: str, tick: int) -> None:
    add_entries(
        "alice",
        w,
        ["A", "B"],
        [{"participant_id": who, "role": "character", "content": text, "game_tick": tick}],
    )


def remembered(w: str) -> dict[str, list[str]]:
    """What history, A's witness list and the prompt voicing B hold."""
    prompt = call(
        "build_dialogue_prompt",
        "POST",
        "/worlds/{world_id}/prompt",
        body={"participants": ["A", "B"], "system_prompt": "s", "ai_participant": "B"},
        world_id=w,
    )
    assert prompt.status == 200, prompt.body
    said = ["t100", "t160", "t200", "t300", "t310"]
    text = json.dumps(prompt.body["messages"])
    return {
        "history": [e.content for e in get_historical_context("alice", w, ["A", "B"], 10).primary],
        "witnessed": [e.content for e in get_witnessed("alice", w, "A", 10)],
        "prompt": [t for t in said if t in text],
    }


def test_dlg5_loading_a_save_hides_later_history_and_reverting_restores_it(chat_service: None) -> None:
    """DLG-5: a save at tick 150; play on to 300; load the save: history past 150 stored before the load
    is gone from history, witness lists and prompts, while the new timeline (tick 160 after the load)
    shows; revert the load: everything is back in tick order."""
    w = f"w-{uuid.uuid4().hex[:8]}"
    say(w, "A", "t100", 100)
    saved = save(w, "autosave-1", 150)
    assert saved.status == 201, saved.body
    assert (saved.body["game_tick"], saved.body["loaded_at"], saved.body["replaced"]) == (150, None, False)
    say(w, "B", "t200", 200)
    say(w, "A", "t300", 300)
    everything = {
        "history": ["t100", "t200", "t300"],
        "witnessed": ["t100", "t200", "t300"],
        "prompt": ["t100", "t200", "t300"],
    }
    assert remembered(w) == everything
    # When the game loads the save and the story goes on from tick 160
    loaded = load(w, "autosave-1")
    assert loaded.status == 200, loaded.body
    assert loaded.body["loaded_at"]
    assert remembered(w) == {"history": ["t100"], "witnessed": ["t100"], "prompt": ["t100"]}
    say(w, "B", "t160", 160)
    assert remembered(w) == {
        "history": ["t100", "t160"],
        "witnessed": ["t100", "t160"],
        "prompt": ["t100", "t160"],
    }
    listed = call("list_saves", "GET", "/worlds/{world_id}/saves", world_id=w).body["saves"]
    assert [(s["save_id"], s["loaded_at"] is not None) for s in listed] == [("autosave-1", True)]
    # Then reverting the load restores what it hid
    reverted = revert(w, "autosave-1")
    assert reverted.status == 200, reverted.body
    assert reverted.body["loaded_at"] is None
    back = ["t100", "t160", "t200", "t300"]
    assert remembered(w) == {"history": back, "witnessed": back, "prompt": back}
    assert revert(w, "autosave-1").status == 404


def test_dlg5_two_loads_hide_the_union_and_saves_are_per_owner(chat_service: None) -> None:
    """DLG-5: loads of two saves both apply until reverted; saving again overwrites; another user's
    world has no saves to load (404); bad ids and ticks are refused."""
    w = f"w-{uuid.uuid4().hex[:8]}"
    say(w, "A", "t100", 100)
    assert save(w, "late", 250).status == 201
    say(w, "B", "t200", 200)
    say(w, "A", "t300", 300)
    assert load(w, "late").status == 200
    assert remembered(w)["history"] == ["t100", "t200"]
    assert save(w, "early", 150).status == 201
    assert load(w, "early").status == 200
    assert remembered(w)["history"] == ["t100"]
    assert revert(w, "early").status == 200
    assert remembered(w)["history"] == ["t100", "t200"]
    again = save(w, "late", 310)
    assert (again.status, again.body["replaced"]) == (201, True)
    say(w, "A", "t310", 310)
    assert remembered(w)["history"] == ["t100", "t200", "t310"]
    # Another user: nothing to load, nothing listed
    assert load(w, "late", user="mallory").status == 404
    assert call("list_saves", "GET", "/worlds/{world_id}/saves", "mallory", world_id=w).body["saves"] == []
    assert load(w, "missing").status == 404
    assert save(w, "bad id!", 5).status == 400
    assert save(w, "ok", -1).status == 400
