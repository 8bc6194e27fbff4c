"""Time to first token (API-14): a streamed reply through the service vs asking the model directly.

The model is the stand-in OpenAI-compatible server on loopback (tests/support/openai_standin.py),
streaming with no delay of its own, so every millisecond above "direct" is ours or the store's:

- direct: an HTTP client streams from the stand-in; time until the first chunk with text.
- in process: `chat_core.http.openai.chat_completion(..., emit=...)` on an existing conversation
  (moto in process, the real HTTP provider client): time until the first chunk reaches `emit`. The
  DynamoDB calls made before it (wall time inside moto) are the store's share; the rest, minus direct,
  is our own code (validation, the turn's reads and first write, the window, the request to the model).
- local server: the same request as an SDK would send it to `make run` (another process, its embedded
  DynamoDB), time until the first chunk with text.

moto is not DynamoDB: its share here says how much of the wait is store calls, not what DynamoDB takes
(single-digit milliseconds per call in a region).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench import Section, progress, verdict
from bench.dynamodb_meter import moto_env, moto_fixes

TURNS = 25
TABLE = "chat-history-ttft-bench"
OWNER = "bench-user"
QUESTION = "Tell me about the lighthouse keeper and the storm that night."
GOAL_MS = 20.0


def _first_text(lines: Any) -> float | None:
    """Read an SSE stream until the first chunk that carries text; the time it arrived."""
    import json

    for line in lines:
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        for choice in chunk.get("choices") or []:
            if (choice.get("delta") or {}).get("content"):
                return time.perf_counter()
    return None


def _direct(base_url: str) -> list[float]:
    samples = []
    body = {"model": "standin-model", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    with httpx.Client(timeout=30) as client:
        for _ in range(TURNS + 3):
            started = time.perf_counter()
            with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
                lines = response.iter_lines()
                first = _first_text(lines)
                for _ in lines:  # the rest of the answer
                    pass
            assert first is not None
            samples.append(first - started)
    return samples[3:]  # the first requests open connections and warm caches


def _in_process(base_url: str, *, responses: bool = False) -> tuple[list[float], list[float]]:
    """(time to first token, store time before it) per turn, our code in this process; through
    `/v1/chat/completions`, or through `/v1/responses` (RSP-5) continuing by `previous_response_id`."""
    import contextlib
    import io
    import warnings

    from chat_core.http.openai import ChatCompletionIn, chat_completion
    from chat_core.http.responses_api import ResponseCreateIn
    from chat_core.http.responses_turn import create_response
    from chat_core.observability import logger, metrics
    from chat_core.runtime import Runtime, use
    from moto import mock_aws
    from moto.core.botocore_stubber import BotocoreStubber

    from bench.bench_storage import _reset_pynamodb
    from tests.support.table import create_table

    store = [0.0]
    original = BotocoreStubber.__call__

    def timed(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, event_name, request, **kwargs)
        finally:
            store[0] += time.perf_counter() - started

    ttft: list[float] = []
    store_before: list[float] = []
    env = {
        "TABLE_NAME": TABLE,
        "LLM_BASE_URL": base_url,
        "LLM_MODEL": "standin-model",
        "LLM_MAX_RETRIES": "0",
    }
    with (
        moto_env(**env),
        mock_aws(),
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        warnings.filterwarnings("ignore")
        use(Runtime.from_env())  # a runtime of this run's settings
        logger.setLevel("ERROR")
        create_table(TABLE)
        _reset_pynamodb()
        BotocoreStubber.__call__ = timed  # type: ignore[method-assign]
        try:
            conversation = None
            completed: list[str] = []
            for turn in range(TURNS + 3):
                marks: list[tuple[float, float]] = []

                def emit(chunk: dict[str, Any], marks: list[tuple[float, float]] = marks) -> None:
                    if chunk.get("type") == "response.completed":
                        completed.append(chunk["response"]["id"])
                    texted = chunk.get("type") == "response.output_text.delta" or any(
                        (c.get("delta") or {}).get("content") for c in chunk.get("choices") or []
                    )
                    if not marks and texted:
                        marks.append((time.perf_counter(), store[0]))

                if responses:
                    created = ResponseCreateIn.model_validate(
                        {
                            "model": "standin-model",
                            "input": f"{QUESTION} ({turn})",
                            "stream": True,
                            **({"previous_response_id": conversation} if conversation else {}),
                        }
                    )
                    store[0] = 0.0
                    started = time.perf_counter()
                    create_response(OWNER, created, emit=emit)
                    conversation = completed[-1]
                else:
                    request = ChatCompletionIn.model_validate(
                        {
                            "model": "standin-model",
                            "messages": [{"role": "user", "content": f"{QUESTION} ({turn})"}],
                            "stream": True,
                            **({"conversation": conversation} if conversation else {}),
                        }
                    )
                    store[0] = 0.0
                    started = time.perf_counter()
                    answer = chat_completion(OWNER, request, emit=emit)
                    conversation = answer.headers["X-Conversation-Id"]
                if turn >= 3:
                    ttft.append(marks[0][0] - started)
                    store_before.append(marks[0][1])
            metrics.clear_metrics()
        finally:
            BotocoreStubber.__call__ = original  # type: ignore[method-assign]
    return ttft, store_before


def _local_server(base_url: str) -> list[float]:
    from tests.support.local_server import ServerProcess

    samples = []
    with tempfile.TemporaryDirectory() as data:
        server = ServerProcess(
            Path(data), env={"LLM_BASE_URL": base_url, "LLM_MODEL": "standin-model", "LLM_MAX_RETRIES": "0"}
        )
        server.start()
        try:
            conversation = None
            with httpx.Client(base_url=server.url, headers={"X-User-Id": OWNER}, timeout=60) as client:
                for turn in range(TURNS + 3):
                    body: dict[str, Any] = {
                        "model": "standin-model",
                        "messages": [{"role": "user", "content": f"{QUESTION} ({turn})"}],
                        "stream": True,
                    }
                    if conversation:
                        body["conversation"] = conversation
                    started = time.perf_counter()
                    with client.stream("POST", "/v1/chat/completions", json=body) as response:
                        conversation = response.headers["x-conversation-id"]
                        lines = response.iter_lines()
                        first = _first_text(lines)
                        for _ in lines:  # the rest of the answer (the turn is stored when it ends)
                            pass
                    assert first is not None
                    samples.append(first - started)
        finally:
            server.stop()
    return samples[3:]


def _ms(values: list[float], q: float = 0.5) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run() -> list[Section]:
    from tests.support.openai_standin import OpenAIStandin

    with OpenAIStandin("ok") as standin, moto_fixes():
        progress("ttft: direct to the stand-in model")
        direct = _direct(standin.base_url)
        progress("ttft: through chat_core in process")
        ours, store = _in_process(standin.base_url)
        progress("ttft: through chat_core in process, /v1/responses")
        ours_r, store_r = _in_process(standin.base_url, responses=True)
        progress("ttft: through the local server")
        served = _local_server(standin.base_url)
    own = [t - s - statistics.median(direct) for t, s in zip(ours, store, strict=True)]
    own_r = [t - s - statistics.median(direct) for t, s in zip(ours_r, store_r, strict=True)]
    rows = [
        ["direct to the model (stand-in, loopback)", f"{_ms(direct):.1f}", f"{_ms(direct, 0.9):.1f}", "-"],
        ["through chat_core (in process, moto)", f"{_ms(ours):.1f}", f"{_ms(ours, 0.9):.1f}", "-"],
        ["  of which store calls before the first token", f"{_ms(store):.1f}", f"{_ms(store, 0.9):.1f}", "-"],
        [
            "  of which our own code",
            f"{_ms(own):.1f}",
            f"{_ms(own, 0.9):.1f}",
            f"< {GOAL_MS:.0f} ms: {verdict(_ms(own) < GOAL_MS)}",
        ],
        [
            "through chat_core, /v1/responses (in process, moto)",
            f"{_ms(ours_r):.1f}",
            f"{_ms(ours_r, 0.9):.1f}",
            "-",
        ],
        [
            "  of which store calls before the first token",
            f"{_ms(store_r):.1f}",
            f"{_ms(store_r, 0.9):.1f}",
            "-",
        ],
        [
            "  of which our own code",
            f"{_ms(own_r):.1f}",
            f"{_ms(own_r, 0.9):.1f}",
            f"< {GOAL_MS:.0f} ms: {verdict(_ms(own_r) < GOAL_MS)}",
        ],
        [
            "through the local server (`make run`, HTTP, embedded store)",
            f"{_ms(served):.1f}",
            f"{_ms(served, 0.9):.1f}",
            "-",
        ],
    ]
    return [
        {
            "title": f"Time to first token, streamed reply ({TURNS} turns in one conversation)",
            "columns": ["path", "p50 ms", "p90 ms", "goal"],
            "rows": rows,
            "notes": (
                "Each turn sends only its new message (the OpenAI SDK used statefully; /v1/responses chains "
                "by "
                "previous_response_id, its events named by the slot the post reserved). Our own code = time "
                "to first token in process - the store calls made before it (wall time inside moto) - the "
                "direct median. The local server adds a second HTTP hop and runs the store in its own "
                "process. moto is not DynamoDB: read the store's share as calls, not as DynamoDB latency."
            ),
            "summary": [
                [
                    "time to first token, our code (p50)",
                    f"{_ms(own):.1f} ms",
                    f"< {GOAL_MS:.0f} ms",
                    verdict(_ms(own) < GOAL_MS),
                ],
                [
                    "time to first token through /v1/responses, our code (p50)",
                    f"{_ms(own_r):.1f} ms",
                    f"< {GOAL_MS:.0f} ms",
                    verdict(_ms(own_r) < GOAL_MS),
                ],
            ],
        }
    ]
