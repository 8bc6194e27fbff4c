"""Context-window selection: one engine (WIN-3) for WIN-1, the seed-003 window and the context manager."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from chat_core.engine import tokens as token_counting
from chat_core.engine.models import model_context
from chat_core.engine.tokens import estimate_message_tokens
from chat_core.engine.tokens.stored import reuse_stored

Method = Literal["estimate", "approx", "exact"]
MessageCounter = Callable[[Mapping[str, Any]], int]

#: The keys a chat-completions request accepts; bookkeeping keys ("tokens", "pinned", ...) never leave.
OPENAI_KEYS: tuple[str, ...] = ("role", "content", "name", "tool_calls", "tool_call_id")

# Why a message was left out of a window (WindowStats.dropped).
MAX_MESSAGES = "max_messages"
MAX_CHARS = "max_chars"
TOKEN_BUDGET = "token_budget"  # noqa: S105 - a drop reason, not a secret
ORPHAN_TOOL_RESULT = "orphan_tool_result"
INCOMPLETE_TOOL_CALL = "incomplete_tool_call"

_METHODS = ("estimate", "approx", "exact")


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message's content: a string, "" for None, the text parts of a multi-part content."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not content:
        return ""
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part)
            for part in content
            if not isinstance(part, Mapping) or isinstance(part.get("text", ""), str)
        )
    return str(content)


def _tool_call_ids(message: Mapping[str, Any]) -> set[str]:
    calls = message.get("tool_calls") or ()
    return {str(call.get("id")) for call in calls if isinstance(call, Mapping)}


def _is_tool_call(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls"))


@lru_cache(maxsize=64)
def _counter(method: Method, chat_format: bool, model: str | None, encoding: str | None) -> MessageCounter:
    """The per-message counter for a counting mode, built once per mode."""
    if chat_format:
        return token_counting.message_counter(method, model=model, encoding=encoding)
    if method == "estimate":
        return lambda message: estimate_message_tokens(message_text(message))
    if method == "approx":
        enc = encoding or token_counting.encoding_for_model(model)
        return lambda message: token_counting.approx_tokens(message_text(message), enc)
    return lambda message: token_counting.count_tokens(message_text(message), model, encoding=encoding)


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    """What a window may hold and how it is counted. Every window of the service is one of these.

    Caps (`max_messages`, `max_chars`) count history, pinned messages and, when `caps_count_current`,
    the current message; the system prompt and the summary only when `caps_count_system`. The token
    budget counts everything sent. The budget is `max_tokens`, or `context_length - reserve` when a
    context length is given (the smaller of the two when both are), where the reserve for the reply is
    `reserve_tokens` or `reserve_ratio` of the context length.
    """

    name: str = "custom"
    max_messages: int | None = None
    max_chars: int | None = None
    max_tokens: int | None = None
    context_length: int | None = None
    reserve_tokens: int | None = None
    reserve_ratio: float = 0.2
    #: "estimate" (TOK-1 bytes/4), "approx" (TOK-7, no tokenizer) or "exact" (tiktoken).
    method: Method = "estimate"
    model: str | None = None
    encoding: str | None = None
    #: Count messages in chat format (TOK-4: overhead, role, name, tool calls, reply priming);
    #: False counts the content text only (WIN-1).
    chat_format: bool = True
    caps_count_current: bool = True
    caps_count_system: bool = False
    #: Reuse the count stored beside a message under "tokens" (TOK-5) instead of counting again.
    reuse_stored_tokens: bool = True
    #: Keep messages flagged "pinned" first, whatever their age.
    honor_pinned: bool = True
    #: Keep an assistant tool-call message and all its tool results together, or drop them together.
    keep_tool_groups: bool = True
    #: A custom per-message counter; overrides `method` and `chat_format` (stored counts still win).
    counter: MessageCounter | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_messages", "max_chars", "max_tokens", "context_length", "reserve_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"WindowPolicy.{name} must be a non-negative integer or None, got {value!r}")
        if not 0 <= self.reserve_ratio < 1:
            raise ValueError(f"WindowPolicy.reserve_ratio must be in [0, 1), got {self.reserve_ratio!r}")
        if self.method not in _METHODS:
            raise ValueError(f"WindowPolicy.method must be one of {_METHODS}, got {self.method!r}")

    @classmethod
    def for_model(
        cls, model: str | None, *, overrides: Mapping[str, Any] | None = None, **changes: Any
    ) -> WindowPolicy:
        """A policy whose token budget is the model's context length minus the output reserve (WIN-4)."""
        ctx = model_context(model, overrides)
        base: dict[str, Any] = {
            "name": f"model:{ctx.model}",
            "context_length": ctx.context_length,
            "reserve_tokens": ctx.reserve_tokens,
            "model": model,
            "method": "exact",
        }
        base.update(changes)
        return cls(**base)

    def with_changes(self, **changes: Any) -> WindowPolicy:
        """A copy with some fields changed (the policy itself is frozen)."""
        return replace(self, **changes)

    @property
    def reserve(self) -> int:
        """Tokens kept free for the reply (only when the budget derives from `context_length`)."""
        if self.context_length is None:
            return 0
        if self.reserve_tokens is not None:
            return min(self.reserve_tokens, self.context_length)
        return math.ceil(self.context_length * self.reserve_ratio)

    @property
    def token_budget(self) -> int | None:
        """Tokens the whole prompt may use, or None for no token limit."""
        budgets = []
        if self.max_tokens is not None:
            budgets.append(self.max_tokens)
        if self.context_length is not None:
            budgets.append(self.context_length - self.reserve)
        return min(budgets) if budgets else None

    @property
    def priming_tokens(self) -> int:
        """Tokens the reply priming costs on top of the messages (chat format only)."""
        if self.chat_format and self.counter is None:
            return token_counting.reply_priming_tokens(self.method, model=self.model, encoding=self.encoding)
        return 0

    def token_counter(self) -> MessageCounter:
        """The per-message token count under this policy; a stored "tokens" count is reused as is."""
        base = self.counter or _counter(self.method, self.chat_format, self.model, self.encoding)
        if not self.reuse_stored_tokens:
            return base
        # A count stored with another tokenizer than this window's is recounted (cached per message).
        return reuse_stored(base, method=self.method, model=self.model, encoding=self.encoding)


