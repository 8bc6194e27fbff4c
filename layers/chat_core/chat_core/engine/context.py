"""In-memory conversation context (WIN-5, seed 001): incremental counts and trimming on the window engine."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chat_core.engine.models import ModelContext, model_context
from chat_core.engine.window import (
    OPENAI_KEYS,
    DroppedMessage,
    MessageCounter,
    Method,
    WindowPolicy,
    WindowResult,
    message_kind,
    select_window,
    to_openai,
    trim_oldest,
)
from chat_core.errors import InvalidInput

Strategy = Literal["fifo", "sliding_window"]
STRATEGIES: tuple[str, ...] = ("fifo", "sliding_window")
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")

# Keys kept beside role/content/tokens on a held message: chat keys plus what the window engine reads.
_EXTRA_KEYS = frozenset((*OPENAI_KEYS, "pinned", "message_id", "seq")) - {"role", "content"}
# Past this many forgotten slots a FIFO manager compacts its list (amortised O(1) per message).
_COMPACT_AFTER = 1024


class _Held(Mapping[str, Any]):
    """A message as the manager holds it: compact (seed 001 memory <= 2x the raw size), read as a mapping.

    Non-ASCII text is kept as UTF-8 bytes when that is smaller than Python's str (one emoji makes a str
    4 bytes per character); the rarer keys (tool calls, name, seq, pinned) live in a side dict.
    """

    __slots__ = ("_content", "_extra", "message_id", "role", "tokens")

    def __init__(self, role: str, content: Any, tokens: int, extra: dict[str, Any] | None) -> None:
        self.role = role
        if isinstance(content, str) and not content.isascii():
            encoded = content.encode("utf-8")
            if len(encoded) + 33 < sys.getsizeof(content):
                content = encoded
        self._content = content
        self.tokens = tokens
        self.message_id = extra.pop("message_id", None) if extra else None
        self._extra = extra or None

    @property
    def content(self) -> Any:
        content = self._content
        return content.decode("utf-8") if type(content) is bytes else content

    @property
    def pinned(self) -> bool:
        return bool(self._extra is not None and self._extra.get("pinned"))

    def get(self, key: str, default: Any = None) -> Any:
        if key == "role":
            return self.role
        if key == "content":
            return self.content
        if key == "tokens":
            return self.tokens
        if key == "message_id":
            return default if self.message_id is None else self.message_id
        if self._extra is not None:
            return self._extra.get(key, default)
        return default

    def __getitem__(self, key: str) -> Any:
        if key in self:
            return self.get(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if key in ("role", "content", "tokens"):
            return True
        if key == "message_id":
            return self.message_id is not None
        return self._extra is not None and key in self._extra

    def __iter__(self) -> Iterator[str]:
        yield from ("role", "content", "tokens")
        if self.message_id is not None:
            yield "message_id"
        if self._extra is not None:
            yield from self._extra

    def __len__(self) -> int:
        return 3 + (self.message_id is not None) + (len(self._extra) if self._extra is not None else 0)


@dataclass(frozen=True, slots=True)
class ContextState:
    """A snapshot of the context: usage against the limit and what it holds."""

    strategy: str
    tokens_used: int
    tokens_limit: int
    tokens_remaining: int
    context_length: int
    reserve_tokens: int
    message_count: int
    by_role: dict[str, int]
    usage_ratio: float
    near_limit: bool
    warn_threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "tokens_used": self.tokens_used,
            "tokens_limit": self.tokens_limit,
            "tokens_remaining": self.tokens_remaining,
            "context_length": self.context_length,
            "reserve_tokens": self.reserve_tokens,
            "message_count": self.message_count,
            "by_role": dict(self.by_role),
            "usage_ratio": self.usage_ratio,
            "near_limit": self.near_limit,
            "warn_threshold": self.warn_threshold,
        }


class Trimmed(Sequence[DroppedMessage]):
    """What a trim dropped, oldest first, with why. Built on first read, so trimming stays O(dropped)
    in C-speed slices; `ref` is the message_id, else the message's position among all messages added."""

    __slots__ = ("_groups", "_len", "_refs")

    def __init__(self, groups: list[tuple[list[_Held], int, str]] | None = None) -> None:
        self._groups = groups or []
        self._len = sum(len(messages) for messages, _, _ in self._groups)
        self._refs: list[DroppedMessage] | None = None

    def _materialise(self) -> list[DroppedMessage]:
        if self._refs is None:
            refs = []
            for messages, first, why in self._groups:
                for offset, message in enumerate(messages):
                    message_id = message.message_id
                    ref = message_id if isinstance(message_id, str | int) else first + offset
                    refs.append(DroppedMessage(ref, why))
            self._refs = refs
        return self._refs

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, index: Any) -> Any:
        return self._materialise()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return self._materialise() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Trimmed({self._materialise()!r})"

    def messages(self) -> list[dict[str, Any]]:
        """The dropped messages themselves (chat keys), e.g. for a summary of what left the context."""
        return [to_openai(message) for messages, _, _ in self._groups for message in messages]


