"""The `chat` CLI in `--once` mode against the local server (LOC-1, seed 002 JSONL events)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.local_server import ServerProcess, child_env, console_script
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e

SEED_FIELDS = {"ts", "session_id", "turn", "step", "type", "content", "role", "meta"}


def run_chat(
    *args: str, input_text: str | None = None, timeout_s: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script("chat"), "--no-spinner", *args],
        input=input_text if input_text is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=child_env(),
        check=False,
    )


def once(
    server: ServerProcess, log_dir: Path, *args: str, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_chat(
        "--api",
        server.url,
        "--user",
        "carol",
        "--log-dir",
        str(log_dir),
        "--once",
        *args,
        input_text=input_text,
    )


def session_id_of(result: subprocess.CompletedProcess[str]) -> str:
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("session "))
    return line.split()[1]


def events(log_dir: Path, session_id: str) -> list[dict]:
    path = log_dir / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_once_prints_the_reply_and_writes_the_seed_002_events(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 --once: one turn, session id printed, JSONL session_start .. session_end with usage tokens."""
    # Given the stand-in model reports usage
    model.set_mode("ok")
    # When one turn runs in --once mode
    result = once(server, tmp_path, "what", "is", "two", "plus", "two?")
    # Then the reply is on stdout, the session id on stderr, and the events are in the seed's order
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith('Stand-in reply: you said "what is two plus two?"')
    session_id = session_id_of(result)
    log = events(tmp_path, session_id)
    assert [e["type"] for e in log] == [
        "session_start",
        "turn_start",
        "assistant",
        "final",
        "turn_end",
        "session_end",
    ]
    assert all(set(e) == SEED_FIELDS and e["session_id"] == session_id for e in log)
    start, turn_start, assistant, final, turn_end, _end = log
    assert start["meta"]["mode"] == "once"
    assert turn_start["turn"] == 1
    assert turn_start["content"] == "what is two plus two?"
    assert turn_start["meta"]["tokens"]["prompt"] > 0
    assert assistant["step"] == 0
    assert assistant["meta"]["tokens"]["source"] == "usage"
    assert assistant["meta"]["tokens"]["total"] == assistant["meta"]["tokens"]["usage"]["total_tokens"]
    assert assistant["meta"]["tokens"]["local"]["completion"] > 0
    assert final["content"] == result.stdout.strip()
    assert turn_end["meta"]["status"] == "ok"
    assert turn_end["meta"]["stepCount"] == 1
    assert turn_end["meta"]["durationMs"] >= 0
    # and the session id is the conversation id on the server
    with server.client("carol") as api:
        detail = api.get(f"/conversations/{session_id}").json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]


