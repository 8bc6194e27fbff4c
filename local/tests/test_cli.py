"""The `chat` CLI's own logic: options, token counting choice, error messages, the seed-002 JSONL sink."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import httpx
import pytest
from chat_core.engine import tokens
from chat_local import cli
from chat_local.client import ServerUnreachable, _error_from
from chat_local.history import FIELDS, JsonlHistorySink, make_event, read_events
from chat_local.session import PromptCounter, TokenizerChoiceError


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