class DroppedMessage(NamedTuple):
    """A message left out of the window: its `message_id` (else its history index) and why."""

    ref: str | int
    reason: str


class WindowStats:
    """What a window holds and what it left out. `dropped` is built on first access.

    `tokens_used` counts everything sent under the policy's counting (reply priming included in chat
    format); `chars_used` is what the character cap counted (None without a cap); `kept` counts every
    message sent, `kept_history` the history and pinned messages among them.
    """

    __slots__ = (
        "_cut",
        "_cut_reason",
        "_dropped",
        "_explicit",
        "_handled",
        "_history",
        "chars_used",
        "kept",
        "kept_history",
        "over_budget",
        "policy",
        "token_budget",
        "tokens_used",
    )

    def __init__(
        self,
        *,
        policy: str,
        token_budget: int | None,
        tokens_used: int,
        chars_used: int | None,
        kept: int,
        kept_history: int,
        explicit: list[DroppedMessage],
        history: Sequence[Mapping[str, Any]],
        cut: int,
        cut_reason: str | None,
        handled: set[int],
    ) -> None:
        self.policy = policy
        self.token_budget = token_budget
        self.tokens_used = tokens_used
        self.chars_used = chars_used
        self.kept = kept
        self.kept_history = kept_history
        self.over_budget = token_budget is not None and tokens_used > token_budget
        self._explicit = explicit
        self._history = history
        self._cut = cut
        self._cut_reason = cut_reason
        self._handled = handled
        self._dropped: tuple[DroppedMessage, ...] | None = None

    @property
    def tokens_remaining(self) -> int | None:
        """Budget left after the window (0 when system and current alone exceed it); None if unlimited."""
        if self.token_budget is None:
            return None
        return max(0, self.token_budget - self.tokens_used)

    @property
    def dropped(self) -> tuple[DroppedMessage, ...]:
        """Every message left out, oldest history first, with its reason."""
        if self._dropped is None:
            implicit: list[DroppedMessage] = []
            if self._cut_reason is not None and self._cut > 0:
                history, handled, reason = self._history, self._handled, self._cut_reason
                for index, message in enumerate(history):
                    if index >= self._cut:
                        break
                    if index not in handled:
                        implicit.append(DroppedMessage(_ref(message, index), reason))
            self._dropped = tuple(implicit + self._explicit)
        return self._dropped

    @property
    def dropped_count(self) -> int:
        return len(self.dropped)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready stats."""
        return {
            "policy": self.policy,
            "token_budget": self.token_budget,
            "tokens_used": self.tokens_used,
            "tokens_remaining": self.tokens_remaining,
            "chars_used": self.chars_used,
            "kept": self.kept,
            "kept_history": self.kept_history,
            "over_budget": self.over_budget,
            "dropped_count": self.dropped_count,
            "dropped": [{"ref": d.ref, "reason": d.reason} for d in self.dropped],
        }

    def __repr__(self) -> str:
        return (
            f"WindowStats(policy={self.policy!r}, tokens_used={self.tokens_used}, "
            f"tokens_remaining={self.tokens_remaining}, kept={self.kept}, dropped={self.dropped_count})"
        )


@dataclass(frozen=True, slots=True)
class WindowResult:
    """The messages to send, oldest first with OpenAI keys only, and the stats of the selection."""

    messages: list[dict[str, Any]]
    stats: WindowStats


def _ref(message: Mapping[str, Any], index: int | str) -> str | int:
    message_id = message.get("message_id")
    return message_id if isinstance(message_id, str | int) and not isinstance(message_id, bool) else index


def to_openai(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message with OpenAI chat keys only (bookkeeping keys stripped)."""
    return {key: message[key] for key in OPENAI_KEYS if key in message}


