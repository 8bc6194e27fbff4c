"""WIN-3 properties (hypothesis): fits the budget and caps, keeps system and current, newest contiguous run,
never splits a tool group, accounts for every message; the context manager agrees with the engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chat_core.engine.context import MessageContextManager
from chat_core.engine.window import WindowPolicy, message_text, select_window
from chat_core.errors import InvalidInput
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SYSTEM = {"role": "system", "content": "system prompt"}
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _call(ids: list[str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


@st.composite
def histories(draw: st.DrawFn, *, broken: bool = True) -> list[dict[str, Any]]:
    kinds = ["user", "assistant", "group"] + (["orphan", "incomplete", "split"] if broken else [])
    out: list[dict[str, Any]] = []
    for seg, kind in enumerate(draw(st.lists(st.sampled_from(kinds), max_size=24))):
        if kind in ("user", "assistant"):
            out.append({"role": kind, "content": ""})
        elif kind == "orphan":
            out.append({"role": "tool", "tool_call_id": f"lost{seg}", "content": ""})
        else:
            ids = [f"c{seg}_{k}" for k in range(draw(st.integers(1, 3)))]
            out.append(_call(ids))
            answered = ids[:-1] if kind == "incomplete" else ids
            if kind == "split":  # a message wedged between the call and its results
                out.append({"role": "user", "content": ""})
            out.extend({"role": "tool", "tool_call_id": i, "content": ""} for i in answered)
    for index, message in enumerate(out):
        # Unique, traceable content of a drawn size; the call's own content may stay None.
        if message["content"] is not None:
            message["content"] = f"<{index}>" + "x" * draw(st.integers(0, 60))
        message["message_id"] = f"m{index}"
        if message["role"] != "tool" and draw(st.integers(0, 9)) == 0:
            message["pinned"] = True
        if draw(st.integers(0, 4)) == 0:
            message["tokens"] = draw(st.integers(0, 30))
    return out


policies = st.builds(
    WindowPolicy,
    max_messages=st.none() | st.integers(0, 15),
    max_chars=st.none() | st.integers(0, 600),
    max_tokens=st.none() | st.integers(0, 250),
    caps_count_current=st.booleans(),
    honor_pinned=st.booleans(),
    method=st.just("estimate"),
    chat_format=st.just(False),
)
currents = st.builds(lambda n: {"role": "user", "content": "now" + "q" * n}, st.integers(0, 80))


def _units(history: list[dict[str, Any]]) -> tuple[list[list[int]], set[int]]:
    """Reference grouping: valid units in order, and the indices that can never be sent."""
    units: list[list[int]] = []
    invalid: set[int] = set()
    i = 0
    while i < len(history):
        message = history[i]
        if message["role"] == "tool":
            invalid.add(i)
            i += 1
            continue
        if message.get("tool_calls"):
            wanted = {c["id"] for c in message["tool_calls"]}
            j = i + 1
            while j < len(history) and history[j]["role"] == "tool":
                j += 1
            results = [k for k in range(i + 1, j) if history[k]["tool_call_id"] in wanted]
            invalid.update(k for k in range(i + 1, j) if history[k]["tool_call_id"] not in wanted)
            if {history[k]["tool_call_id"] for k in results} == wanted:
                units.append([i, *results])
            else:
                invalid.update([i, *results])
            i = j
            continue
        units.append([i])
        i += 1
    return units, invalid


@PROPERTY_SETTINGS
@given(history=histories(), policy=policies, current=currents)
def test_win3_property_window_respects_every_limit_and_structure(
    history: list[dict[str, Any]], policy: WindowPolicy, current: dict[str, Any]
) -> None:
    # Given any history (valid and broken tool groups, pinned flags, stored counts) and any policy
    # When a window is selected
    result = select_window(history=history, policy=policy, system=SYSTEM, current=current)
    out = result.messages

    # Then system comes first and the current message last, always
    assert out[0] == SYSTEM
    assert out[-1] == current
    forced_only = len(out) == 2

    # And the tokens fit the budget unless only system and current are left
    index_of = {m["message_id"]: i for i, m in enumerate(history)}
    sources = [SYSTEM] + [
        next(h for h in history if h["message_id"] == hid)
        for hid in [
            next(
                h["message_id"]
                for h in history
                if h["role"] == m["role"]
                and h.get("content") == m.get("content")
                and h.get("tool_call_id") == m.get("tool_call_id")
                and h.get("tool_calls") == m.get("tool_calls")
            )
            for m in out[1:-1]
        ]
    ]
    count = policy.token_counter()
    total = sum(count(m) for m in sources) + count(current)
    assert total == result.stats.tokens_used
    if policy.token_budget is not None and not forced_only:
        assert total <= policy.token_budget

    # And the caps hold (the current message counted when the policy says so)
    body = sources[1:] + ([current] if policy.caps_count_current else [])
    if policy.max_messages is not None and not forced_only:
        assert len(body) <= policy.max_messages
    if policy.max_chars is not None and not forced_only:
        assert sum(len(message_text(m)) for m in body) <= policy.max_chars

    # And no tool group is split: each result follows its call, each call has all its results
    for position, message in enumerate(out):
        if message["role"] == "tool":
            back = position - 1
            while out[back]["role"] == "tool":
                back -= 1
            assert message["tool_call_id"] in {c["id"] for c in out[back].get("tool_calls", [])}
        if message.get("tool_calls"):
            following = set()
            ahead = position + 1
            while ahead < len(out) and out[ahead]["role"] == "tool":
                following.add(out[ahead]["tool_call_id"])
                ahead += 1
            assert following == {c["id"] for c in message["tool_calls"]}

    # And the kept history is the newest contiguous run of valid units, pinned units excepted
    kept = {index_of[m["message_id"]] for m in sources[1:]}
    units, invalid = _units(history)
    assert not kept & invalid
    free = [u for u in units if not (policy.honor_pinned and history[u[0]].get("pinned"))]
    flags = [all(i in kept for i in u) for u in free]
    assert all(all(i in kept for i in u) or not any(i in kept for i in u) for u in free)
    assert flags == sorted(flags)  # False... then True...: a suffix

    # And kept history is sent oldest first
    positions = [index_of[m["message_id"]] for m in sources[1:]]
    assert positions == sorted(positions)

    # And every history message is either sent or reported dropped, exactly once
    dropped = [d.ref for d in result.stats.dropped]
    assert len(dropped) == len(set(dropped))
    assert sorted([*dropped, *(f"m{i}" for i in kept)], key=lambda r: int(r[1:])) == [
        m["message_id"] for m in history
    ]


@PROPERTY_SETTINGS
@given(
    history=histories(broken=False),
    limit=st.integers(30, 300),
    max_messages=st.none() | st.integers(1, 12),
    strategy=st.sampled_from(["fifo", "sliding_window"]),
)
def test_seed001_property_manager_trims_like_the_engine(
    history: list[dict[str, Any]], limit: int, max_messages: int | None, strategy: Any
) -> None:
    # Given a context manager fed a valid conversation one message at a time
    ctx = MessageContextManager(
        config={"context_length": limit, "max_tokens": 1},
        method="estimate",
        chat_format=False,
        max_messages=max_messages,
        strategy=strategy,
        system_prompt="system prompt",
    )
    accepted: list[Mapping[str, Any]] = []
    skip_group = False
    for message in history:
        if skip_group and message["role"] == "tool":
            continue
        try:
            ctx.add(message)
        except InvalidInput:
            # Refused as too large for the context: its tool results cannot follow it either.
            skip_group = bool(message.get("tool_calls"))
            continue
        skip_group = False
        accepted.append(message)
        # Then after every add the context fits and the running total matches a recount
        state = ctx.state()
        assert state.tokens_used <= ctx.limit
        window = ctx.window()
        if not ctx._open_calls:
            assert window.stats.tokens_used == state.tokens_used

    # And the context is exactly what the engine selects from the whole accepted conversation
    if not ctx._open_calls:
        expected = select_window(
            history=accepted, policy=ctx.policy, system=SYSTEM | {"content": "system prompt"}
        )
        assert ctx.get_context() == expected.messages
