"""Streamed answers (API-14): Server-Sent Events read chunk by chunk and folded back into the body a
non-streamed answer has, so one parser reads both."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from chat_core.llm.completion import ChunkSink
from chat_core.llm.parsing import describe, error_detail


class StreamStopped(Exception):
    """A stream stopped before the model finished; `received` is what arrived, as a whole answer."""

    def __init__(self, reason: str, received: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.received = received


class StreamAccumulator:
    """The chunks of a streamed Chat Completions answer, folded back into the body a non-streamed
    answer would have had (so one parser reads both): content, refusal and tool-call deltas joined,
    the finish reason, usage (the last chunk's, with `stream_options.include_usage`), id and model."""

    def __init__(self) -> None:
        self.chunks = 0
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.head: dict[str, Any] = {}
        self.usage: Any = None

    def add(self, chunk: Mapping[str, Any]) -> None:
        self.chunks += 1
        for key in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(key) is not None:
                self.head[key] = chunk[key]
        if chunk.get("usage") is not None:
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.content.append(delta["content"])
            if isinstance(delta.get("refusal"), str):
                self.refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    int(call.get("index", len(self.calls))),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    slot["function"]["name"] += function["name"]
                if function.get("arguments"):
                    slot["function"]["arguments"] += function["arguments"]

    def body(self) -> dict[str, Any]:
        """The answer as a non-streamed body."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.refusal:
            message["refusal"] = "".join(self.refusal)
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        body: dict[str, Any] = {
            **self.head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return body


def read_events(
    lines: Iterable[str],
    folded: StreamAccumulator,
    on_chunk: ChunkSink,
    limit: int,
    deadline: float,
    arrived: Callable[[], Any],
) -> None:
    """Read `data:` events until `[DONE]`: each chunk folded and handed to `on_chunk`. Raises
    StreamStopped (with `arrived()`) on a stream over `limit` bytes, past `deadline`, a chunk that is
    not JSON or is an error, or a caller that stopped listening."""
    read = 0
    for line in lines:
        read += len(line) + 1
        if read > limit:
            raise StreamStopped("the stream grew over LLM_MAX_RESPONSE_BYTES", arrived())
        if time.monotonic() > deadline:
            raise StreamStopped("the time for the model call ran out mid-stream", arrived())
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise StreamStopped(
                f"the stream sent a chunk that is not JSON ({describe(exc)})", arrived()
            ) from exc
        if not isinstance(chunk, dict) or chunk.get("error") is not None:
            raise StreamStopped(f"the stream sent an error: {error_detail(chunk)}", arrived())
        folded.add(chunk)
        try:
            on_chunk(chunk)
        except Exception as exc:  # the caller stopped listening: keep what arrived
            raise StreamStopped(f"the client went away ({describe(exc)})", arrived()) from exc