class _Room:
    """What is left of each limit; None means unlimited. One refusal rule for both walk directions."""

    __slots__ = ("chars", "messages", "tokens")

    def __init__(self, tokens: int | None, chars: int | None, messages: int | None) -> None:
        self.tokens = tokens
        self.chars = chars
        self.messages = messages

    def refusal(self, tokens: int, chars: int, messages: int) -> str | None:
        """The first limit that `tokens`/`chars`/`messages` more would break, else None."""
        if self.messages is not None and messages > self.messages:
            return MAX_MESSAGES
        if self.chars is not None and chars > self.chars:
            return MAX_CHARS
        if self.tokens is not None and tokens > self.tokens:
            return TOKEN_BUDGET
        return None

    def take(self, tokens: int, chars: int, messages: int) -> None:
        if self.tokens is not None:
            self.tokens -= tokens
        if self.chars is not None:
            self.chars -= chars
        if self.messages is not None:
            self.messages -= messages


def _pinned_units(
    history: Sequence[Mapping[str, Any]], keep_tool_groups: bool
) -> tuple[list[list[int]], list[DroppedMessage], set[int]]:
    """History messages flagged "pinned", as units (a pinned tool call brings its results)."""
    units: list[list[int]] = []
    broken: list[DroppedMessage] = []
    members: set[int] = set()
    seq = history if isinstance(history, list | tuple) else list(history)
    for index, message in enumerate(seq):
        if not message.get("pinned") or index in members:
            continue
        role = message.get("role")
        if keep_tool_groups and role == "tool":
            continue  # a result is pinned through its call, never on its own
        unit = [index]
        if keep_tool_groups and _is_tool_call(message):
            wanted = _tool_call_ids(message)
            found: set[str] = set()
            follow = index + 1
            while follow < len(seq) and seq[follow].get("role") == "tool":
                call_id = str(seq[follow].get("tool_call_id"))
                if call_id in wanted:
                    unit.append(follow)
                    found.add(call_id)
                follow += 1
            if found != wanted:
                broken.extend(DroppedMessage(_ref(seq[i], i), INCOMPLETE_TOOL_CALL) for i in unit)
                members.update(unit)
                continue
        members.update(unit)
        units.append(unit)
    return units, broken, members


