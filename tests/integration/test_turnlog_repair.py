"""AGT-1 (seed 002 turn log) x REL item 3 (a failure between the user-message write and the
assistant write): a turn whose reply was never stored still ends in the log, with turn_end status error.

Two ways a reply slot stays without its reply: TransactWrite #2 fails (the post closes the turn itself,
`closedBy: "fallback"`), or the post dies (the next post closes it, `closedBy: "repair"`). Either way
GET /conversations/{id}/events shows turn_start ... turn_end, the turn's state leaves the conversation,
and the turns after it are numbered on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chat_core.chat import deadlines, recording
from chat_core.engine.turnlog import LogEvent
from chat_core.llm import provider
from chat_core.runtime import current
from chat_core.settings import get_settings
from chat_core.store import conversations as store
from chat_core.store.keys import message_id_for
from chat_core.store.records import MessageRecord

from tests.reliability.faults import DynamoFaults, injected
from tests.support import functions as api
from tests.support.agent_api import full_log, turn_log
from tests.support.openai_standin import OpenAIStandin
from tests.support.runtime import renew

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

COMPLETE = ["turn_start", "assistant", "final", "turn_end"]
CLOSED = ["turn_start", "assistant", "turn_end"]
CALL_ID = "call_standin_1"  # the stand-in's tool_call mode asks for get_weather with this id


@pytest.fixture
def faults(chat_service: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoFaults]:
    with injected(monkeypatch) as installed:
        yield installed


class ProcessDied(BaseException):
    """A Lambda runtime killed mid-invocation: nothing after the model call runs, not even `except`."""


class _DiesMidCall:
    def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise ProcessDied


def _crash_during_the_model_call(conversation_id: str, content: str | None, **fields: Any) -> None:
    """TransactWrite #1 lands (question stored, reply slot reserved), then the process dies."""
    current().provide(provider.PROVIDER, _DiesMidCall())  # what get_provider() hands out now
    with pytest.raises(ProcessDied):
        api.post(content, conversation_id, **fields)
    renew()


def _abandon_after(monkeypatch: pytest.MonkeyPatch, seconds: int) -> None:
    monkeypatch.setenv("ABANDONED_TURN_SECONDS", str(seconds))
    renew()


def _types_by_turn(lines: list[dict[str, Any]]) -> dict[int | None, list[str]]:
    turns: dict[int | None, list[str]] = {}
    for line in lines:
        turns.setdefault(line["turn"], []).append(line["type"])
    return turns


def _assert_counts_exact(conversation_id: str) -> list[dict[str, Any]]:
    detail = api.detail(conversation_id).body
    assert detail["message_count"] == len(detail["messages"])
    return list(detail["messages"])


