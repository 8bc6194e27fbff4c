"""A chat Session of Turns (seed 002) over the HTTP API: prompt-size checks, token counts, JSONL events."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from chat_local.client import ApiError, ChatApi, ServerUnreachable
from chat_local.history import EventType, HistorySink, JsonlHistorySink, make_event

Mode = Literal["interactive", "once"]
TurnStatus = Literal["ok", "error", "refused"]
#: Encodings shipped with chat_core (TOK-3); anything else given to --tokenizer-model is a model name.
SHIPPED_ENCODINGS = ("o200k_base", "cl100k_base")


class TokenizerChoiceError(ValueError):
    """--tokenizer-model names neither a shipped encoding nor a model the tokenizer can map."""


class TurnInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a turn, which the log ends as interrupted; `sent`: its message had gone to the server,
    which may then still store the turn."""

    def __init__(self, *, sent: bool) -> None:
        super().__init__("interrupted by the user")
        self.sent = sent


class PromptCounter:
    """Counts tokens locally with chat_core.engine.tokens: exact tiktoken counts from shipped encodings."""

    def __init__(self, tokenizer_model: str | None, model: str | None) -> None:
        from chat_core.engine import tokens

        self._tokens = tokens
        choice = (tokenizer_model or model or "").strip() or None
        if choice is not None and (
            choice in SHIPPED_ENCODINGS or choice in tokens.SHIPPED_ENCODINGS or choice.endswith("_base")
        ):
            self.encoding = choice
        else:
            self.encoding = tokens.encoding_for_model(choice)
        self.source = tokenizer_model or model or "default"
        try:
            tokens.count_tokens("probe", encoding=self.encoding)
        except Exception as exc:  # TokenizerUnavailable, KeyError, ValueError: all mean "not usable"
            raise TokenizerChoiceError(
                f"tokenizer {self.encoding!r} is not available ({exc}); "
                f"use one of {', '.join(SHIPPED_ENCODINGS)} or a model name such as gpt-4o"
            ) from exc

    def text(self, text: str) -> int:
        return int(self._tokens.count_tokens(text, encoding=self.encoding))

    def message(self, message: Mapping[str, Any]) -> int:
        return int(self._tokens.count_message_tokens(message, encoding=self.encoding))

    def chat(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """The prompt as sent: every message in chat format plus the reply priming (TOK-4)."""
        return int(self._tokens.count_chat_tokens(messages, encoding=self.encoding))


@dataclass
class SessionOptions:
    model: str | None = None
    system_prompt: str | None = None
    title: str | None = None
    tokenizer_model: str | None = None
    max_prompt_tokens: int | None = None
    warn_prompt_tokens: int | None = None
    log_dir: Path = Path("history")


@dataclass
class TokenTally:
    prompt: int = 0
    completion: int = 0
    total: int = 0

    def add(self, other: Mapping[str, int]) -> None:
        self.prompt += int(other.get("prompt", 0))
        self.completion += int(other.get("completion", 0))
        self.total += int(other.get("total", 0))

    def as_dict(self) -> dict[str, int]:
        return {"prompt": self.prompt, "completion": self.completion, "total": self.total}


@dataclass
class WindowPreview:
    """What a post of `content` would send, as the server builds it, counted locally."""

    messages: list[dict[str, Any]]
    stats: dict[str, Any]
    per_message: list[int]
    prompt_tokens: int


@dataclass
class TurnResult:
    turn: int
    status: TurnStatus
    reply: str | None = None
    error: str | None = None
    warning: str | None = None
    prompt_tokens: int | None = None
    tokens: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] | None = None
    duration_ms: int = 0
    unreachable: bool = False
    #: The reply was printed piece by piece as it arrived (API-14); it is not printed again.
    streamed: bool = False


INTERRUPTED = "interrupted by the user"


@dataclass
class _Progress:
    """How far a turn got, for the log of one that Ctrl-C ends."""

    sent: bool = False
    prompt_tokens: int | None = None


def _usage_reported(usage: Mapping[str, Any] | None) -> bool:
    if not isinstance(usage, Mapping):
        return False
    return any(int(usage.get(k) or 0) > 0 for k in ("prompt_tokens", "completion_tokens", "total_tokens"))


