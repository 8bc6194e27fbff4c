"""Turn-log events carried by a message item, in a compact form (`log`).

The events a transaction writes ride on the message that transaction writes (the user message carries
turn_start and the client's recorded steps, the reply carries assistant, actions, final and turn_end)
instead of one item each. An entry keeps only what the carrying message does not imply: its type, and
any field, meta value or key order that differs from what `_implied` derives from the message and the
entries before it. Encoding checks that each entry decodes back to exactly the event (the same JSON line,
key order included); an entry that would not is stored whole, so correctness never rests on a guess.

`ts` is kept exact: as microseconds after the previous entry's ts (the first: after the message's
`created_at`), or as the string itself when either stamp is not the fixed-width ISO form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from chat_core.engine.turnlog import EventType, LogEvent

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_TYPES: dict[str, str] = {
    "session_start": "S",
    "turn_start": "s",
    "assistant": "a",
    "action": "c",
    "observation": "o",
    "final": "f",
    "turn_end": "e",
    "session_end": "E",
    "append": "p",
    "delete": "d",
    "switch": "w",
}
_NAMES = {code: name for name, code in _TYPES.items()}
#: Short names of the meta keys a post writes most (any other key is kept as it is).
_KEYS: dict[str, str] = {
    "tokens": "T",
    "conversationTokens": "C",
    "durationMs": "D",
    "stepCount": "N",
    "status": "X",
    "messageId": "I",
    "model": "M",
    "finishReason": "F",
    "latencyMs": "L",
    "toolCalls": "K",
    "source": "R",
    "error": "Y",
    "errorMessage": "Z",
    "closedBy": "B",
}
_LONG = {short: name for name, short in _KEYS.items()}
#: The order a type's meta keys are written in (turnlog.TurnRecorder); a decoded meta follows it, and an
#: entry whose event used another order keeps that order (`k`).
_ORDER: dict[str, tuple[str, ...]] = {
    "turn_start": ("tokens", "messageId"),
    "assistant": (
        "status",
        "tokens",
        "model",
        "messageId",
        "finishReason",
        "latencyMs",
        "toolCalls",
        "error",
    ),
    "final": ("tokens", "messageId"),
    "turn_end": (
        "status",
        "stepCount",
        "durationMs",
        "tokens",
        "errorMessage",
        "conversationTokens",
        "closedBy",
    ),
    "action": ("tool", "input", "toolCallId", "source"),
    "observation": ("tool", "toolCallId", "messageId", "source"),
}
_TOKEN_KEYS = ("tokens", "conversationTokens")


@dataclass(frozen=True)
class Carrier:
    """What an event may take from the message that carries it."""

    message_id: str
    created_at: str
    role: str
    content: str | None = None
    tokens: int = 0
    model: str | None = None
    finish_reason: str | None = None
    latency_ms: float | None = None
    tool_calls: Any = None
    tool_call_id: str | None = None
    name: str | None = None
    #: (prompt, completion, total) as reported, and the local (prompt, completion, total).
    usage: tuple[int, int, int] | None = None
    local_usage: tuple[int, int, int] | None = None
    usage_reported: bool | None = None


def _parse_ts(ts: Any) -> datetime | None:
    if not isinstance(ts, str) or len(ts) != 27:
        return None
    try:
        return datetime.strptime(ts, _TS_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def _token_meta(reported: Sequence[int], local: Sequence[int]) -> dict[str, Any]:
    return {
        "prompt": reported[0],
        "completion": reported[1],
        "total": reported[2],
        "local": {"prompt": local[0], "completion": local[1], "total": local[0] + local[1]},
    }


def _pack_tokens(value: Any) -> Any:
    """A standard tokens dict as [prompt, completion, total, local prompt, local completion]."""
    if not isinstance(value, Mapping) or list(value) != ["prompt", "completion", "total", "local"]:
        return value
    local = value["local"]
    if not isinstance(local, Mapping) or list(local) != ["prompt", "completion", "total"]:
        return value
    numbers = [value["prompt"], value["completion"], value["total"], local["prompt"], local["completion"]]
    if not all(type(n) is int for n in numbers) or local["total"] != numbers[3] + numbers[4]:
        return value
    return numbers


def _unpack_tokens(value: Any) -> Any:
    if isinstance(value, list) and len(value) == 5 and all(type(n) is int for n in value):
        return _token_meta(value[:3], value[3:])
    return value


def _calls(tool_calls: Any) -> list[Mapping[str, Any]]:
    return [call for call in tool_calls or [] if isinstance(call, Mapping)]


def _implied(type_: str, carrier: Carrier, before: Sequence[LogEvent]) -> tuple[Any, Any, dict[str, Any]]:
    """(content, role, meta) an event of `type_` has by default on `carrier`, after `before`."""
    last_assistant = next((e for e in reversed(before) if e.type == "assistant"), None)
    if type_ == "turn_start":
        return (
            carrier.content,
            "user",
            {"tokens": {"prompt": carrier.tokens}, "messageId": carrier.message_id},
        )
    if type_ == "assistant":
        calls = _calls(carrier.tool_calls)
        meta: dict[str, Any] = {
            "tokens": {
                **_token_meta(carrier.usage or (0, 0, 0), carrier.local_usage or (0, 0, 0)),
                "source": "usage" if carrier.usage_reported else "local",
            },
            "model": carrier.model,
            "messageId": carrier.message_id,
            "finishReason": carrier.finish_reason,
            "latencyMs": carrier.latency_ms,
        }
        if calls:
            meta["toolCalls"] = [
                {"id": c.get("id"), "name": (c.get("function") or {}).get("name")} for c in calls
            ]
        content = carrier.content if carrier.content or not calls else None
        return content, "assistant", meta
    if type_ == "final":
        tokens = dict(last_assistant.meta.get("tokens") or {}) if last_assistant is not None else {}
        tokens.pop("source", None)
        return carrier.content, "assistant", {"tokens": tokens, "messageId": carrier.message_id}
    if type_ == "turn_end":
        final = next((e for e in reversed(before) if e.type == "final"), None)
        steps = [e.step for e in before if e.step is not None]
        meta = {"status": "ok", "stepCount": (max(steps) + 1) if steps else 0}
        if final is not None:
            meta["tokens"] = final.meta.get("tokens")
        return None, None, meta
    if type_ == "action":
        calls = _calls(carrier.tool_calls)
        k = sum(1 for e in before if e.type == "action")
        call = calls[k] if k < len(calls) else {}
        function = call.get("function") or {}
        source = (
            "client"
            if last_assistant is not None and last_assistant.meta.get("source") == "client"
            else "model"
        )
        return (
            None,
            None,
            {
                "tool": function.get("name"),
                "input": function.get("arguments"),
                "toolCallId": call.get("id"),
                "source": source,
            },
        )
    if type_ == "observation":
        meta = {
            "tool": carrier.name,
            "toolCallId": carrier.tool_call_id,
            "messageId": carrier.message_id,
            "source": "client",
        }
        return carrier.content, "tool", meta
    return None, None, {}


def _implied_step(type_: str, before: Sequence[LogEvent]) -> int | None:
    steps = [e.step for e in before if e.step is not None]
    if type_ in ("turn_start", "turn_end"):
        return None
    if type_ == "assistant":
        return (steps[-1] + 1) if steps else 0
    return steps[-1] if steps else 0


def _line(event: LogEvent) -> str:
    return json.dumps([event.index, event.to_line("")], separators=(",", ":"))


def _entry(event: LogEvent, carrier: Carrier, before: Sequence[LogEvent]) -> dict[str, Any]:
    previous = before[-1] if before else None
    entry: dict[str, Any] = {"t": _TYPES.get(event.type, event.type)}
    if event.turn != (previous.turn if previous is not None else None):
        entry["n"] = event.turn
    if event.index != (previous.index + 1 if previous is not None else 0):
        entry["i"] = event.index
    if event.step != _implied_step(event.type, before):
        entry["s"] = event.step
    base_ts = _parse_ts(previous.ts if previous is not None else carrier.created_at)
    stamp = _parse_ts(event.ts)
    if base_ts is not None and stamp is not None:
        delta = stamp - base_ts
        entry["d"] = delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    else:
        entry["ts"] = event.ts
    content, role, implied = _implied(event.type, carrier, before)
    if event.content != content:
        entry["c"] = event.content
    if event.role != role:
        entry["r"] = event.role
    explicit = {
        _KEYS.get(key, key): (_pack_tokens(value) if key in _TOKEN_KEYS else value)
        for key, value in event.meta.items()
        if key not in implied or implied[key] != value or type(implied[key]) is not type(value)
    }
    if explicit:
        entry["m"] = explicit
    dropped = [_KEYS.get(key, key) for key in implied if key not in event.meta]
    if dropped:
        entry["x"] = dropped
    if list(_decode_one(entry, carrier, before).meta) != list(event.meta):
        entry["k"] = [_KEYS.get(key, key) for key in event.meta]
    return entry


def _decode_one(entry: Mapping[str, Any], carrier: Carrier, before: Sequence[LogEvent]) -> LogEvent:
    if "f" in entry:
        index, line = entry["f"]
        return LogEvent.from_line(line, int(index))
    previous = before[-1] if before else None
    type_ = _NAMES.get(str(entry["t"]), str(entry["t"]))
    content, role, meta = _implied(type_, carrier, before)
    for short in entry.get("x") or ():
        meta.pop(_LONG.get(short, short), None)
    for short, value in (entry.get("m") or {}).items():
        key = _LONG.get(short, short)
        meta[key] = _unpack_tokens(value) if key in _TOKEN_KEYS else value
    order = [_LONG.get(short, short) for short in entry["k"]] if "k" in entry else list(_ORDER.get(type_, ()))
    rank = {key: position for position, key in enumerate(order)}
    meta = dict(sorted(meta.items(), key=lambda item: rank.get(item[0], len(rank))))
    if "ts" in entry:
        ts = str(entry["ts"])
    else:
        base_ts = _parse_ts(previous.ts if previous is not None else carrier.created_at)
        stamp = (base_ts or datetime.now(UTC)) + timedelta(microseconds=int(entry.get("d") or 0))
        ts = stamp.strftime(_TS_FORMAT)
    return LogEvent(
        type=type_,  # type: ignore[arg-type]
        ts=ts,
        turn=entry.get("n", previous.turn if previous is not None else None),
        step=entry["s"] if "s" in entry else _implied_step(type_, before),
        content=entry.get("c", content),
        role=entry.get("r", role),
        meta=meta,
        index=int(entry["i"]) if "i" in entry else (previous.index + 1 if previous is not None else 0),
    )


def encode(events: Sequence[LogEvent], carrier: Carrier) -> list[dict[str, Any]]:
    """The compact entries of `events` (in (turn, index) order) on `carrier`; each decodes back exactly."""
    entries: list[dict[str, Any]] = []
    done: list[LogEvent] = []
    for event in sorted(events, key=lambda e: (e.turn or 0, e.index)):
        try:
            entry = _entry(event, carrier, done)
            exact = _line(_decode_one(entry, carrier, done)) == _line(event)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError):
            exact = False  # a message whose fields imply nothing usable: the entry is kept whole
        if not exact:
            entry = {"f": [event.index, event.to_line("")]}
        entries.append(entry)
        done.append(event)
    return entries


def decode(entries: Sequence[Mapping[str, Any]], carrier: Carrier) -> list[LogEvent]:
    """The events a message carries (`session_id` is the caller's to add: `LogEvent.to_line`)."""
    done: list[LogEvent] = []
    for entry in entries:
        done.append(_decode_one(entry, carrier, done))
    return done


def event_types() -> tuple[EventType, ...]:
    """The event types a message may carry (session_start/_end and history changes stay items)."""
    return ("turn_start", "assistant", "action", "observation", "final", "turn_end")
