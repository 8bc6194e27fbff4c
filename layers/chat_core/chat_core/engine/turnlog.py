"""Seed-002 turn log: every post is a Turn of Steps, recorded as events beside the conversation's messages.

A conversation is a Session (`session_id` = conversation id): `session_start` when it is created,
`session_end` when it is deleted. Each `POST /messages` with `content` opens Turn n (`turn_start`); each
assistant message is a Step (`assistant`, then one `action` per tool call it asks for, one `observation`
per tool result); a model answer without tool calls is the Turn's `final`, then `turn_end` with status
ok | error | max_steps, stepCount, durationMs, errorMessage? and tokens. A Turn whose model answer asked
for tool calls stays open until the client posts their results; the model then answers again (next Step).
A turn whose reply was never stored (the reply write failed, or the post died) is still ended: an error
step and `turn_end` status error, written with the error reply that fills its slot (`interrupted`; a
later post rebuilds the turn from its stored events with `turn_resume.resume_from_log`).

This module is pure: it builds `LogEvent`s and the open Turn's state; the store writes them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

EventType = Literal[
    "session_start",
    "turn_start",
    "assistant",
    "action",
    "observation",
    "final",
    "turn_end",
    "session_end",
    # API-18: history changed without a model call.
    "append",
    "delete",
    "switch",
]
TurnStatus = Literal["ok", "error", "max_steps", "incomplete"]
#: Who ended a turn whose reply was never stored: its own post after the reply write failed, or a later one.
ClosedBy = Literal["fallback", "repair"]
_INTERRUPTION: dict[str, str] = {"fallback": "not_stored", "repair": "interrupted"}

#: Every exported line carries exactly these keys, in this order (null where they do not apply), so a
#: file loads into a table without schema guessing; the same shape as the CLI's history files.
FIELDS = ("ts", "session_id", "turn", "step", "type", "content", "role", "meta")
JSONL_CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
#: `meta.mode` of session_start: the session is the service's conversation (the CLI writes interactive|once).
SESSION_MODE = "api"


def now_iso() -> str:
    """ISO 8601 UTC with microseconds, fixed width so string order is time order."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class LogEvent:
    """One event of the log. `index` orders the events of one turn (it is the sort key, not exported)."""

    type: EventType
    ts: str
    turn: int | None = None
    step: int | None = None
    content: str | None = None
    role: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    index: int = 0

    @classmethod
    def from_line(cls, line: Mapping[str, Any], index: int = 0) -> LogEvent:
        """The event a seed-002 JSONL object holds, at `index` within its turn."""
        return cls(
            type=line["type"],
            ts=line["ts"],
            turn=line["turn"],
            step=line["step"],
            content=line["content"],
            role=line["role"],
            meta=dict(line["meta"] or {}),
            index=index,
        )

    def to_line(self, session_id: str) -> dict[str, Any]:
        """The seed-002 JSONL object, keys in FIELDS order."""
        return {
            "ts": self.ts,
            "session_id": session_id,
            "turn": self.turn,
            "step": self.step,
            "type": self.type,
            "content": self.content,
            "role": self.role,
            "meta": self.meta,
        }


def to_jsonl(lines: Iterable[Mapping[str, Any]]) -> str:
    """One compact JSON object per line, each line ending in a newline ("" for no lines)."""
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)


@dataclass
class Tokens:
    """Token usage summed over steps: as the provider reported it, and counted locally beside it (TOK-6)."""

    prompt: int = 0
    completion: int = 0
    total: int = 0
    local_prompt: int = 0
    local_completion: int = 0

    def add(self, other: Tokens) -> Tokens:
        self.prompt += other.prompt
        self.completion += other.completion
        self.total += other.total
        self.local_prompt += other.local_prompt
        self.local_completion += other.local_completion
        return self

    def plus(self, other: Tokens) -> Tokens:
        return Tokens(**self.to_state()).add(other)

    def to_meta(self) -> dict[str, Any]:
        """`meta.tokens`: the reported numbers (0 when the provider sent none) and the local count."""
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "total": self.total,
            "local": {
                "prompt": self.local_prompt,
                "completion": self.local_completion,
                "total": self.local_prompt + self.local_completion,
            },
        }

    def to_state(self) -> dict[str, int]:
        return {
            "prompt": self.prompt,
            "completion": self.completion,
            "total": self.total,
            "local_prompt": self.local_prompt,
            "local_completion": self.local_completion,
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any] | None) -> Tokens:
        data = data or {}
        return cls(**{name: int(data.get(name) or 0) for name in cls().to_state()})