def select_window(
    *,
    history: Sequence[Mapping[str, Any]],
    policy: WindowPolicy,
    system: Mapping[str, Any] | None = None,
    current: Mapping[str, Any] | None = None,
    pinned: Sequence[Mapping[str, Any]] = (),
    summary: Mapping[str, Any] | str | None = None,
) -> WindowResult:
    """WIN-3: choose what to send from `history` (oldest first) under `policy`.

    System and current are always kept, even alone over the budget. Then, while they fit: the summary
    (placed right after the system message), pinned messages (the `pinned` argument, then history
    messages flagged "pinned", newest first), then history newest first, stopping at the first
    message or tool-call group that does not fit, so the kept history is the newest contiguous run.
    Tool results without their call and calls without all their results are never sent. The cost
    grows with the messages kept, not with the length of the history (unless pinned flags are honored,
    which needs one pass over the flags).
    """
    count = policy.token_counter()
    caps_sys, caps_cur = policy.caps_count_system, policy.caps_count_current
    groups = policy.keep_tool_groups
    budget = policy.token_budget
    used_tokens = policy.priming_tokens
    used_chars = 0
    fixed_messages = 0
    track_chars = policy.max_chars is not None
    if system is not None:
        used_tokens += count(system)
        if caps_sys:
            used_chars += len(message_text(system)) if track_chars else 0
            fixed_messages += 1
    if current is not None:
        used_tokens += count(current)
        if caps_cur:
            used_chars += len(message_text(current)) if track_chars else 0
            fixed_messages += 1
    room = _Room(
        None if budget is None else budget - used_tokens,
        None if policy.max_chars is None else policy.max_chars - used_chars,
        None if policy.max_messages is None else policy.max_messages - fixed_messages,
    )
    explicit: list[DroppedMessage] = []

    summary_message: Mapping[str, Any] | None = None
    if summary is not None:
        candidate = {"role": "system", "content": summary} if isinstance(summary, str) else summary
        tokens = count(candidate)
        chars = len(message_text(candidate)) if caps_sys and track_chars else 0
        reason = room.refusal(tokens, chars, 1 if caps_sys else 0)
        if reason is None:
            room.take(tokens, chars, 1 if caps_sys else 0)
            used_tokens += tokens
            used_chars += chars
            summary_message = candidate
        else:
            explicit.append(DroppedMessage("summary", reason))

    # Pinned: the explicit ones count as older than any history message.
    pinned_kept_extra: list[int] = []
    pinned_kept_hist: list[int] = []
    members: set[int] = set()
    hist_units: list[list[int]] = []
    if policy.honor_pinned:
        hist_units, broken, members = _pinned_units(history, groups)
        explicit.extend(broken)
    candidates: list[tuple[bool, list[int]]] = [(False, [i]) for i in range(len(pinned))]
    candidates.extend((True, unit) for unit in hist_units)
    for from_history, pin_unit in reversed(candidates):
        source: Sequence[Mapping[str, Any]] = history if from_history else pinned
        msgs = [source[i] for i in pin_unit]
        tokens = sum(count(m) for m in msgs)
        chars = sum(len(message_text(m)) for m in msgs) if track_chars else 0
        reason = room.refusal(tokens, chars, len(msgs))
        if reason is None:
            room.take(tokens, chars, len(msgs))
            used_tokens += tokens
            used_chars += chars
            (pinned_kept_hist if from_history else pinned_kept_extra).extend(pin_unit)
        else:
            explicit.extend(
                DroppedMessage(_ref(m, i) if from_history else _ref(m, f"pinned:{i}"), reason)
                for i, m in zip(pin_unit, msgs, strict=True)
            )

    # History, newest first: the first unit that does not fit ends the walk.
    suffix: list[int] = []
    pending: list[tuple[int, Mapping[str, Any]]] = []  # tool results seen, waiting for their call
    cut = 0
    cut_reason: str | None = None
    index = len(history)
    for message in reversed(history):
        index -= 1
        if index in members:
            if pending:  # results cut off from their call by a pinned message cannot follow it
                explicit.extend(DroppedMessage(_ref(m, i), ORPHAN_TOOL_RESULT) for i, m in pending)
                pending = []
            continue
        role = message.get("role")
        if groups and role == "tool":
            pending.append((index, message))
            continue
        unit: list[tuple[int, Mapping[str, Any]]]
        if groups and _is_tool_call(message):
            wanted = _tool_call_ids(message)
            answers = [(i, m) for i, m in pending if str(m.get("tool_call_id")) in wanted]
            explicit.extend(
                DroppedMessage(_ref(m, i), ORPHAN_TOOL_RESULT)
                for i, m in pending
                if str(m.get("tool_call_id")) not in wanted
            )
            pending = []
            if {str(m.get("tool_call_id")) for _, m in answers} != wanted:
                explicit.append(DroppedMessage(_ref(message, index), INCOMPLETE_TOOL_CALL))
                explicit.extend(DroppedMessage(_ref(m, i), INCOMPLETE_TOOL_CALL) for i, m in answers)
                continue
            unit = [(index, message), *reversed(answers)]
        else:
            if pending:
                explicit.extend(DroppedMessage(_ref(m, i), ORPHAN_TOOL_RESULT) for i, m in pending)
                pending = []
            unit = [(index, message)]
        if len(unit) == 1:
            tokens = count(message)
            chars = len(message_text(message)) if track_chars else 0
        else:
            tokens = sum(count(m) for _, m in unit)
            chars = sum(len(message_text(m)) for _, m in unit) if track_chars else 0
        reason = room.refusal(tokens, chars, len(unit))
        if reason is not None:
            explicit.extend(DroppedMessage(_ref(m, i), reason) for i, m in unit)
            cut, cut_reason = index, reason
            break
        room.take(tokens, chars, len(unit))
        used_tokens += tokens
        used_chars += chars
        for i, _ in reversed(unit):
            suffix.append(i)
    else:
        explicit.extend(DroppedMessage(_ref(m, i), ORPHAN_TOOL_RESULT) for i, m in pending)

    suffix.reverse()
    kept_hist = sorted(suffix + pinned_kept_hist) if pinned_kept_hist else suffix
    out: list[dict[str, Any]] = []
    if system is not None:
        out.append(to_openai(system))
    if summary_message is not None:
        out.append(to_openai(summary_message))
    out.extend(to_openai(pinned[i]) for i in sorted(pinned_kept_extra))
    out.extend(to_openai(history[i]) for i in kept_hist)
    if current is not None:
        out.append(to_openai(current))
    kept_messages = len(out)
    stats = WindowStats(
        policy=policy.name,
        token_budget=budget,
        tokens_used=used_tokens,
        chars_used=used_chars if track_chars else None,
        kept=kept_messages,
        kept_history=len(kept_hist),
        explicit=explicit,
        history=history,
        cut=cut,
        cut_reason=cut_reason,
        handled=members,
    )
    return WindowResult(out, stats)


