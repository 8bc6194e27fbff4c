"""The `chat` CLI's own logic: options, token counting choice, error messages, the seed-002 JSONL sink."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from chat_core.engine import tokens
from chat_local import cli
from chat_local.client import ChatApi, ServerUnreachable, _error_from
from chat_local.history import FIELDS, JsonlHistorySink, MemoryHistorySink, make_event, read_events
from chat_local.session import (
    ChatSession,
    PromptCounter,
    SessionOptions,
    TokenizerChoiceError,
    TurnInterrupted,
)


def test_warn_above_max_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 002 options: --warn-prompt-tokens above --max-prompt-tokens makes no sense and is refused."""
    # When the CLI is run with the warning above the limit
    code = cli.main(["--once", "--max-prompt-tokens", "10", "--warn-prompt-tokens", "20", "hi"])
    # Then it exits 2 with a message, before any request
    assert code == cli.EXIT_USAGE
    assert "--warn-prompt-tokens" in capsys.readouterr().err


def test_non_positive_token_limits_are_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    """--max-prompt-tokens must be a whole number >= 1."""
    # When zero or text is given / Then argparse refuses with exit code 2
    for value in ("0", "ten"):
        with pytest.raises(SystemExit) as exited:
            cli.main(["--once", "--max-prompt-tokens", value, "hi"])
        assert exited.value.code == 2
    assert "expected" in capsys.readouterr().err


def test_once_without_a_question_on_a_terminal_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--once needs a question, from argv or piped stdin."""

    # Given stdin is a terminal with nothing piped
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty())
    # When --once runs without a question
    code = cli.main(["--api", "http://127.0.0.1:9", "--once"])
    # Then
    assert code == cli.EXIT_USAGE
    assert "needs a question" in capsys.readouterr().err


def test_unreachable_server_exits_3_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LOC-1 CLI: server unreachable -> one clear line suggesting `make run`, no traceback."""
    # Given a port with nothing listening
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # When the CLI runs against it
    code = cli.main(["--api", f"http://127.0.0.1:{port}", "--log-dir", str(tmp_path), "--once", "hi"])
    # Then
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_UNREACHABLE
    assert len(err) == 1
    assert "make run" in err[0]
    assert list(tmp_path.iterdir()) == []


def test_unreachable_remote_api_does_not_suggest_make_run() -> None:
    """The `make run` hint is for the local server only."""
    # When the message is built for a remote URL / Then it points at the URL instead
    message = str(ServerUnreachable("https://api.example.com", "connection refused"))
    assert "make run" not in message
    assert "--api" in message


@pytest.mark.parametrize(
    ("status", "body", "code", "message"),
    [
        (
            422,
            {"error": {"code": "message_too_long", "message": "content has 5001 characters"}},
            "message_too_long",
            "content has 5001 characters",
        ),
        (401, {"message": "Unauthorized"}, "http_error", "Unauthorized"),
        (
            502,
            {"assistant_message": {"status": "error", "error": {"message": "provider returned 500"}}},
            "provider_failed",
            "provider returned 500",
        ),
        (503, "Service Unavailable", "http_error", "Service Unavailable"),
    ],
)
def test_api_errors_are_read_from_the_error_shape(status: int, body: object, code: str, message: str) -> None:
    """Errors from the API are shown plainly: status + error.message (502 turns: the model's error)."""
    # Given an error response
    if isinstance(body, str):
        response = httpx.Response(status, text=body)
    else:
        response = httpx.Response(status, json=body)
    # When it is turned into an ApiError
    error = _error_from(response)
    # Then status, code and message are the server's
    assert (error.status, error.code, error.message) == (status, code, message)
    assert str(error) == f"error {status} ({code}): {message}"


def test_tokenizer_model_accepts_encodings_and_model_names() -> None:
    """Seed 002 --tokenizer-model: an encoding name, or a model mapped to its encoding (TOK-2)."""
    # When counters are built from an encoding, models, or nothing
    # Then each uses the expected encoding
    assert PromptCounter("cl100k_base", "gpt-4o").encoding == "cl100k_base"
    assert PromptCounter(None, "gpt-4o").encoding == "o200k_base"
    assert PromptCounter("gpt-4", None).encoding == "cl100k_base"
    assert PromptCounter(None, None).encoding == tokens.encoding_for_model(None)


def test_unknown_encoding_is_refused_clearly() -> None:
    """A tokenizer that is not shipped is named in the error (no download is ever tried, TOK-3)."""
    # When an encoding that is not shipped is asked for / Then
    with pytest.raises(TokenizerChoiceError, match="p50k_base"):
        PromptCounter("p50k_base", None)


def test_prompt_count_is_chat_tokens_of_the_window() -> None:
    """The prompt checked against --max-prompt-tokens is the chat-format count of the window (TOK-4)."""
    # Given a window as the server returns it
    window = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "你好, world"}]
    counter = PromptCounter("o200k_base", None)
    # When it is counted / Then it is chat_core's chat-format count
    assert counter.chat(window) == tokens.count_chat_tokens(window, encoding="o200k_base")
    assert counter.text("你好, world") == tokens.count_tokens("你好, world", encoding="o200k_base")


