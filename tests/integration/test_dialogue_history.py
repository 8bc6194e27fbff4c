"""Seed 004 HistoryService on the template's table in moto: dialogues, participant index, history."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore.client
import pytest
from boto3.dynamodb.conditions import Key
from chat_core.dialogue.entries import (
    EntryRecord,
    add_entry,
    get_historical_context,
    parse_entry,
    start_or_get_conversation,
)
from chat_core.errors import DialogueNotFound, InvalidGameTick, InvalidInput, MessageTooLong
from chat_core.settings import get_settings
from chat_core.store import dialogues as dialogue_store

W = "save1"


@pytest.fixture
def table(chat_service: None) -> None:
    """The template's table in moto (tests/integration/conftest.py); chat_core binds to it on first use."""


def say(
    owner: str, participants: list[str], who: str, text: str, tick: int, world: str = W, **kw: object
) -> None:
    entry = {"participant_id": who, "role": "character", "content": text, "game_tick": tick, **kw}
    add_entry(owner, world, participants, entry)


def contents(entries: list[EntryRecord]) -> list[str]:
    return [e.content for e in entries]


def test_seed004_abc_primary_is_the_pair_and_ancillary_is_the_group(table: None) -> None:
    """Seed 004 §2.4: history(A,B) -> primary = dialogue A_B, ancillary = dialogue A_B_C."""
    # Given A and B talk 1v1, and A, B and C talk as a group, and A and C talk 1v1
    say("alice", ["A", "B"], "A", "ab-1", 100)
    say("alice", ["A", "B", "C"], "C", "abc-1", 150)
    say("alice", ["B", "A"], "B", "ab-2", 200)
    say("alice", ["C", "B", "A"], "A", "abc-2", 250)
    say("alice", ["A", "C"], "A", "ac-1", 300)
    # When the history of A and B is asked for
    ctx = get_historical_context("alice", W, ["B", "A"])
    # Then primary is exactly A_B, ancillary exactly A_B_C, both in tick order
    assert ctx.dialogue_id == "A+B"
    assert contents(ctx.primary) == ["ab-1", "ab-2"]
    assert contents(ctx.ancillary) == ["abc-1", "abc-2"]
    assert ctx.ancillary_dialogues == ["A+B+C"]
    assert {e.dialogue_id for e in ctx.ancillary} == {"A+B+C"}


def test_seed004_group_history_has_no_ancillary_from_its_subsets(table: None) -> None:
    """1v1 vs group: history(A,B,C) is the group itself; the A_B 1v1 is neither primary nor ancillary."""
    say("alice", ["A", "B"], "A", "ab", 1)
    say("alice", ["A", "B", "C"], "B", "abc", 2)
    say("alice", ["A", "B", "C", "D"], "D", "abcd", 3)
    ctx = get_historical_context("alice", W, ["A", "B", "C"])
    assert contents(ctx.primary) == ["abc"]
    assert contents(ctx.ancillary) == ["abcd"]


def test_seed004_player_and_zorg_end_to_end(table: None) -> None:
    """Seed 004 §4: player and Zorg talk 1v1, with a group chat in the past; Zorg's reply is stored after."""
    # Given a past group conversation of player, Zorg and a trader, and a 1v1 line
    start_or_get_conversation("alice", W, ["player_id", "zorg_id", "trader_id"])
    say("alice", ["player_id", "zorg_id", "trader_id"], "trader_id", "I sell guns.", 50_000, name="Trader")
    say("alice", ["player_id", "zorg_id"], "player_id", "Hello Zorg.", 272_500, name="Player")
    # When the game asks for the 1v1 context
    ctx = get_historical_context("alice", W, ["player_id", "zorg_id"])
    assert contents(ctx.primary) == ["Hello Zorg."]
    assert contents(ctx.ancillary) == ["I sell guns."]
    # And then records Zorg's reply via StartOrGetConversation + AddEntry
    dialogue_id = start_or_get_conversation("alice", W, ["zorg_id", "player_id"])
    added = add_entry(
        "alice",
        W,
        dialogue_id,
        {"participant_id": "zorg_id", "role": "assistant", "content": "Hello, human.", "game_tick": 272_600},
    )
    # Then the reply is in the primary history, after the player's line
    assert dialogue_id == "player_id+zorg_id"
    assert added.created
    assert added.entry.seq == 1
    ctx = get_historical_context("alice", W, ["player_id", "zorg_id"])
    assert contents(ctx.primary) == ["Hello Zorg.", "Hello, human."]