# What the oldest-first walk needs to know of a message besides its cost (bit flags, see message_kind).
KIND_PINNED = 1
KIND_TOOL_CALL = 2
KIND_TOOL_RESULT = 4


def message_kind(message: Mapping[str, Any], policy: WindowPolicy) -> int:
    """The message's flags for `trim_oldest` under `policy`: pinned, tool call, tool result."""
    kind = 0
    role = message.get("role")
    if policy.keep_tool_groups:
        if role == "tool":
            kind |= KIND_TOOL_RESULT
        elif _is_tool_call(message):
            kind |= KIND_TOOL_CALL
    if policy.honor_pinned and message.get("pinned") and not kind & KIND_TOOL_RESULT:
        kind |= KIND_PINNED
    return kind


class Trim(NamedTuple):
    """Result of trimming a run of history from its oldest end."""

    start: int  # index of the first message still in the run
    dropped: list[tuple[int, int, str]]  # [lo, hi) index ranges dropped, with the reason
    passed_pinned: list[tuple[int, int]]  # pinned units walked past: they stay, outside the run
    tokens: int  # totals of the run left
    chars: int
    messages: int


def trim_oldest(
    *,
    tokens: Sequence[int],
    kinds: Sequence[int],
    start: int,
    room_tokens: int | None,
    room_messages: int | None,
    run_tokens: int,
    run_messages: int,
    chars: Sequence[int] | None = None,
    room_chars: int | None = None,
    run_chars: int = 0,
) -> Trim:
    """The same selection as `select_window`, walked from the oldest end with running totals.

    For a holder that keeps per-message columns (`tokens`, `kinds` from `message_kind`, optionally
    `chars`) and the totals of its run `[start:]` (non-pinned messages only), this finds the newest
    contiguous run that fits the room in O(messages dropped) instead of O(kept): the longest suffix
    that fits is the same whichever end it is searched from, and the refusal rule is the same `_Room`.
    A tool call and its results go together; pinned units are walked past, not dropped.
    """
    room = _Room(room_tokens, room_chars, room_messages)
    dropped: list[tuple[int, int, str]] = []
    passed: list[tuple[int, int]] = []
    index, end = start, len(tokens)
    reason = room.refusal(run_tokens, run_chars, run_messages)
    while reason is not None and index < end:
        kind = kinds[index]
        stop = index + 1
        if kind & KIND_TOOL_CALL:
            while stop < end and kinds[stop] & KIND_TOOL_RESULT:
                stop += 1
        if kind & KIND_PINNED:
            passed.append((index, stop))
            index = stop
            continue
        why = ORPHAN_TOOL_RESULT if kind & KIND_TOOL_RESULT else reason
        if stop == index + 1:
            run_tokens -= tokens[index]
            if chars is not None:
                run_chars -= chars[index]
        else:
            run_tokens -= sum(tokens[index:stop])
            if chars is not None:
                run_chars -= sum(chars[index:stop])
        run_messages -= stop - index
        if dropped and dropped[-1][1] == index and dropped[-1][2] == why:
            dropped[-1] = (dropped[-1][0], stop, why)
        else:
            dropped.append((index, stop, why))
        index = stop
        reason = room.refusal(run_tokens, run_chars, run_messages)
    return Trim(index, dropped, passed, run_tokens, run_chars, run_messages)