def test_once_without_provider_usage_logs_local_token_counts(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 / TOK-6: no usage from the model -> the local tokenizer's counts are logged."""
    # Given the stand-in model sends no usage
    model.set_mode("no_usage")
    # When one turn runs
    result = once(server, tmp_path, "no usage please")
    # Then the assistant event's tokens come from the local count
    assert result.returncode == 0, result.stderr
    assistant = next(e for e in events(tmp_path, session_id_of(result)) if e["type"] == "assistant")
    tokens = assistant["meta"]["tokens"]
    assert tokens["source"] == "local"
    assert tokens["completion"] == tokens["local"]["completion"] > 0
    assert tokens["prompt"] == tokens["local"]["prompt"] > 0
    assert tokens["usage"]["total_tokens"] == 0


@pytest.mark.parametrize("mode", ["error500", "malformed"])
def test_once_with_a_failing_model_exits_1_and_logs_an_error_turn(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path, mode: str
) -> None:
    """API-2 through the CLI: the error is shown plainly (status + message), no traceback, exit 1."""
    # Given a failing model
    model.set_mode(mode)
    # When one turn runs
    result = once(server, tmp_path, "hello?")
    # Then the CLI says what failed and exits 1
    assert result.returncode == 1
    assert "error 502" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    log = events(tmp_path, session_id_of(result))
    assert [e["type"] for e in log] == ["session_start", "turn_start", "assistant", "turn_end", "session_end"]
    assert log[2]["meta"]["status"] == "error"
    assert log[3]["meta"]["status"] == "error"
    assert log[3]["meta"]["httpStatus"] == 502
    assert log[3]["meta"]["errorMessage"]


def test_max_prompt_tokens_refuses_the_turn_before_anything_is_sent(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 --max-prompt-tokens: a prompt over the limit is refused, clearly, with no model call."""
    # Given a limit far below the prompt
    calls = len(model.completion_requests)
    # When a long question is asked
    result = once(
        server, tmp_path, "--max-prompt-tokens", "5", "this question is certainly longer than five tokens"
    )
    # Then the turn is refused, exit code 4, the model was never called
    assert result.returncode == 4
    assert "refused" in result.stderr
    assert "--max-prompt-tokens 5" in result.stderr
    assert len(model.completion_requests) == calls
    turn_end = next(e for e in events(tmp_path, session_id_of(result)) if e["type"] == "turn_end")
    assert turn_end["meta"]["status"] == "error"
    assert turn_end["meta"]["reason"] == "max_prompt_tokens"
    assert turn_end["meta"]["promptTokens"] > 5


def test_warn_prompt_tokens_warns_and_still_sends(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 --warn-prompt-tokens: over the warning level the turn still runs, with a warning."""
    # When a question over the warning level is asked
    result = once(server, tmp_path, "--warn-prompt-tokens", "3", "a question of more than three tokens")
    # Then it warns and answers
    assert result.returncode == 0, result.stderr
    assert "warning: this turn's prompt is" in result.stderr
    assert result.stdout.startswith("Stand-in reply")


def test_tokenizer_model_picks_the_encoding(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 --tokenizer-model: the encoding used for local counts is the one asked for."""
    # When the CLI runs with cl100k_base
    result = once(server, tmp_path, "--tokenizer-model", "cl100k_base", "hi")
    # Then the session says so
    assert result.returncode == 0, result.stderr
    start = events(tmp_path, session_id_of(result))[0]
    assert start["meta"]["tokenizer"] == "cl100k_base"


def test_resuming_a_conversation_sends_its_history_and_continues_the_turn_count(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 sessions across processes: --conversation ID continues the same history and JSONL file."""
    # Given a first --once turn
    first = once(server, tmp_path, "my name is Ada")
    session_id = session_id_of(first)
    # When a second process resumes it
    second = once(server, tmp_path, "--conversation", session_id, "what is my name?")
    # Then the model received the earlier turn, and the log shows turn 2 in the same file
    assert second.returncode == 0, second.stderr
    sent = model.completion_requests[-1].json["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["my name is Ada", "what is my name?"]
    log = events(tmp_path, session_id)
    assert [e["turn"] for e in log if e["type"] == "turn_start"] == [1, 2]
    assert log[-1]["type"] == "session_end"


def test_question_from_stdin(server: ServerProcess, model: OpenAIStandin, tmp_path: Path) -> None:
    """--once reads the question from stdin when none is given as arguments."""
    # When the question is piped in
    result = once(server, tmp_path, input_text="piped question\n")
    # Then it is the turn's question
    assert result.returncode == 0, result.stderr
    assert 'you said "piped question"' in result.stdout


def test_unknown_conversation_is_a_plain_404_message(server: ServerProcess, tmp_path: Path) -> None:
    """Errors from the API are shown as status + error.message, never a traceback."""
    # When an unknown conversation is resumed
    result = once(server, tmp_path, "--conversation", "no-such-conversation", "hi")
    # Then one plain line says so
    assert result.returncode == 1
    assert "error 404" in result.stderr
    assert "Traceback" not in result.stderr


def test_api_validation_error_is_shown_plainly(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """API-3 through the CLI: a message over 5000 characters -> the server's 422 message, exit 1."""
    # When a too-long message is sent
    result = once(server, tmp_path, input_text="x" * 5001)
    # Then the server's message is shown, and the empty conversation is not left behind
    assert result.returncode == 1
    assert "error 422" in result.stderr
    assert "5000" in result.stderr
    with server.client("carol") as api:
        detail = api.get(f"/conversations/{session_id_of(result)}")
    assert detail.status_code == 404


def test_unreachable_server_is_one_clear_line_suggesting_make_run(tmp_path: Path) -> None:
    """LOC-1 CLI: nothing listening -> a one-line message that suggests `make run`, exit 3."""
    # Given a port nobody listens on
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # When the CLI is pointed at it
    result = run_chat("--api", f"http://127.0.0.1:{port}", "--log-dir", str(tmp_path), "--once", "hi")
    # Then it says so in one line, with the fix
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "make run" in lines[0]
    assert "Traceback" not in result.stderr


def test_json_flag_prints_the_api_answer(server: ServerProcess, model: OpenAIStandin, tmp_path: Path) -> None:
    """--once --json prints the API's JSON answer (for scripts)."""
    # When --json is given
    result = once(server, tmp_path, "--json", "json please")
    # Then stdout is the POST /messages answer
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["conversation_id"] == session_id_of(result)
    assert body["assistant_message"]["role"] == "assistant"


def test_no_spinner_when_output_is_not_a_terminal(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """The spinner only runs on a terminal: piped output stays clean."""
    # When the CLI runs with pipes (and the spinner not disabled by flag)
    result = subprocess.run(
        [console_script("chat"), "--api", server.url, "--log-dir", str(tmp_path), "--once", "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        check=False,
    )
    # Then there is no spinner output
    assert result.returncode == 0, result.stderr
    assert "thinking" not in result.stderr + result.stdout


def test_bearer_token_is_sent_instead_of_the_user_header(tmp_path: Path) -> None:
    """--token: a deployed API gets `Authorization: Bearer`, no X-User-Id (checked on a recording server)."""
    # Given a recording HTTP server (the stand-in) in the place of a deployed API
    with OpenAIStandin("ok") as recorder:
        # When the CLI talks to it with a token
        result = run_chat(
            "--api", recorder.root_url, "--token", "tok123", "--log-dir", str(tmp_path), "--once", "hi"
        )
        seen = recorder.requests
    # Then the request carried the bearer token and no user header (and the 404 is shown plainly)
    assert result.returncode == 1
    assert seen[0].headers["authorization"] == "Bearer tok123"
    assert "x-user-id" not in seen[0].headers
    assert "error 404" in result.stderr


def test_help_lists_the_seed_002_options() -> None:
    """LOC-1: --once, --log-dir, --max-prompt-tokens, --warn-prompt-tokens, --tokenizer-model."""
    # When help is asked for
    result = run_chat("--help")
    # Then the options are documented
    assert result.returncode == 0
    for option in (
        "--once",
        "--log-dir",
        "--max-prompt-tokens",
        "--warn-prompt-tokens",
        "--tokenizer-model",
        "--api",
    ):
        assert option in result.stdout


def test_once_prints_the_reply_as_it_arrives(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """API-14 in the CLI: the reply is printed piece by piece while the model produces it, once."""
    # Given a model that pauses between the words it streams
    model.configure(chunk_delay=0.15)
    command = [
        console_script("chat"),
        "--no-spinner",
        "--api",
        server.url,
        "--user",
        "carol",
        "--log-dir",
        str(tmp_path),
        "--once",
        "stream",
        "this",
        "please",
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=child_env()
    ) as child:
        assert child.stdout is not None
        # When the first piece is on stdout, the rest has not arrived yet
        first = child.stdout.read(len("Stand-in"))
        started = time.monotonic()
        rest = child.stdout.read()
        finished = time.monotonic()
        assert child.wait(timeout=60) == 0
    # Then the reply came over time (>= 0.15 s per remaining word), and it is printed exactly once
    printed = (first + rest).decode("utf-8")
    assert printed.count("Stand-in reply") == 1
    words = len(printed.split())
    assert finished - started >= 0.15 * (words - 3)
    assert model.requests[-1].json["stream"] is True


def test_once_no_stream_waits_for_the_whole_reply(
    server: ServerProcess, model: OpenAIStandin, tmp_path: Path
) -> None:
    """API-14: `--no-stream` asks for the whole reply (no stream in the model's request)."""
    result = once(server, tmp_path, "--no-stream", "whole", "please")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Stand-in reply") == 1
    assert "stream" not in model.requests[-1].json