def test_start_or_get_is_idempotent_and_order_insensitive(table: None) -> None:
    """StartOrGetConversation: the same set in any order (duplicates collapse) gives the same id, once."""
    first = start_or_get_conversation("alice", W, ["b", "a", "c"])
    again = start_or_get_conversation("alice", W, ["c", "a", "b", "a"])
    assert first == again == "a+b+c"
    counts = dialogue_store.participant_dialogue_counts("alice", W, ["a", "b", "c"])
    assert counts == {"a": 1, "b": 1, "c": 1}


def test_a_start_that_loses_the_race_returns_the_winners_dialogue(table: None) -> None:
    """Concurrent StartOrGet: a creator that finds the dialogue already created (conditional write fails)
    reports it as existing, and the index counters are incremented exactly once."""
    # Given a start that has already committed
    assert dialogue_store.create_dialogue("alice", W, ("x", "y")) is True
    # When a second creator, which read "absent" before the first committed, tries to create it too
    created_again = dialogue_store.create_dialogue("alice", W, ("x", "y"))
    # Then its conditional transaction fails cleanly and nothing is counted twice
    assert created_again is False
    assert start_or_get_conversation("alice", W, ["y", "x"]) == "x+y"
    assert dialogue_store.participant_dialogue_counts("alice", W, ["x", "y"]) == {"x": 1, "y": 1}


def test_history_is_ordered_by_game_tick_not_by_arrival(table: None) -> None:
    """Entries sort by game tick; equal ticks keep insertion order (per-dialogue sequence)."""
    for text, tick in [("third", 300), ("first", 100), ("second-a", 200), ("second-b", 200), ("zero", 0)]:
        say("alice", ["A", "B"], "A", text, tick)
    ctx = get_historical_context("alice", W, ["A", "B"])
    assert contents(ctx.primary) == ["zero", "first", "second-a", "second-b", "third"]


def test_limit_returns_the_newest_entries_in_tick_order(table: None) -> None:
    """limit caps each list at the newest `limit` entries, returned oldest first; the default is 10."""
    for i in range(12):
        say("alice", ["A", "B"], "B", f"p{i}", 1000 + i)
        say("alice", ["A", "B", f"G{i % 3}"], "A", f"g{i}", 2000 + i)
    ctx = get_historical_context("alice", W, ["A", "B"], limit=3)
    assert contents(ctx.primary) == ["p9", "p10", "p11"]
    assert contents(ctx.ancillary) == ["g9", "g10", "g11"]
    default = get_historical_context("alice", W, ["A", "B"])
    assert contents(default.primary) == [f"p{i}" for i in range(2, 12)]
    assert len(default.ancillary) == 10
    assert [e.game_tick for e in default.ancillary] == sorted(e.game_tick for e in default.ancillary)


def test_ancillary_merges_several_groups_by_tick(table: None) -> None:
    """Ancillary entries of several superset dialogues interleave by game tick."""
    say("alice", ["A", "B", "C"], "C", "c-10", 10)
    say("alice", ["A", "B", "D"], "D", "d-5", 5)
    say("alice", ["A", "B", "D"], "D", "d-20", 20)
    say("alice", ["A", "B", "C", "D"], "A", "cd-15", 15)
    ctx = get_historical_context("alice", W, ["A", "B"])
    assert contents(ctx.ancillary) == ["d-5", "c-10", "cd-15", "d-20"]
    assert ctx.ancillary_dialogues == ["A+B+C", "A+B+C+D", "A+B+D"]


def test_limit_zero_and_unknown_participants(table: None) -> None:
    """limit=0 returns nothing; participants never seen return empty history, not an error."""
    say("alice", ["A", "B"], "A", "x", 1)
    assert get_historical_context("alice", W, ["A", "B"], limit=0).primary == []
    ctx = get_historical_context("alice", W, ["nobody", "ghost"])
    assert ctx.primary == []
    assert ctx.ancillary == []


def test_worlds_are_isolated(table: None) -> None:
    """Isolation between worlds (save slots): the same participants in another world see nothing."""
    say("alice", ["A", "B"], "A", "in save1", 1, world="save1")
    say("alice", ["A", "B", "C"], "A", "group in save1", 2, world="save1")
    ctx = get_historical_context("alice", "save2", ["A", "B"])
    assert ctx.primary == []
    assert ctx.ancillary == []


def test_owners_are_isolated(table: None) -> None:
    """Isolation between owners: bob's world of the same name holds none of alice's dialogues."""
    say("alice", ["A", "B"], "A", "alice's line", 1)
    say("alice", ["A", "B", "C"], "A", "alice's group", 2)
    say("bob", ["A", "B"], "A", "bob's line", 3)
    bob = get_historical_context("bob", W, ["A", "B"])
    assert contents(bob.primary) == ["bob's line"]
    assert bob.ancillary == []