#: WIN-1 (seed 000): TOK-1 estimates of the content only, no caps, no pinned flags.
WIN1_POLICY = WindowPolicy(
    name="win1",
    method="estimate",
    chat_format=False,
    reuse_stored_tokens=False,
    honor_pinned=False,
)

#: WIN-2 (seed 003): newest first, at most 10 messages and 5000 characters counting the current
#: message, system prompt not counted, stop at the first older message that does not fit.
SEED_003_POLICY = WindowPolicy(
    name="seed003",
    max_messages=10,
    max_chars=5000,
    caps_count_current=True,
    caps_count_system=False,
    method="estimate",
    chat_format=False,
    honor_pinned=False,
)


def build_llm_messages(
    *,
    system_prompt: str,
    history: Sequence[Mapping[str, Any]],
    current_user_message: str,
    max_token_budget: int,
) -> list[dict[str, Any]]:
    """WIN-1: `[system, *newest history that fits, current user]` under TOK-1 estimates of the content.

    System and current are always kept, even alone over the budget; history is trimmed from the
    oldest until the total fits. Plain `{"role", "content"}` history comes back as plain dicts.
    """
    result = select_window(
        history=history,
        policy=WIN1_POLICY.with_changes(max_tokens=max_token_budget),
        system={"role": "system", "content": system_prompt},
        current={"role": "user", "content": current_user_message},
    )
    return result.messages


def count_window_tokens(messages: Iterable[Mapping[str, Any]], policy: WindowPolicy) -> int:
    """Tokens `messages` cost under `policy`, as `select_window` counts them (priming included)."""
    count = policy.token_counter()
    return policy.priming_tokens + sum(count(m) for m in messages)