@dataclass
class TurnState:
    """Where a turn stands. Kept on the conversation item while the turn waits for tool results.

    `step` is the current step (-1 before the first assistant message), `model_calls` what counts
    against MAX_TURN_STEPS, `pending` the tool calls still without a result ([{"id", "name"}]) and
    `call_seq` the sequence number of the message that asked for them.
    """

    turn: int
    started_ms: int
    next_index: int = 0
    step: int = -1
    model_calls: int = 0
    pending: list[dict[str, str]] = field(default_factory=list)
    call_seq: int | None = None
    tokens: Tokens = field(default_factory=Tokens)

    @property
    def pending_ids(self) -> list[str]:
        return [call["id"] for call in self.pending]

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "started_ms": self.started_ms,
            "next_index": self.next_index,
            "step": self.step,
            "model_calls": self.model_calls,
            "pending": [dict(call) for call in self.pending],
            "call_seq": self.call_seq,
            "tokens": self.tokens.to_state(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> TurnState | None:
        if not data or not isinstance(data, Mapping):
            return None
        return cls(
            turn=int(data["turn"]),
            started_ms=int(data.get("started_ms") or now_ms()),
            next_index=int(data.get("next_index") or 0),
            step=int(data.get("step", -1)),
            model_calls=int(data.get("model_calls") or 0),
            pending=[
                {"id": str(call["id"]), "name": str(call.get("name") or "")}
                for call in data.get("pending") or []
                if isinstance(call, Mapping) and "id" in call
            ],
            call_seq=int(data["call_seq"]) if data.get("call_seq") is not None else None,
            tokens=Tokens.from_state(data.get("tokens")),
        )


def _calls_meta(tool_calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": call.get("id"), "name": (call.get("function") or {}).get("name")}
        for call in tool_calls
        if isinstance(call, Mapping)
    ]


class TurnRecorder:
    """Builds the events of one post into a turn and keeps the turn's state up to date.

    A recorder starts from a fresh turn (`new`) or from the stored state of an open one (`resume`);
    `events` is what the post writes; `state` is what the conversation item keeps while tool results
    are pending (`closed` turns keep nothing).
    """

    def __init__(self, state: TurnState) -> None:
        self.state = state
        self.events: list[LogEvent] = []
        self.closed = False
        self.status: TurnStatus | None = None

    @classmethod
    def new(cls, turn: int) -> TurnRecorder:
        return cls(TurnState(turn=turn, started_ms=now_ms()))

    @classmethod
    def resume(cls, state: TurnState) -> TurnRecorder:
        return cls(state)

    @property
    def turn(self) -> int:
        return self.state.turn

    def take_events(self) -> list[LogEvent]:
        """The events built since the last call (what the next transaction writes)."""
        events, self.events = self.events, []
        return events

    def _emit(
        self,
        type_: EventType,
        *,
        step: int | None = None,
        content: str | None = None,
        role: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> LogEvent:
        event = LogEvent(
            type=type_,
            ts=now_iso(),
            turn=self.state.turn,
            step=step,
            content=content,
            role=role,
            meta=meta or {},
            index=self.state.next_index,
        )
        self.state.next_index += 1
        self.events.append(event)
        return event

    # -- steps --------------------------------------------------------------------------------------

    def turn_start(
        self, content: str, *, tokens: int, message_id: str, branch: Mapping[str, str] | None = None
    ) -> None:
        """`turn_start`: the user's input; `meta.tokens.prompt` is its count (stored at write, TOK-5).
        A turn that starts a branch (API-18) says so: `meta.edits` (the user message it replaces) or
        `meta.regenerates` (the answer it replaces; `messageId` is then the message answered again)."""
        meta: dict[str, Any] = {"tokens": {"prompt": tokens}, "messageId": message_id}
        meta.update(branch or {})
        self._emit("turn_start", content=content, role="user", meta=meta)

    def history_step(self, type_: EventType, *, meta: Mapping[str, Any], content: str | None = None) -> None:
        """API-18: a change of history without a model call (`append`, `delete`, `switch`): one step of a
        turn of its own."""
        self.state.step += 1
        self._emit(type_, step=self.state.step, content=content, meta=dict(meta))

    def client_message(self, message: Mapping[str, Any], *, message_id: str, tokens: int) -> None:
        """A message the client recorded (an agent's own assistant step or a tool result)."""
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            name = next((c["name"] for c in self.state.pending if c["id"] == call_id), None)
            self.state.pending = [c for c in self.state.pending if c["id"] != call_id]
            self._emit(
                "observation",
                step=max(self.state.step, 0),
                content=message.get("content"),
                role="tool",
                meta={"tool": name, "toolCallId": call_id, "messageId": message_id, "source": "client"},
            )
            return
        self.state.step += 1
        tool_calls = list(message.get("tool_calls") or [])
        meta: dict[str, Any] = {
            "messageId": message_id,
            "source": "client",
            "tokens": {"local": {"completion": tokens}},
        }
        if tool_calls:
            meta["toolCalls"] = _calls_meta(tool_calls)
        self._emit(
            "assistant", step=self.state.step, content=message.get("content"), role="assistant", meta=meta
        )
        self._actions(tool_calls, "client")

    def _actions(self, tool_calls: Sequence[Mapping[str, Any]], source: str) -> None:
        pending: list[dict[str, str]] = []
        for call in tool_calls:
            function = call.get("function") or {}
            name = str(function.get("name") or "")
            pending.append({"id": str(call.get("id")), "name": name})
            self._emit(
                "action",
                step=self.state.step,
                meta={
                    "tool": name,
                    "input": function.get("arguments"),
                    "toolCallId": call.get("id"),
                    "source": source,
                },
            )
        self.state.pending = pending

    def model_answer(
        self,
        *,
        content: str,
        tool_calls: Sequence[Mapping[str, Any]] | None,
        message_id: str,
        seq: int,
        model: str,
        tokens: Tokens,
        usage_reported: bool,
        finish_reason: str | None,
        latency_ms: float,
    ) -> None:
        """The model answered: an `assistant` step, then its actions (the turn stays open) or `final`."""
        self.state.step += 1
        self.state.model_calls += 1
        self.state.tokens.add(tokens)
        meta: dict[str, Any] = {
            "tokens": {**tokens.to_meta(), "source": "usage" if usage_reported else "local"},
            "model": model,
            "messageId": message_id,
            "finishReason": finish_reason,
            "latencyMs": round(latency_ms, 1),
        }
        if tool_calls:
            meta["toolCalls"] = _calls_meta(tool_calls)
        # An answer made only of tool calls has no text: null, as in the message itself.
        text = content if content or not tool_calls else None
        self._emit("assistant", step=self.state.step, content=text, role="assistant", meta=meta)
        if tool_calls:
            self._actions(tool_calls, "model")
            self.state.call_seq = seq
            return
        self._emit(
            "final",
            step=self.state.step,
            content=content,
            role="assistant",
            meta={"tokens": self.state.tokens.to_meta(), "messageId": message_id},
        )

    def model_failure(
        self,
        *,
        message_id: str,
        model: str,
        error_message: str,
        kind: str,
        status_code: int | None,
        tokens: Tokens,
    ) -> None:
        """The model call failed (API-2): an `assistant` step with status error and nothing from the model."""
        self.state.step += 1
        self.state.model_calls += 1
        self.state.tokens.add(tokens)
        self._emit(
            "assistant",
            step=self.state.step,
            content="",
            role="assistant",
            meta={
                "status": "error",
                "tokens": {**tokens.to_meta(), "source": "local"},
                "model": model,
                "messageId": message_id,
                "error": {"message": error_message, "kind": kind, "statusCode": status_code},
            },
        )

    def end(
        self,
        status: TurnStatus,
        *,
        error_message: str | None = None,
        conversation_tokens: Tokens | None = None,
        closed_by: ClosedBy | None = None,
    ) -> None:
        """`turn_end`: status, stepCount, durationMs, errorMessage?, tokens of the turn and conversation;
        `closedBy` when the turn was not ended by its own post's reply (see `interrupted`)."""
        meta: dict[str, Any] = {
            "status": status,
            "stepCount": self.state.step + 1,
            "durationMs": max(0, now_ms() - self.state.started_ms),
            "tokens": self.state.tokens.to_meta(),
        }
        if error_message is not None:
            meta["errorMessage"] = error_message
        if conversation_tokens is not None:
            meta["conversationTokens"] = conversation_tokens.to_meta()
        if closed_by is not None:
            meta["closedBy"] = closed_by
        self._emit("turn_end", meta=meta)
        self.closed = True
        self.status = status
        self.state.pending = []

    @property
    def awaiting_results(self) -> bool:
        """True when the turn is open with tool calls that have no result yet."""
        return not self.closed and bool(self.state.pending)

    def interrupted(
        self,
        *,
        message_id: str,
        model: str,
        error_message: str,
        closed_by: ClosedBy,
        conversation_tokens: Tokens | None = None,
    ) -> None:
        """The turn's reply never got stored: the error reply put in its slot (`message_id`) is an
        `assistant` step with status error (kind not_stored | interrupted), then `turn_end` status error.

        `closed_by` is "fallback" when the post itself closed the turn after its reply write failed, and
        "repair" when a later post closed a turn whose post died; durationMs then runs to the repair.
        """
        self.state.step += 1
        self._emit(
            "assistant",
            step=self.state.step,
            content="",
            role="assistant",
            meta={
                "status": "error",
                "tokens": {**Tokens().to_meta(), "source": "local"},
                "model": model,
                "messageId": message_id,
                "error": {"message": error_message, "kind": _INTERRUPTION[closed_by], "statusCode": None},
            },
        )
        self.end(
            "error", error_message=error_message, conversation_tokens=conversation_tokens, closed_by=closed_by
        )


def session_start(*, model: str, encoding: str, config: Mapping[str, Any]) -> LogEvent:
    """`session_start` of a new conversation: mode, model, tokenizer and the conversation's settings."""
    return LogEvent(
        type="session_start",
        ts=now_iso(),
        meta={"mode": SESSION_MODE, "model": model, "tokenizer": encoding, "config": dict(config)},
    )


def session_end(*, reason: str, meta: Mapping[str, Any] | None = None) -> LogEvent:
    """`session_end`: why the session ended (a delete) and what happens to its data."""
    return LogEvent(type="session_end", ts=now_iso(), meta={"reason": reason, **dict(meta or {})})