class ChatSession:
    """Process-level Session (seed 002): its id is the conversation id; each post is one Turn.

    Events go to the sink in the seed's order: session_start, then per turn turn_start, assistant,
    final (when the model answered), turn_end; session_end on close.
    """

    def __init__(
        self,
        api: ChatApi,
        conversation: Mapping[str, Any],
        *,
        mode: Mode,
        options: SessionOptions,
        counter: PromptCounter,
        sink: HistorySink,
        created: bool,
    ) -> None:
        self.api = api
        self.conversation = dict(conversation)
        self.session_id = str(conversation["conversation_id"])
        self.mode = mode
        self.options = options
        self.counter = counter
        self.sink = sink
        self.created = created
        # The server counts turns; tool messages make message_count / 2 drift (older servers: fallback).
        turns = conversation.get("turn_count")
        self.turn = (
            int(turns) if turns is not None else math.ceil(int(conversation.get("message_count") or 0) / 2)
        )
        self.first_turn = self.turn + 1
        self.turns_stored = 0
        self.tokens = TokenTally()
        self.started = time.monotonic()
        self.closed = False
        #: The last turns whose turn_start / turn_end are logged (an interrupted turn is ended once).
        self._started_turn = 0
        self._ended_turn = 0

    # -- construction -----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        api: ChatApi,
        *,
        mode: Mode,
        options: SessionOptions,
        conversation_id: str | None = None,
        sink_factory: Callable[[str], HistorySink] | None = None,
    ) -> ChatSession:
        """Start a session: create a conversation, or resume `conversation_id`; write session_start."""
        # A bad --tokenizer-model must fail before a conversation is created for nothing.
        early = PromptCounter(options.tokenizer_model, options.model) if options.tokenizer_model else None
        if conversation_id:
            conversation = api.get_conversation(conversation_id, limit=1)
            created = False
        else:
            conversation = api.create_conversation(
                title=options.title, system_prompt=options.system_prompt, model=options.model
            )
            created = True
        model = options.model or conversation.get("model")
        counter = early or PromptCounter(None, model)
        session_id = str(conversation["conversation_id"])
        factory = sink_factory or (lambda sid: JsonlHistorySink(options.log_dir, sid))
        session = cls(
            api,
            conversation,
            mode=mode,
            options=options,
            counter=counter,
            sink=factory(session_id),
            created=created,
        )
        session._emit(
            "session_start",
            meta={
                "mode": mode,
                "model": model,
                "tokenizer": counter.encoding,
                "resumed": not created,
                "config": {
                    "api": api.base_url,
                    "model": model,
                    "tokenizer": counter.encoding,
                    "tokenizer_model": options.tokenizer_model,
                    "max_prompt_tokens": options.max_prompt_tokens,
                    "warn_prompt_tokens": options.warn_prompt_tokens,
                    "system_prompt": bool(conversation.get("system_prompt")),
                    "log_dir": str(options.log_dir),
                },
            },
        )
        return session

    @property
    def model(self) -> str | None:
        return self.options.model or self.conversation.get("model")

    @property
    def log_path(self) -> Path | None:
        path = getattr(self.sink, "path", None)
        return path if isinstance(path, Path) else None

    def _emit(
        self,
        type_: EventType,
        *,
        turn: int | None = None,
        step: int | None = None,
        content: str | None = None,
        role: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.sink.append(
            make_event(self.session_id, type_, turn=turn, step=step, content=content, role=role, meta=meta)
        )

    # -- window -----------------------------------------------------------------------------------

    def preview(self, content: str) -> WindowPreview:
        """POST /conversations/{id}/window for `content` and count what would be sent."""
        answer = self.api.build_window(self.session_id, content, model=self.options.model)
        messages = [dict(m) for m in answer.get("messages") or []]
        per_message = [self.counter.message(m) for m in messages]
        return WindowPreview(
            messages, dict(answer.get("stats") or {}), per_message, self.counter.chat(messages)
        )

    # -- a turn -----------------------------------------------------------------------------------

    def run_turn(
        self,
        content: str,
        *,
        waiting: Callable[[], AbstractContextManager[Any]] = nullcontext,
        on_warning: Callable[[str], None] | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> TurnResult:
        """One Turn: window check (refuse over --max-prompt-tokens), post, record events.

        Ctrl-C at any point of it raises TurnInterrupted once the log has ended the turn as interrupted.
        `waiting()` is entered around the post; what it yields, if callable, is called on the reply's
        first piece (the spinner stops there).
        """
        self.turn += 1
        turn = self.turn
        started = time.monotonic()
        progress = _Progress()
        try:
            return self._run_turn(turn, started, content, progress, waiting, on_warning, on_delta)
        except KeyboardInterrupt:
            if self._ended_turn == turn:
                raise TurnInterrupted(sent=progress.sent) from None
            if self._started_turn != turn:
                self._emit("turn_start", turn=turn, content=content, role="user", meta={})
            if progress.sent:
                # The server may still finish and store this turn; the log says the client stopped waiting.
                self.turns_stored += 1
            self._end_turn(turn, started, "error", INTERRUPTED, prompt_tokens=progress.prompt_tokens)
            raise TurnInterrupted(sent=progress.sent) from None

    def _run_turn(
        self,
        turn: int,
        started: float,
        content: str,
        progress: _Progress,
        waiting: Callable[[], AbstractContextManager[Any]],
        on_warning: Callable[[str], None] | None,
        on_delta: Callable[[str], None] | None,
    ) -> TurnResult:
        user_tokens = self.counter.text(content)
        try:
            window: WindowPreview | None = self.preview(content)
        except (ApiError, ServerUnreachable) as exc:
            window = None
            window_error: Exception | None = exc
        else:
            window_error = None
        start_meta: dict[str, Any] = {"tokens": {"prompt": user_tokens}, "tokenizer": self.counter.encoding}
        if window is not None:
            start_meta["tokens"]["window"] = window.prompt_tokens
            start_meta["window"] = {
                "messages": len(window.messages),
                "dropped": len(window.stats.get("dropped") or []),
            }
        self._emit("turn_start", turn=turn, content=content, role="user", meta=start_meta)
        self._started_turn = turn

        if window_error is not None:
            return self._end_turn(turn, started, "error", _describe(window_error), exc=window_error)
        assert window is not None
        prompt_tokens = progress.prompt_tokens = window.prompt_tokens
        limit = self.options.max_prompt_tokens
        if limit is not None and prompt_tokens > limit:
            message = (
                f"refused: this turn's prompt would be {prompt_tokens} tokens ({self.counter.encoding}), "
                f"over --max-prompt-tokens {limit}. Nothing was sent. Shorten the message, or start a "
                f"new session with /new."
            )
            return self._end_turn(turn, started, "refused", message, prompt_tokens=prompt_tokens)
        warning = None
        warn = self.options.warn_prompt_tokens
        if warn is not None and prompt_tokens > warn:
            warning = (
                f"warning: this turn's prompt is {prompt_tokens} tokens ({self.counter.encoding}), "
                f"over --warn-prompt-tokens {warn}"
            )
            if on_warning is not None:
                on_warning(warning)

        try:
            # A `with`, not ExitStack.enter_context: nothing runs between the spinner's start and the block
            # that stops it, where a Ctrl-C would leave it turning. It turns until the reply starts to arrive
            # (or, without a stream, until it has).
            with waiting() as stop_waiting:
                piece = None
                if on_delta is not None:
                    show = on_delta

                    def piece(text: str) -> None:
                        if callable(stop_waiting):
                            stop_waiting()
                        show(text)

                progress.sent = True
                response = self.api.post_message(
                    self.session_id, content, model=self.options.model, on_delta=piece
                )
        except ApiError as exc:
            if isinstance(exc.body, Mapping) and isinstance(exc.body.get("assistant_message"), Mapping):
                # API-2: the model failed; the user message and an error reply were both stored.
                self.turns_stored += 1
                return self._answered(turn, started, dict(exc.body), prompt_tokens, warning, failed=exc)
            return self._end_turn(turn, started, "error", str(exc), exc=exc, prompt_tokens=prompt_tokens)
        except ServerUnreachable as exc:
            return self._end_turn(turn, started, "error", str(exc), exc=exc, prompt_tokens=prompt_tokens)
        self.turns_stored += 1
        result = self._answered(turn, started, response, prompt_tokens, warning)
        result.streamed = on_delta is not None and bool(result.reply)
        return result

    def _answered(
        self,
        turn: int,
        started: float,
        response: dict[str, Any],
        prompt_tokens: int,
        warning: str | None,
        failed: ApiError | None = None,
    ) -> TurnResult:
        assistant = dict(response.get("assistant_message") or {})
        reply = str(assistant.get("content") or "")
        usage = assistant.get("usage") or {}
        reported = _usage_reported(usage)
        local_completion = self.counter.text(reply) if reply else 0
        local = {
            "prompt": prompt_tokens,
            "completion": local_completion,
            "total": prompt_tokens + local_completion,
        }
        if reported:
            chosen = {
                "prompt": int(usage.get("prompt_tokens") or 0),
                "completion": int(usage.get("completion_tokens") or 0),
                "total": int(usage.get("total_tokens") or 0),
            }
        else:
            chosen = dict(local)
        tokens = {
            **chosen,
            "source": "usage" if reported else "local",
            "local": local,
            "usage": usage or None,
        }
        meta: dict[str, Any] = {
            "tokens": tokens,
            "model": assistant.get("model"),
            "message_id": assistant.get("message_id"),
            "status": assistant.get("status"),
        }
        if failed is not None:
            error = assistant.get("error") or {}
            meta["error"] = {"message": error.get("message"), "http_status": failed.status}
        self._emit("assistant", turn=turn, step=0, content=reply, role="assistant", meta=meta)
        turn_tokens = TokenTally()
        turn_tokens.add(chosen)
        if failed is None:
            self._emit(
                "final",
                turn=turn,
                step=0,
                content=reply,
                role="assistant",
                meta={"tokens": turn_tokens.as_dict()},
            )
            result = self._end_turn(
                turn, started, "ok", None, prompt_tokens=prompt_tokens, tokens=turn_tokens
            )
            result.reply = reply
        else:
            message = str(failed)
            result = self._end_turn(
                turn, started, "error", message, exc=failed, prompt_tokens=prompt_tokens, tokens=turn_tokens
            )
            result.reply = reply or None
        result.tokens = tokens
        result.response = response
        result.warning = warning
        return result

    def _end_turn(
        self,
        turn: int,
        started: float,
        status: TurnStatus,
        error: str | None,
        *,
        exc: Exception | None = None,
        prompt_tokens: int | None = None,
        tokens: TokenTally | None = None,
    ) -> TurnResult:
        duration_ms = int((time.monotonic() - started) * 1000)
        tally = tokens or TokenTally()
        self.tokens.add(tally.as_dict())
        meta: dict[str, Any] = {
            # seed 002 statuses are ok|error|max_steps; a refusal is an error turn with a reason
            "status": "error" if status == "refused" else status,
            "stepCount": 1 if tokens is not None else 0,
            "durationMs": duration_ms,
            "tokens": tally.as_dict(),
        }
        if error is not None:
            meta["errorMessage"] = error
        if status == "refused":
            meta["reason"] = "max_prompt_tokens"
            meta["promptTokens"] = prompt_tokens
        if isinstance(exc, ApiError):
            meta["httpStatus"] = exc.status
            meta["errorCode"] = exc.code
        self._emit("turn_end", turn=turn, meta=meta)
        self._ended_turn = turn
        return TurnResult(
            turn=turn,
            status=status,
            error=error,
            prompt_tokens=prompt_tokens,
            duration_ms=duration_ms,
            unreachable=isinstance(exc, ServerUnreachable),
        )

    # -- end --------------------------------------------------------------------------------------

    def close(self) -> bool:
        """Write session_end. A conversation this session created and never used is deleted again.

        Returns True when the empty conversation was discarded.
        """
        if self.closed:
            return False
        self.closed = True
        discarded = False
        if self.created and self.turns_stored == 0:
            try:
                self.api.delete_conversation(self.session_id)
                discarded = True
            except (ApiError, ServerUnreachable):
                discarded = False
        self._emit(
            "session_end",
            meta={
                "mode": self.mode,
                "turns": self.turn - self.first_turn + 1,
                "tokens": self.tokens.as_dict(),
                "durationMs": int((time.monotonic() - self.started) * 1000),
                "discarded": discarded,
            },
        )
        self.sink.close()
        return discarded


def _describe(exc: Exception) -> str:
    return str(exc)