def test_owner_with_separator_characters_cannot_reach_another_owner(table: None) -> None:
    """Keys can't be forged: an owner named like another owner's key prefix gets its own keys."""
    say("alice", ["A", "B"], "A", "secret", 1)
    forged = get_historical_context("alice#WORLD#save1", W, ["A", "B"])
    assert forged.primary == []
    assert get_historical_context("alice%23WORLD", W, ["A", "B"]).primary == []


@pytest.mark.parametrize(
    ("participants", "fragment"),
    [
        (["a#b", "c"], "contains '#'"),
        (["a,b"], "contains ','"),
        (["a+b", "c"], "contains '+'"),
        (["~x"], "contains '~'"),
        (["a b"], "contains ' '"),
        ([""], "non-empty"),
        (["x" * 65], "limit is 64"),
        ([f"p{i}" for i in range(33)], "limit is 32"),
        ([], "at least one"),
        ("A,B", "list of participant ids"),
    ],
)
def test_bad_participant_ids_are_clear_errors(table: str, participants: object, fragment: str) -> None:
    """Participant ids are validated so keys can't collide or be forged; each error says why."""
    with pytest.raises(InvalidInput) as err:
        start_or_get_conversation("alice", W, participants)  # type: ignore[arg-type]
    assert fragment in err.value.message


@pytest.mark.parametrize("world", ["", "a#b", "a/b", "-x", "x" * 65, "save 1"])
def test_bad_world_ids_are_clear_errors(table: str, world: str) -> None:
    """World ids: 1-64 of letters, digits, _ . - (they appear in URLs and keys)."""
    with pytest.raises(InvalidInput) as err:
        get_historical_context("alice", world, ["A", "B"])
    assert err.value.details["field"] == "world_id"


def test_unicode_participant_ids_work(table: None) -> None:
    """Participant ids may be any script (e.g. Chinese names), as long as they hold no separators."""
    say("alice", ["佐格", "玩家"], "佐格", "你好", 5)
    ctx = get_historical_context("alice", W, ["玩家", "佐格"])
    assert contents(ctx.primary) == ["你好"]


def test_large_groups_get_a_digest_id_and_still_work(table: None) -> None:
    """A set whose joined ids make a long key is stored under a `~<sha256>` id; retrieval still works."""
    group = [f"colonist_{i:02d}_" + "x" * 40 for i in range(12)]
    say("alice", group, group[0], "party!", 7)
    dialogue_id = start_or_get_conversation("alice", W, group)
    assert dialogue_id.startswith("~")
    assert len(dialogue_id) == 65
    ctx = get_historical_context("alice", W, group[:2])
    assert contents(ctx.ancillary) == ["party!"]


def test_entry_validation(table: None) -> None:
    """Bad entries are refused before any write: speaker not in the dialogue, bad tick, long text."""
    with pytest.raises(InvalidInput, match="not a participant"):
        say("alice", ["A", "B"], "C", "hi", 1)
    with pytest.raises(InvalidGameTick):
        say("alice", ["A", "B"], "A", "hi", -1)
    with pytest.raises(InvalidGameTick):
        say("alice", ["A", "B"], "A", "hi", "12")  # type: ignore[arg-type]
    with pytest.raises(MessageTooLong):
        say("alice", ["A", "B"], "A", "x" * 5001, 1)
    with pytest.raises(InvalidInput, match="unknown entry field"):
        say("alice", ["A", "B"], "A", "hi", 1, gameTick=3)
    with pytest.raises(InvalidInput, match="role"):
        add_entry("alice", W, ["A", "B"], {"participant_id": "A", "role": "", "content": "x", "game_tick": 1})
    assert get_historical_context("alice", W, ["A", "B"]).primary == []


def test_add_entry_to_unknown_dialogue_id_is_not_found(table: None) -> None:
    """AddEntry by dialogue id needs an existing dialogue; by participant list it creates one."""
    with pytest.raises(DialogueNotFound):
        add_entry("alice", W, "A+B", {"participant_id": "A", "role": "user", "content": "x", "game_tick": 1})
    with pytest.raises(InvalidInput):
        add_entry("alice", W, "B+A", {"participant_id": "A", "role": "user", "content": "x", "game_tick": 1})


def test_repeated_entry_id_is_stored_once(table: None) -> None:
    """An entry_id makes a retried write (e.g. a redelivered queue message) idempotent."""
    entry = {"participant_id": "A", "role": "user", "content": "once", "game_tick": 9, "entry_id": "msg-1"}
    first = add_entry("alice", W, ["A", "B"], entry)
    second = add_entry("alice", W, ["A", "B"], entry)
    assert first.created
    assert not second.created
    assert second.entry == first.entry
    assert contents(get_historical_context("alice", W, ["A", "B"]).primary) == ["once"]


