"""COST-5 / EVT-1: the compact turn log a message item carries decodes back to exactly the events."""

from __future__ import annotations

import json
from dataclasses import replace

from chat_core.engine import turnlog_codec
from chat_core.engine.turnlog import LogEvent, Tokens, TurnRecorder

REPLY = turnlog_codec.Carrier(
    message_id="01M8CH3986000000FRNJH7EFV4",
    created_at="2026-11-26T18:15:16.486355Z",
    role="assistant",
    content="Stand-in reply.",
    tokens=5,
    model="gpt-4o-mini",
    finish_reason="stop",
    latency_ms=12.5,
    usage=(1000, 110, 1110),
    local_usage=(936, 90, 1026),
    usage_reported=True,
)


def _lines(events: list[LogEvent]) -> list[str]:
    return [json.dumps([e.index, e.to_line("c")]) for e in events]


def _reply_events(tool_calls: list[dict[str, object]] | None = None) -> list[LogEvent]:
    recorder = TurnRecorder.new(7)
    recorder.turn_start("hi", tokens=3, message_id="01M8CH3986000000FRNJH7EFV3")
    recorder.take_events()
    recorder.model_answer(
        content=REPLY.content or "",
        tool_calls=tool_calls,
        message_id=REPLY.message_id,
        seq=2,
        model="gpt-4o-mini",
        tokens=Tokens(1000, 110, 1110, 936, 90),
        usage_reported=True,
        finish_reason="stop",
        latency_ms=12.5,
    )
    if not tool_calls:
        recorder.end("ok", conversation_tokens=Tokens(4000, 440, 4440, 2252, 360))
    return recorder.take_events()


def test_cost5_a_reply_log_is_small_and_decodes_back_exactly() -> None:
    """COST-5: a one-step turn's assistant, final and turn_end cost about 100 bytes on the reply."""
    # Given the events of a one-step turn
    events = _reply_events()
    # When they are encoded on the reply and decoded again
    entries = turnlog_codec.encode(events, REPLY)
    # Then they come back exactly (ts, key order and all) and take little room
    assert _lines(turnlog_codec.decode(entries, REPLY)) == _lines(events)
    assert len(json.dumps(entries, separators=(",", ":"))) < 160


def test_evt1_tool_calls_and_odd_events_decode_back_exactly() -> None:
    """EVT-1: actions from the message's tool calls; an event nothing implies is kept whole."""
    # Given a reply asking for two tools, and events the message implies nothing about
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]
    carrier = replace(REPLY, tool_calls=calls, content="", finish_reason="tool_calls")
    events = _reply_events(calls)
    odd = LogEvent(type="turn_end", ts="not a time", turn=7, meta={"tokens": [1, 2, 3, 4, 5]}, index=9)
    custom = LogEvent(type="final", ts="2026-11-26T18:15:17.000000Z", turn=8, step=4, content=None, index=0)
    # When they are encoded and decoded
    everything = [*events, odd, custom]
    entries = turnlog_codec.encode(everything, carrier)
    # Then every one comes back exactly
    assert _lines(turnlog_codec.decode(entries, carrier)) == _lines(everything)
    assert [e.type for e in events] == ["assistant", "action", "action"]


def test_evt1_a_message_whose_fields_imply_nothing_usable_keeps_its_events_whole() -> None:
    """EVT-1: tool calls of an unexpected shape on the message: the entries are stored whole."""
    # Given a carrier whose tool calls are not the shape actions are derived from
    carrier = replace(REPLY, tool_calls=[{"id": "call_1", "function": "not a mapping"}])
    events = _reply_events()
    action = LogEvent(type="action", ts=events[0].ts, turn=7, step=0, meta={"tool": "x"}, index=2)
    # When encoded and decoded
    entries = turnlog_codec.encode([events[0], action], carrier)
    # Then they come back exactly
    assert _lines(turnlog_codec.decode(entries, carrier)) == _lines([events[0], action])