def test_jsonl_sink_writes_one_event_per_line_with_the_fixed_fields(tmp_path: Path) -> None:
    """Seed 002: JSONL, one event per line, fields ts, session_id, turn, step, type, content, role, meta."""
    # Given a sink for a session
    sink = JsonlHistorySink(tmp_path / "history", "s1")
    # When two events are appended, and the session is resumed later in append mode
    sink.append(make_event("s1", "session_start", meta={"mode": "once"}))
    sink.append(
        make_event("s1", "turn_start", turn=1, content="héllo", role="user", meta={"tokens": {"prompt": 2}})
    )
    sink.close()
    again = JsonlHistorySink(tmp_path / "history", "s1")
    again.append(make_event("s1", "session_end"))
    again.close()
    # Then the file has three lines with exactly the seed's keys, UTF-8 kept readable
    path = tmp_path / "history" / "s1.jsonl"
    events = read_events(path)
    assert [e["type"] for e in events] == ["session_start", "turn_start", "session_end"]
    assert all(tuple(e) == FIELDS for e in events)
    assert events[1]["turn"] == 1
    assert events[1]["meta"]["tokens"]["prompt"] == 2
    assert "héllo" in path.read_text(encoding="utf-8")
    assert events[0]["ts"].endswith("Z")
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["turn"] is None


def test_no_spinner_without_a_terminal() -> None:
    """The spinner only runs when output is a terminal."""
    # Given output to plain buffers
    out, err = io.StringIO(), io.StringIO()
    console = cli.Console(out, err)
    # When the model is "thinking"
    with console.thinking():
        pass
    # Then nothing was drawn
    assert console.spinner_enabled is False
    assert err.getvalue() == ""


def test_seed002_resumed_session_numbers_turns_from_the_servers_turn_count() -> None:
    """Seed 002: a resumed session's next turn follows the server's turn count, not message_count / 2
    (tool calls and results are messages too, so message_count / 2 overshoots)."""
    from typing import Any, cast

    from chat_local.session import ChatSession

    # Given a conversation of 3 turns whose tool steps made 10 messages
    conversation = {"conversation_id": "c1", "turn_count": 3, "message_count": 10}
    # When a session resumes it
    session = ChatSession(
        cast(Any, None),
        conversation,
        mode="interactive",
        options=cast(Any, None),
        counter=cast(Any, None),
        sink=cast(Any, None),
        created=False,
    )
    # Then its first new turn is turn 4
    assert session.first_turn == 4


class _Terminal(io.StringIO):
    """A terminal's stream; `on_write` sees each text written to it (from whichever thread writes)."""

    def __init__(self, on_write: Callable[[str], None] = lambda text: None) -> None:
        super().__init__()
        self.on_write = on_write

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        written = super().write(text)
        self.on_write(text)
        return written


def _press_ctrl_c() -> None:
    """What the terminal does on Ctrl-C: SIGINT to the process (the kernel picks the thread)."""
    os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture
def ctrl_c_interrupts() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt here, as in `chat` at a terminal (a CI runner may start the tests
    with SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _session(handler: Callable[[httpx.Request], httpx.Response], sink: MemoryHistorySink) -> ChatSession:
    api = ChatApi("http://api.test", transport=httpx.MockTransport(handler))
    return ChatSession(
        api,
        {"conversation_id": "c1", "turn_count": 0},
        mode="interactive",
        options=SessionOptions(),
        counter=PromptCounter(None, None),
        sink=sink,
        created=False,
    )


def _window(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"messages": [json.loads(request.content)], "stats": {}})


def test_seed002_ctrl_c_as_the_spinner_appears_ends_the_turn_and_the_spinner(ctrl_c_interrupts: None) -> None:
    """Seed 002 interactive mode (LOC-1): Ctrl-C pressed the moment "thinking…" shows (the main thread still
    starting the spinner's thread) ends the turn, logged as interrupted, and the spinner with it: it used
    to go on drawing over the next prompt."""
    released = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/window"):
            return _window(request)
        released.wait(30)
        return httpx.Response(503, json={"error": {"code": "late", "message": "never read"}})

    # Given a terminal where the user presses Ctrl-C as the first "thinking…" frame is drawn
    pressed = threading.Event()

    def watch(text: str) -> None:
        if "thinking" in text and not pressed.is_set():
            pressed.set()
            _press_ctrl_c()

    err = _Terminal(watch)
    console = cli.Console(_Terminal(), err)
    sink = MemoryHistorySink()
    session = _session(handler, sink)
    before = set(threading.enumerate())
    # When a turn runs
    try:
        with pytest.raises(TurnInterrupted) as interrupted:
            session.run_turn("slow one", waiting=console.thinking, on_delta=console.piece)
    finally:
        released.set()
    # Then the turn ended (before or while posting, as the threads ran) and no spinner is left drawing
    assert pressed.is_set()
    assert isinstance(interrupted.value, TurnInterrupted)
    assert set(threading.enumerate()) - before == set()
    assert err.getvalue().endswith("\r\033[K")
    # And the log ends the turn as interrupted
    assert [e["type"] for e in sink.events] == ["turn_start", "turn_end"]
    assert sink.events[-1]["meta"]["errorMessage"] == "interrupted by the user"


def test_seed002_ctrl_c_before_the_spinner_ends_the_turn_unsent(ctrl_c_interrupts: None) -> None:
    """Seed 002 interactive mode (LOC-1): Ctrl-C while the window is checked, before anything is posted,
    ends that turn too (not the REPL, not lost): logged as interrupted, nothing sent."""
    posted = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/window"):
            _press_ctrl_c()
            return _window(request)
        posted.set()
        return httpx.Response(503, json={"error": {"code": "late", "message": "not expected"}})

    # Given a session whose window check is where the user presses Ctrl-C
    sink = MemoryHistorySink()
    session = _session(handler, sink)
    console = cli.Console(_Terminal(), _Terminal())
    # When a turn runs
    with pytest.raises(TurnInterrupted) as interrupted:
        session.run_turn("quick one", waiting=console.thinking, on_delta=console.piece)
    # Then nothing was posted and the log ends the turn as interrupted
    assert interrupted.value.sent is False
    assert not posted.is_set()
    assert [e["type"] for e in sink.events] == ["turn_start", "turn_end"]
    assert sink.events[-1]["meta"]["errorMessage"] == "interrupted by the user"