def test_a_writer_with_a_stale_sequence_retries_and_loses_nothing(table: None) -> None:
    """Concurrent appends: a writer whose read of the dialogue is stale (another entry landed since)
    retries at the next sequence instead of overwriting or failing; both entries keep their order."""
    # Given two writers that both read the dialogue at next_seq = 0
    start_or_get_conversation("alice", W, ["A", "B"])
    stale = dialogue_store.get_dialogue("alice", W, "A+B")
    assert stale is not None
    assert stale.next_seq == 0
    # When the first commits, then the second commits with its stale read
    add_entry("alice", W, "A+B", {"participant_id": "A", "role": "user", "content": "first", "game_tick": 5})
    new = parse_entry({"participant_id": "B", "role": "user", "content": "second", "game_tick": 5})
    record, created = dialogue_store.append_entry("alice", W, stale, new)
    # Then the second lands at seq 1, after the first, and both are there
    assert created
    assert record.seq == 1
    ctx = get_historical_context("alice", W, ["A", "B"])
    assert contents(ctx.primary) == ["first", "second"]
    assert [e.seq for e in ctx.primary] == [0, 1]


def test_history_reads_are_queries_never_scans(table: None, dynamo_calls: Counter[str]) -> None:
    """Storage: the index is read by Query; superset lookup skips smaller dialogues by key condition."""
    say("alice", ["A", "B"], "A", "x", 1)
    say("alice", ["A", "B", "C"], "A", "y", 2)
    client = boto3.resource("dynamodb", region_name="us-east-1").Table(get_settings().table_name)
    index = client.query(KeyConditionExpression=Key("pk").eq("USER#alice#WORLD#save1#P#A"))["Items"]
    sks = sorted(i["sk"] for i in index)
    assert sks == ["DLG#02#A+B", "DLG#03#A+B+C", "~STATS"]
    supersets = list(dialogue_store.dialogues_with_more_participants("alice", W, "A", 2))
    assert supersets == [("A+B+C", ("A", "B", "C"))]
    get_historical_context("alice", W, ["A", "B"])
    assert dynamo_calls["Scan"] == 0


def test_concurrent_writers_and_starters_lose_nothing(table: None, serialized_moto: None) -> None:
    """Concurrency: parallel starts of one new set create it once; parallel appends to one dialogue store
    every entry once, with unique sequences (conditional transactions, retried on conflict)."""

    # Given eight writers starting the same dialogue and appending at the same tick
    def write(i: int) -> int:
        entry = {"participant_id": "A", "role": "user", "content": f"m{i}", "game_tick": 5}
        return add_entry("alice", W, ["B", "A"], entry).entry.seq

    # When they run in parallel
    with ThreadPoolExecutor(max_workers=4) as pool:
        seqs = list(pool.map(write, range(8)))
    # Then every entry is stored once, sequences are 0..7, and the index counted the dialogue once
    assert sorted(seqs) == list(range(8))
    ctx = get_historical_context("alice", W, ["A", "B"], limit=20)
    assert sorted(contents(ctx.primary)) == sorted(f"m{i}" for i in range(8))
    assert [e.seq for e in ctx.primary] == list(range(8))
    assert dialogue_store.participant_dialogue_counts("alice", W, ["A", "B"]) == {"A": 1, "B": 1}


def test_retrieval_starts_from_the_rarest_participant(table: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """DLG-1 / seed 004 §2.4 intersection: only the index of the participant with the fewest dialogues
    is queried, and only superset dialogues are read; one BatchGetItem reads all counters."""
    # Given "player" is in many dialogues and "zorg" in two (the 1v1 and one group)
    for i in range(6):
        say("alice", ["player", f"npc{i}"], "player", f"hi {i}", i)
        say("alice", ["player", f"npc{i}", f"npc{i + 1}"], "player", f"group {i}", i)
    say("alice", ["player", "zorg"], "zorg", "1v1", 100)
    say("alice", ["player", "zorg", "npc0"], "zorg", "with npc0", 101)
    calls: list[tuple[str, dict[str, object]]] = []
    original = botocore.client.BaseClient._make_api_call

    def recording(self: object, operation: str, params: dict[str, object]) -> object:
        calls.append((operation, params))
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
    # When the pair's history is read
    ctx = get_historical_context("alice", W, ["player", "zorg"])
    # Then: one BatchGetItem, and Queries on the primary, zorg's index (never player's) and the one superset
    assert contents(ctx.ancillary) == ["with npc0"]
    operations = [op for op, _ in calls]
    assert operations.count("BatchGetItem") == 1
    queried = [str(p["ExpressionAttributeValues"]) for op, p in calls if op == "Query"]  # type: ignore[index]
    assert len(queried) == 3
    assert any("#P#zorg" in q for q in queried)
    assert not any("#P#player" in q for q in queried)
    assert "Scan" not in operations
