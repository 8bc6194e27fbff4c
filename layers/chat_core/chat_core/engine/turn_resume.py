"""Seed-002 turn log, repaired: the open Turn of a post that died, rebuilt from its stored events alone.

A later post ends such a turn (`TurnRecorder.interrupt`) from the recorder this module rebuilds: the next
free event index, the step reached, when the turn started and the tokens its model steps used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from chat_core.engine.turnlog import LogEvent, Tokens, TurnRecorder, TurnState, now_ms


def _ts_ms(ts: str) -> int | None:
    try:
        stamp = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(stamp.timestamp() * 1000)


def resume_from_log(events: Sequence[LogEvent]) -> TurnRecorder | None:
    """A recorder that continues the turn whose stored events are `events` (all of one turn's, each with
    its `index`), rebuilt from the log alone; None when there are none or the turn already ended.

    What a repair needs when the post that ran the turn died: the next free index, the step reached,
    when the turn started and the tokens its model steps used (client steps carry no model tokens).
    """
    if not events or any(e.type == "turn_end" for e in events):
        return None
    ordered = sorted(events, key=lambda e: e.index)
    first = ordered[0]
    tokens = Tokens()
    model_calls = 0
    for event in ordered:
        if event.type != "assistant" or event.meta.get("source") == "client":
            continue
        model_calls += 1
        used = event.meta.get("tokens")
        if isinstance(used, Mapping):
            counted = used.get("local")
            local: Mapping[str, Any] = counted if isinstance(counted, Mapping) else {}
            tokens.add(
                Tokens(
                    prompt=int(used.get("prompt") or 0),
                    completion=int(used.get("completion") or 0),
                    total=int(used.get("total") or 0),
                    local_prompt=int(local.get("prompt") or 0),
                    local_completion=int(local.get("completion") or 0),
                )
            )
    started = next((e.ts for e in ordered if e.type == "turn_start"), first.ts)
    state = TurnState(
        turn=int(first.turn or 0),
        started_ms=_ts_ms(started) or now_ms(),
        next_index=ordered[-1].index + 1,
        step=max((e.step for e in ordered if e.step is not None), default=-1),
        model_calls=model_calls,
        tokens=tokens,
    )
    return TurnRecorder.resume(state)