@dataclass(frozen=True, slots=True)
class AddResult:
    """What `add` did: the new message's tokens, what was trimmed to make room, a near-limit warning."""

    tokens: int
    dropped: Trimmed
    warning: str | None

    @property
    def dropped_messages(self) -> list[dict[str, Any]]:
        return self.dropped.messages()


class MessageContextManager:
    """Conversation history held within a model's context limit (seed 001).

    The limit is the model's prompt budget (WIN-4: `context_length` minus the reply reserve, which is
    the configured `max_tokens` or 20%). Each message is counted once, when added (a count stored under
    "tokens" is reused); totals are kept running, so `add` is O(1) and trimming costs O(messages dropped).
    Selection and trimming are the window engine's (`chat_core.engine.window`), walked from the oldest end.

    - The system prompt is locked: never trimmed, not part of the trimmable set. Later system messages
      and messages flagged "pinned" (or "important") are kept too, in their place.
    - An assistant message with tool calls and its tool results are kept or dropped together; a tool
      result must answer a call of the open tool-call message, and a new turn cannot start while a call
      still waits for its result (`InvalidInput`).
    - Strategy "fifo" forgets trimmed messages; "sliding_window" keeps the whole history (`history()`)
      and slides the window over it.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        config: Mapping[str, Any] | None = None,
        context_length: int | None = None,
        max_tokens: int | None = None,
        strategy: Strategy = "fifo",
        method: Method = "exact",
        encoding: str | None = None,
        chat_format: bool = True,
        counter: MessageCounter | None = None,
        max_messages: int | None = None,
        system_prompt: str | None = None,
        warn_threshold: float = 0.9,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        if isinstance(warn_threshold, bool) or not 0 < warn_threshold <= 1:
            raise ValueError(f"warn_threshold must be in (0, 1], got {warn_threshold!r}")
        overrides: dict[str, Any] = dict(config or {})
        if context_length is not None:
            overrides["context_length"] = context_length
            overrides.pop("contextLength", None)
        if max_tokens is not None:
            overrides["max_tokens"] = max_tokens
        self.model_context: ModelContext = model_context(model, overrides)
        self.limit = self.model_context.prompt_budget
        self.strategy: Strategy = strategy
        self.warn_threshold = float(warn_threshold)
        self.policy = WindowPolicy(
            name=f"context:{strategy}",
            max_tokens=self.limit,
            max_messages=max_messages,
            method=method,
            model=model,
            encoding=encoding,
            chat_format=chat_format,
            counter=counter,
            caps_count_system=False,
        )
        self._count = self.policy.token_counter()
        self._priming = self.policy.priming_tokens
        self._system: dict[str, Any] | None = None
        self._system_tokens = 0
        self._summary: dict[str, Any] | None = None
        self._summary_tokens = 0
        self._reset_history()
        if system_prompt is not None:
            self.set_system_prompt(system_prompt)

    def _reset_history(self) -> None:
        # Messages held, and beside them the columns the oldest-first trim reads (C arrays: compact, fast).
        self._items: list[_Held] = []
        self._tokens = array("q")
        self._kinds = bytearray()
        self._role_codes = bytearray()
        self._offset = 0  # messages forgotten by compaction, so positions stay those of add order
        self._start = 0  # first message of the window in `_items`
        self._pinned_before: list[_Held] = []  # pinned messages older than the window
        self._run_tokens = 0  # non-pinned messages of the window
        self._run_count = 0
        self._pinned_tokens = 0  # every pinned message held
        self._pinned_count = 0
        self._roles = dict.fromkeys(ROLES, 0)
        self._open_calls: set[str] = set()
        self._open_pinned = False
        self._open_tokens = 0
        self._open_count = 0

    # -- configuration -------------------------------------------------------------------------

    @property
    def system_prompt(self) -> str | None:
        return None if self._system is None else self._system.get("content")

    def set_system_prompt(self, text: str | None) -> Trimmed:
        """Set (or remove, with None) the locked system prompt; trims history if it no longer fits."""
        if text is None:
            self._system, self._system_tokens = None, 0
            return Trimmed()
        if not isinstance(text, str):
            raise InvalidInput(f"system prompt must be a string, got {type(text).__name__}")
        message = {"role": "system", "content": text}
        tokens = self._count(message)
        self._check_fixed(tokens - self._system_tokens)
        self._system, self._system_tokens = message, tokens
        return self.trim()

    def set_summary(self, text: str | None) -> Trimmed:
        """Set the summary of trimmed history (placed after the system prompt, counted); None removes it."""
        if text is None:
            self._summary, self._summary_tokens = None, 0
            return Trimmed()
        if not isinstance(text, str):
            raise InvalidInput(f"summary must be a string, got {type(text).__name__}")
        message = {"role": "system", "content": text}
        tokens = self._count(message)
        self._check_fixed(tokens - self._summary_tokens)
        self._summary, self._summary_tokens = message, tokens
        return self.trim()

    def _fixed_tokens(self) -> int:
        return self._priming + self._system_tokens + self._summary_tokens

    def _check_fixed(self, extra: int) -> None:
        need = self._fixed_tokens() + self._pinned_tokens + extra
        if need > self.limit:
            raise InvalidInput(
                f"the locked part of the context would need {need} tokens; the limit is {self.limit}",
                tokens=need,
                limit=self.limit,
            )

    # -- adding and trimming -------------------------------------------------------------------

    def _validated_extra(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """Check `message` (shape, tool-call order) and return the keys to keep beside role and content."""
        if not isinstance(message, Mapping):
            raise InvalidInput(f"a message must be a mapping, got {type(message).__name__}")
        role = message.get("role")
        if role not in ROLES:
            raise InvalidInput(f"message role must be one of {ROLES}, got {role!r}")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise InvalidInput(f"message content must be a string, a list of parts or null, got {content!r}")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in self._open_calls:
                raise InvalidInput(
                    f"tool result for call {call_id!r} answers no open tool call; add the assistant "
                    "message with that call first",
                    tool_call_id=call_id,
                )
        elif self._open_calls:
            raise InvalidInput(
                f"tool calls {sorted(self._open_calls)} still wait for their results; add the tool "
                "results before the next message",
                open_tool_calls=sorted(self._open_calls),
            )
        extra = {key: value for key, value in message.items() if key in _EXTRA_KEYS and value is not None}
        extra.pop("pinned", None)
        # System messages are locked, "important" is seed 001's word for pinned, a call pins its results.
        if (
            message.get("pinned")
            or message.get("important")
            or role == "system"
            or (role == "tool" and self._open_pinned)
        ):
            extra["pinned"] = True
        return extra or None

    def add(self, message: Mapping[str, Any]) -> AddResult:
        """Append a message (counting only it), then trim the oldest history if the limit is passed.

        A message that cannot fit even after trimming every trimmable message is refused with
        `InvalidInput`, and nothing changes. The first system message, if no system prompt is set and
        nothing was added yet, becomes the locked system prompt.
        """
        extra = self._validated_extra(message)
        role: str = message["role"]
        tokens = self._count(message)
        if role == "system" and self._system is None and not self._items:
            self._check_fixed(tokens)
            self._system, self._system_tokens = {"role": "system", "content": message.get("content")}, tokens
            return AddResult(tokens, Trimmed(), self._warning())
        held = _Held(role, message.get("content"), tokens, extra)
        pinned = held.pinned
        is_call = role == "assistant" and bool(held.get("tool_calls"))
        # The message with the part of its tool group it cannot be separated from.
        group_tokens = tokens + (self._open_tokens if role == "tool" else 0)
        group_count = 1 + (self._open_count if role == "tool" else 0)
        # A pinned message joins the locked part; any other must fit beside it once older history is gone.
        locked_tokens = self._fixed_tokens() + self._pinned_tokens
        need = locked_tokens + (tokens if pinned else group_tokens)
        if need > self.limit:
            raise InvalidInput(
                f"message needs {tokens} tokens; with the locked part of the context that is {need}, "
                f"over the limit of {self.limit}",
                tokens=tokens,
                limit=self.limit,
            )
        cap = self.policy.max_messages
        if cap is not None and self._pinned_count + (1 if pinned else group_count) > cap:
            raise InvalidInput(
                f"message does not fit the {cap}-message window beside {self._pinned_count} pinned messages",
                limit=cap,
            )
        self._items.append(held)
        self._tokens.append(tokens)
        self._kinds.append(message_kind(held, self.policy))
        self._role_codes.append(ROLES.index(role))
        self._roles[role] += 1
        if pinned:
            self._pinned_tokens += tokens
            self._pinned_count += 1
        else:
            self._run_tokens += tokens
            self._run_count += 1
        if is_call:
            self._open_calls = {
                str(call.get("id")) for call in held.get("tool_calls") if isinstance(call, Mapping)
            }
            self._open_pinned, self._open_tokens, self._open_count = pinned, tokens, 1
        elif role == "tool":
            self._open_calls.discard(held.get("tool_call_id"))
            self._open_tokens += tokens
            self._open_count += 1
        else:
            self._open_pinned, self._open_tokens, self._open_count = False, 0, 0
        # What was dropped is handed back so a caller can summarise it (seed 001 summary compression).
        return AddResult(tokens, self.trim(), self._warning())

    def trim(self) -> Trimmed:
        """Drop the oldest trimmable history until the context fits; O(messages dropped)."""
        room_tokens = self.limit - self._fixed_tokens() - self._pinned_tokens
        cap = self.policy.max_messages
        room_messages = None if cap is None else cap - self._pinned_count
        if room_tokens >= self._run_tokens and (room_messages is None or room_messages >= self._run_count):
            return Trimmed()
        result = trim_oldest(
            tokens=self._tokens,
            kinds=self._kinds,
            start=self._start,
            room_tokens=room_tokens,
            room_messages=room_messages,
            run_tokens=self._run_tokens,
            run_messages=self._run_count,
        )
        items = self._items
        for lo, hi in result.passed_pinned:
            self._pinned_before.extend(items[lo:hi])
        groups = []
        for lo, hi, why in result.dropped:
            codes = self._role_codes[lo:hi]
            for code, role in enumerate(ROLES):
                self._roles[role] -= codes.count(code)
            groups.append((items[lo:hi], self._offset + lo, why))
        self._run_tokens, self._run_count = result.tokens, result.messages
        self._start = result.start
        if self._start >= len(items):
            self._open_calls, self._open_pinned, self._open_tokens, self._open_count = set(), False, 0, 0
        if self.strategy == "fifo" and self._start > _COMPACT_AFTER and self._start * 2 > len(items):
            cut = self._start
            del items[:cut], self._tokens[:cut], self._kinds[:cut], self._role_codes[:cut]
            self._offset += cut
            self._start = 0
        return Trimmed(groups)

    def clear(self, *, keep_system_prompt: bool = True) -> None:
        """Remove every message (and the summary) and reset the counts; the system prompt stays locked."""
        self._reset_history()
        self._summary, self._summary_tokens = None, 0
        if not keep_system_prompt:
            self._system, self._system_tokens = None, 0

    # -- reading ---------------------------------------------------------------------------------

    def window(self) -> WindowResult:
        """The context as the window engine selects it, with its stats."""
        return select_window(
            history=self._items[self._start :],
            policy=self.policy,
            system=self._system,
            pinned=self._pinned_before,
            summary=self._summary,
        )

    def get_context(self) -> list[dict[str, Any]]:
        """The messages to send, oldest first, within the limit (a call awaiting its results is held back)."""
        return self.window().messages

    def history(self) -> list[dict[str, Any]]:
        """Every message still held, trimmed or not (all of them under "sliding_window"), oldest first."""
        source = self._items if self.strategy == "sliding_window" else self._items[self._start :]
        merged = self._pinned_before + source if self.strategy == "fifo" else source
        return [to_openai(m) for m in merged]

    @property
    def tokens_used(self) -> int:
        held = self._run_count + self._pinned_count
        if not held and self._system is None and self._summary is None:
            return 0
        return self._fixed_tokens() + self._pinned_tokens + self._run_tokens

    @property
    def tokens_remaining(self) -> int:
        return max(0, self.limit - self.tokens_used)

    def __len__(self) -> int:
        """Messages in the context, the system prompt and summary included."""
        return self._run_count + self._pinned_count + (self._system is not None) + (self._summary is not None)

    def can_add(self, message: Mapping[str, Any]) -> bool:
        """True when `message` fits beside everything held now, with no trimming."""
        tokens = self._count(message)
        used = self.tokens_used if len(self) else self._priming
        if used + tokens > self.limit:
            return False
        cap = self.policy.max_messages
        return cap is None or self._run_count + self._pinned_count + 1 <= cap

    def _near_limit(self) -> bool:
        return self.tokens_used >= self.warn_threshold * self.limit

    def _warning(self) -> str | None:
        if not self._near_limit():
            return None
        return (
            f"context uses {self.tokens_used} of {self.limit} tokens "
            f"({self.tokens_used / self.limit:.0%}, warning at {self.warn_threshold:.0%})"
        )

    def state(self) -> ContextState:
        """Tokens used and remaining, message counts by role, near-limit flag."""
        by_role = dict(self._roles)
        by_role["system"] += (self._system is not None) + (self._summary is not None)
        used = self.tokens_used
        return ContextState(
            strategy=self.strategy,
            tokens_used=used,
            tokens_limit=self.limit,
            tokens_remaining=max(0, self.limit - used),
            context_length=self.model_context.context_length,
            reserve_tokens=self.model_context.reserve_tokens,
            message_count=sum(by_role.values()),
            by_role=by_role,
            usage_ratio=used / self.limit if self.limit else 1.0,
            near_limit=self._near_limit(),
            warn_threshold=self.warn_threshold,
        )