def test_issue5_1_issue7_3_failed_second_transaction_ends_the_turn_in_the_log(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGT-1 / REL-8: TransactWrite #2 fails -> the events route shows turn_end status error for the
    turn, whose error step names the error reply that fills the slot; the next turn is turn 3."""
    # Given a conversation, no time left to retry the reply's write, and the next post's TransactWrite #2
    # and the reply's write on its own both cancelled for throttling
    monkeypatch.setattr(deadlines, "STORE_MARGIN_S", 0.0)
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "TransactionCanceled:ThrottlingError", skip=1, times=2)
    # When a message is posted
    answer = api.post("kept?", conversation_id)
    faults.clear()
    # Then the client is told to retry, and the turn's log ends: error step, then turn_end status error
    assert answer.status == 503, answer.body
    lines = turn_log(conversation_id, turn="2").lines
    assert [line["type"] for line in lines] == CLOSED
    start, step, end = lines
    assert start["content"] == "kept?"
    reply = _assert_counts_exact(conversation_id)[-1]
    assert (reply["role"], reply["status"]) == ("assistant", "error")
    assert step["meta"]["status"] == "error"
    assert step["meta"]["messageId"] == reply["message_id"]
    assert step["meta"]["error"]["kind"] == "not_stored"
    assert end["meta"]["status"] == "error"
    assert end["meta"]["errorMessage"] == reply["error"]["message"]
    assert "could not be stored" in end["meta"]["errorMessage"]
    assert end["meta"]["closedBy"] == "fallback"
    assert end["meta"]["stepCount"] == 1
    assert isinstance(end["meta"]["durationMs"], int)
    assert end["meta"]["durationMs"] >= 0
    assert end["meta"]["tokens"]["total"] == 0
    # When the user asks again, the next turn is complete and numbered 3
    assert api.post("again", conversation_id).status == 201
    assert _types_by_turn(full_log(conversation_id)) == {
        None: ["session_start"],
        1: COMPLETE,
        2: CLOSED,
        3: COMPLETE,
    }


def test_issue5_1_issue7_3_when_the_fallback_fails_too_the_repair_ends_the_turn(
    faults: DynamoFaults, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGT-1 / REL-8: TransactWrite #2 and its fallback both fail -> the turn stays open in the log
    (turn_start only) until the next post repairs it: error step + turn_end with closedBy "repair"."""
    # Given a conversation, and every TransactWrite after the next post's first one failing
    conversation_id = api.post("first").body["conversation_id"]
    faults.fail("TransactWriteItems", "InternalServerError", skip=1)
    assert api.post("orphaned?", conversation_id).status == 503
    faults.clear()
    assert _types_by_turn(full_log(conversation_id))[2] == ["turn_start"]
    # When the store is back, the turn counts as abandoned and another message is posted
    _abandon_after(monkeypatch, 0)
    assert api.post("and now?", conversation_id).status == 201
    # Then turn 2 ends as an interrupted error turn, and the new turn is turn 3
    lines = full_log(conversation_id)
    assert _types_by_turn(lines) == {None: ["session_start"], 1: COMPLETE, 2: CLOSED, 3: COMPLETE}
    end = next(line for line in lines if line["turn"] == 2 and line["type"] == "turn_end")
    assert end["meta"]["status"] == "error"
    assert end["meta"]["closedBy"] == "repair"
    assert "interrupted" in end["meta"]["errorMessage"]
    reply = _assert_counts_exact(conversation_id)[3]
    assert end["meta"]["errorMessage"] == reply["error"]["message"]


def test_issue5_1_issue7_3_a_crashed_turn_is_ended_by_the_next_posts_repair(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGT-1 / REL-8: the process dies during the model call. A post right after leaves the slot (and
    the turn) alone; once abandoned, the next post's repair ends turn 2, and that post is turn 4."""
    # Given a conversation whose second post dies while the model answers
    conversation_id = api.post("first").body["conversation_id"]
    _crash_during_the_model_call(conversation_id, "did you get this?")
    # When another message is posted at once (the slot could still belong to a running post)
    assert api.post("still there?", conversation_id).status == 201
    # Then turn 2 is left open (only its start is logged) and the new post is turn 3
    assert _types_by_turn(full_log(conversation_id)) == {
        None: ["session_start"],
        1: COMPLETE,
        2: ["turn_start"],
        3: COMPLETE,
    }
    # When the slot is older than ABANDONED_TURN_SECONDS and the next message comes
    _abandon_after(monkeypatch, 0)
    assert api.post("third", conversation_id).status == 201
    # Then turn 2 ends with an error step for the reply in its slot, and the new post is turn 4
    lines = full_log(conversation_id)
    assert _types_by_turn(lines) == {
        None: ["session_start"],
        1: COMPLETE,
        2: CLOSED,
        3: COMPLETE,
        4: COMPLETE,
    }
    assert api.detail(conversation_id).body["turn_count"] == 4
    messages = _assert_counts_exact(conversation_id)
    step, end = [line for line in lines if line["turn"] == 2][1:]
    assert (messages[3]["role"], messages[3]["status"]) == ("assistant", "error")
    assert step["meta"]["messageId"] == messages[3]["message_id"]
    assert step["meta"]["error"]["kind"] == "interrupted"
    assert (end["meta"]["status"], end["meta"]["closedBy"], end["meta"]["stepCount"]) == (
        "error",
        "repair",
        1,
    )
    assert end["meta"]["durationMs"] >= 0
    # And the log stays in order: the repair's lines sit in their turn, stamped when it closed the turn
    assert [line["turn"] for line in lines[1:]] == sorted(line["turn"] for line in lines[1:])


def test_issue7_3_repairing_twice_writes_nothing_twice(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-8 idempotency: two repairs working from the same read close the slot once: one error
    reply, one turn_end, exact counts; the second repair writes nothing."""
    # Given a crashed turn, abandoned, and a read of the conversation taken before any repair
    conversation_id = api.post("first").body["conversation_id"]
    _crash_during_the_model_call(conversation_id, "lost?")
    _abandon_after(monkeypatch, 0)
    stale = store.read_recent("alice", conversation_id, 10)
    assert stale.conversation is not None
    # When the repair runs twice from that read
    first = recording.repair_abandoned(stale.conversation, stale.messages, get_settings())
    log_after_first = full_log(conversation_id)
    second = recording.repair_abandoned(stale.conversation, stale.messages, get_settings())
    # Then the first closed the turn and the second wrote nothing
    assert (first, second) == (1, 0)
    assert full_log(conversation_id) == log_after_first
    assert _types_by_turn(log_after_first)[2] == CLOSED
    messages = _assert_counts_exact(conversation_id)
    assert [(m["role"], m["status"]) for m in messages] == [
        ("user", "ok"),
        ("assistant", "ok"),
        ("user", "ok"),
        ("assistant", "error"),
    ]


def test_issue7_3_a_late_reply_write_after_the_repair_is_refused(
    chat_service: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-8 race: a post thought dead stores its reply after the repair closed its turn. Its
    TransactWrite #2 (reply slot and the same event keys) is refused whole: no second reply, no second
    turn_end, counters untouched."""
    # Given a crashed turn closed by the repair
    conversation_id = api.post("first").body["conversation_id"]
    _crash_during_the_model_call(conversation_id, "slow one")
    _abandon_after(monkeypatch, 0)
    assert api.post("next", conversation_id).status == 201
    before = api.detail(conversation_id).body
    log_before = full_log(conversation_id)
    # When the original post's TransactWrite #2 arrives late: reply in slot 4, events from index 1 of turn 2
    conversation = store.get_conversation("alice", conversation_id)
    assert conversation is not None
    late = MessageRecord(
        owner="alice",
        conversation_id=conversation_id,
        seq=4,
        message_id=message_id_for(4),
        role="assistant",
        content="finally",
        status="ok",
        created_at="2030-01-01T00:00:00.000000Z",
        tokens=1,
    )
    late_events = [
        LogEvent(type="assistant", ts=late.created_at, turn=2, step=0, content="finally", index=1),
        LogEvent(type="final", ts=late.created_at, turn=2, step=0, content="finally", index=2),
        LogEvent(type="turn_end", ts=late.created_at, turn=2, meta={"status": "ok"}, index=3),
    ]
    with pytest.raises(store.ReplySlotTaken):
        store.record_reply(
            conversation, late, late.created_at, reported=(1, 1, 2), local=(1, 1), events=late_events
        )
    # Then nothing changed: the error reply stays, the log has one turn_end for turn 2, counters exact
    assert api.detail(conversation_id).body == before
    assert full_log(conversation_id) == log_before
    assert [line["type"] for line in log_before if line["turn"] == 2] == CLOSED


def _ask_for_a_tool(standin: OpenAIStandin, content: str, conversation_id: str | None = None) -> str:
    standin.set_mode("tool_call")
    answer = api.post(content, conversation_id)
    assert answer.status == 201, answer.body
    standin.set_mode("ok")
    return str(answer.body["conversation_id"])


def _tool_result(call_id: str = CALL_ID) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "18°C, sunny"}


def test_issue5_1_a_crash_while_answering_tool_results_ends_the_turn_and_clears_its_state(
    standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AGT-1 / REL-8 with tool messages: the post of tool results dies while the model answers them.
    The repair ends the turn after its observation (step 1 error, stepCount 2) and the conversation no
    longer holds the turn's state; the next question opens turn 2."""
    # Given a model that asked for a tool, and the post of its result dying during the model call
    conversation_id = _ask_for_a_tool(standin_llm, "Weather in Paris?")
    _crash_during_the_model_call(conversation_id, None, messages=[_tool_result()])
    held = store.get_conversation("alice", conversation_id)
    assert held is not None
    assert held.open_turn is not None
    assert held.open_turn["pending"] == []
    # When, once the slot is abandoned, the user asks something else
    _abandon_after(monkeypatch, 0)
    answer = api.post("and tomorrow?", conversation_id)
    # Then it is answered as turn 2, and turn 1 ended as an error after its observation
    assert answer.status == 201, answer.body
    lines = full_log(conversation_id)
    assert [(line["type"], line["step"]) for line in lines if line["turn"] == 1] == [
        ("turn_start", None),
        ("assistant", 0),
        ("action", 0),
        ("observation", 0),
        ("assistant", 1),
        ("turn_end", None),
    ]
    end = lines[6]
    assert (end["meta"]["status"], end["meta"]["stepCount"], end["meta"]["closedBy"]) == (
        "error",
        2,
        "repair",
    )
    # And the turn's tokens are those of its one model step that was stored (the tool call)
    asked = lines[2]["meta"]["tokens"]
    assert asked["total"] > 0
    assert {k: end["meta"]["tokens"][k] for k in ("prompt", "completion", "total", "local")} == {
        k: asked[k] for k in ("prompt", "completion", "total", "local")
    }
    assert _types_by_turn(lines)[2] == COMPLETE
    # And the conversation no longer holds turn 1's state
    conversation = store.get_conversation("alice", conversation_id)
    assert conversation is not None
    assert conversation.open_turn is None
    assert api.detail(conversation_id).body["pending_tool_calls"] == []
    _assert_counts_exact(conversation_id)


def test_issue7_3_a_repair_from_a_stale_read_keeps_a_newer_turns_pending_tool_calls(
    standin_llm: OpenAIStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REL-8: a repair whose read predates a newer turn's tool calls closes the old turn but never
    removes the newer turn's state: its pending calls stay, and their results continue that turn."""
    # Given turn 1's post of tool results crashed, and a read of the conversation taken then
    conversation_id = _ask_for_a_tool(standin_llm, "Weather in Paris?")
    _crash_during_the_model_call(conversation_id, None, messages=[_tool_result()])
    stale = store.read_recent("alice", conversation_id, 10)
    assert stale.conversation is not None
    # And turn 2 opened since, its model now waiting for a tool result
    _ask_for_a_tool(standin_llm, "And in Rome?", conversation_id)
    assert api.detail(conversation_id).body["pending_tool_calls"] == [{"id": CALL_ID, "name": "get_weather"}]
    # When the repair runs from the stale read
    _abandon_after(monkeypatch, 0)
    assert recording.repair_abandoned(stale.conversation, stale.messages, get_settings()) == 1
    # Then turn 1 is ended, and turn 2 still waits for its result
    turns = _types_by_turn(full_log(conversation_id))
    assert turns[1][-2:] == ["assistant", "turn_end"]
    assert turns[2] == ["turn_start", "assistant", "action"]
    assert api.detail(conversation_id).body["pending_tool_calls"] == [{"id": CALL_ID, "name": "get_weather"}]
    # And posting that result finishes turn 2
    answer = api.post(None, conversation_id, messages=[_tool_result()])
    assert answer.status == 201, answer.body
    assert _types_by_turn(full_log(conversation_id))[2][-2:] == ["final", "turn_end"]
    _assert_counts_exact(conversation_id)
