"""The `chat` REPL driven under a pseudo-terminal (pexpect), against the local server (seed 002)."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import signal
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pexpect
import pytest

from tests.support.local_server import ServerProcess, child_env, console_script
from tests.support.openai_standin import OpenAIStandin

pytestmark = [
    pytest.mark.e2e,
    # pexpect forks a child that immediately execs `chat`; the stand-in's thread is never touched there.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

SESSION = re.compile(r"session (\w+)  \(")


class _Chat(pexpect.spawn):
    """The `chat` child. Waiting for its end in vain fails with where each of its threads was: it runs with
    faulthandler on (PYTHONFAULTHANDLER), and SIGABRT makes it print every thread's stack first."""

    def expect(self, pattern: object, *args: object, **kwargs: object) -> int:
        try:
            return int(super().expect(pattern, *args, **kwargs))
        except pexpect.TIMEOUT:
            if pattern is not pexpect.EOF or not self.isalive():
                raise
            self.kill(signal.SIGABRT)
            with contextlib.suppress(pexpect.TIMEOUT, pexpect.EOF):
                super().expect(pexpect.EOF, timeout=10)
            raise AssertionError(f"chat did not end; its output, then its threads:\n{self.before}") from None


@pytest.fixture
def spawn(server: ServerProcess, tmp_path: Path) -> Iterator[object]:
    children: list[_Chat] = []

    def start(*args: str, preexec_fn: object = None) -> _Chat:
        child = _Chat(
            console_script("chat"),
            ["--api", server.url, "--user", "gus", "--log-dir", str(tmp_path), *args],
            env=child_env({"TERM": "dumb", "PYTHONFAULTHANDLER": "1"}),
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 200),
            preexec_fn=preexec_fn,
        )
        children.append(child)
        return child

    yield start
    for child in children:
        child.close(force=True)


def _types(tmp_path: Path, session_id: str) -> list[str]:
    lines = (tmp_path / f"{session_id}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["type"] for line in lines]


def test_repl_runs_turns_until_exit_and_logs_the_session(
    spawn: object, model: OpenAIStandin, tmp_path: Path
) -> None:
    """Seed 002 interactive mode: session id printed, several turns, /help, /exit; JSONL per session."""
    # Given the REPL
    child = spawn()  # type: ignore[operator]
    child.expect(SESSION)
    session_id = child.match.group(1)
    child.expect("you> ")
    # When two questions are asked, then help, then exit
    child.sendline("first question")
    child.expect('Stand-in reply: you said "first question"')
    child.expect(r"\[tokens: prompt \d+ · completion \d+ · total \d+ \(provider usage\)")
    child.expect("you> ")
    child.sendline("second question")
    child.expect(r'you said "second question" \(3 messages received\)')
    child.expect("you> ")
    child.sendline("/help")
    child.expect("/window")
    child.expect("you> ")
    child.sendline("/exit")
    child.expect(f"session {session_id} ended")
    child.expect(pexpect.EOF)
    child.close()
    # Then it exited cleanly and logged both turns in order
    assert child.exitstatus == 0
    assert _types(tmp_path, session_id) == [
        "session_start",
        *["turn_start", "assistant", "final", "turn_end"] * 2,
        "session_end",
    ]


def test_repl_first_question_from_argv_then_ctrl_d(spawn: object, model: OpenAIStandin) -> None:
    """Seed 002: the first question may come from argv; Ctrl-D ends the session."""
    # Given the REPL started with a question
    child = spawn("hello", "from", "argv")  # type: ignore[operator]
    # When it starts
    child.expect('you said "hello from argv"')
    child.expect("you> ")
    # Then Ctrl-D ends it cleanly
    child.sendeof()
    child.expect("ended")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_repl_window_list_and_new(spawn: object, model: OpenAIStandin, tmp_path: Path) -> None:
    """LOC-1: /window shows what would be sent with token counts; /list lists; /new starts a new session."""
    # Given a REPL with one turn
    child = spawn()  # type: ignore[operator]
    child.expect(SESSION)
    first_id = child.match.group(1)
    child.sendline("remember 42")
    child.expect("Stand-in reply")
    child.expect("you> ")
    # When /window is asked for a next message
    child.sendline("/window and then?")
    # Then it lists the history and the new message with token counts
    child.expect(r"window for a next message 'and then\?': 3 messages, (\d+) prompt tokens")
    assert int(child.match.group(1)) > 0
    child.expect(r"user\s+\d+\s+remember 42")
    child.expect(r"assistant\s+\d+\s+Stand-in reply")
    child.expect(r"user\s+\d+\s+and then\?")
    child.expect("you> ")
    # When /list is asked
    child.sendline("/list")
    child.expect(rf"\* {first_id} ")
    child.expect("you> ")
    # When /new starts another session
    child.sendline("/new")
    child.expect(f"session {first_id} ended")
    child.expect(SESSION)
    second_id = child.match.group(1)
    child.expect("you> ")
    child.sendline("/exit")
    child.expect(f"session {second_id} ended \\(empty conversation discarded\\)")
    child.expect(pexpect.EOF)
    # Then the new session is another conversation; the empty one was discarded on exit
    assert second_id != first_id
    assert _types(tmp_path, first_id)[-1] == "session_end"
    assert (tmp_path / f"{second_id}.jsonl").exists()


def test_repl_refuses_an_oversized_prompt_and_keeps_going(spawn: object, model: OpenAIStandin) -> None:
    """Seed 002 --max-prompt-tokens in the REPL: refused with a clear message, the session continues."""
    # Given a REPL with a small prompt limit
    child = spawn("--max-prompt-tokens", "12")  # type: ignore[operator]
    child.expect("you> ")
    calls = len(model.completion_requests)
    # When a long question is asked, then a short one
    child.sendline("this is a rather long question that will not fit into twelve tokens at all")
    child.expect(r"refused: this turn's prompt would be \d+ tokens")
    child.expect("you> ")
    child.sendline("ok?")
    child.expect('you said "ok\\?"')
    child.expect("you> ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    # Then only the short one reached the model
    assert len(model.completion_requests) == calls + 1


def test_repl_shows_a_spinner_while_the_model_thinks(spawn: object, model: OpenAIStandin) -> None:
    """LOC-1: a spinner while the model thinks, on a terminal."""
    # Given a slow model
    model.set_mode("slow", slow_seconds=1.0)
    child = spawn()  # type: ignore[operator]
    child.expect("you> ")
    # When a question is asked
    child.sendline("take your time")
    # Then the spinner shows before the reply
    child.expect("thinking…")
    child.expect("Stand-in reply")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_repl_model_error_is_shown_and_the_session_continues(spawn: object, model: OpenAIStandin) -> None:
    """API-2 in the REPL: the 502 is shown plainly, no traceback, and the next turn works."""
    # Given a failing model
    model.set_mode("error500")
    child = spawn()  # type: ignore[operator]
    child.expect("you> ")
    # When a question fails, and the model recovers
    child.sendline("will this fail?")
    index = child.expect([r"error 502 \(provider_failed\)", "Traceback"])
    assert index == 0
    child.expect("you> ")
    model.set_mode("ok")
    child.sendline("and now?")
    # Then the next turn answers
    child.expect('you said "and now\\?"')
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    "inherited",
    [None, _ignore_sigint],
    ids=["started-from-a-terminal", "started-with-sigint-ignored"],
)
def test_ctrl_c_during_a_turn_stops_waiting_and_keeps_the_session(
    spawn: object, model: OpenAIStandin, tmp_path: Path, inherited: object
) -> None:
    """Seed 002 interactive mode: Ctrl-C while the model thinks stops waiting, logs the turn as interrupted,
    and the REPL goes on; also when the CLI was started with SIGINT ignored, as a background job of a
    non-interactive shell (a script, a CI runner) starts it."""
    # Given a slow model and a REPL (started normally, or inheriting SIGINT ignored)
    model.set_mode("slow", slow_seconds=3.0)
    child = spawn(preexec_fn=inherited)  # type: ignore[operator]
    child.expect(SESSION)
    session_id = child.match.group(1)
    child.expect("you> ")
    # When a question is interrupted
    child.sendline("slow one")
    child.expect("thinking…")
    child.sendintr()
    # Then the REPL says so and is ready again
    child.expect(r"\(interrupted")
    child.expect("you> ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    lines = [
        json.loads(line)
        for line in (tmp_path / f"{session_id}.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    turn_end = next(e for e in lines if e["type"] == "turn_end")
    assert turn_end["meta"]["errorMessage"] == "interrupted by the user"


def test_repl_edits_regenerates_lists_and_switches_branches(spawn: object, model: OpenAIStandin) -> None:
    """API-18 in the CLI: /edit asks again on a new branch, /regen answers again, /branches shows the
    tree with the active path marked, /switch goes back to the first branch."""
    # Given a REPL with one question answered
    child = spawn("--no-stream")  # type: ignore[operator]
    child.expect("you> ")
    child.sendline("apples")
    child.expect('you said "apples"')
    child.expect("you> ")
    # When the question is edited, the answer regenerated, and the tree listed
    child.sendline("/edit pears")
    child.expect('you said "pears"')
    child.expect("you> ")
    child.sendline("/regen")
    child.expect(r'you said "pears" \(1 messages received\)')
    child.expect("you> ")
    child.sendline("/branches")
    child.expect(r"  (\w{8})  user +apples")
    first_question = child.match.group(1)
    child.expect(r"\* (\w{8})  user +pears")
    child.expect("you> ")
    # Then switching to the first question's branch makes the next turn continue it
    child.sendline(f"/switch {first_question}")
    child.expect("active path now ends at")
    child.expect("you> ")
    child.sendline("and then?")
    child.expect(r'you said "and then\?" \(2 messages received\)')
    child.expect("you> ")
    sent = [m["content"] for m in model.requests[-1].json["messages"]]
    assert sent == ["apples", "and then?"]
    child.sendline("/switch ZZZZZZZZ")
    child.expect("0 messages match")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_repl_shows_each_turns_cost_and_todays_usage(spawn: object, model: OpenAIStandin) -> None:
    """COST-2/COST-3 in the CLI: each turn's cost beside its tokens; /usage lists today's models."""
    # Given a REPL on gpt-4o-mini (the stand-in answers as the model asked for)
    child = spawn("--no-stream", "--model", "gpt-4o-mini")  # type: ignore[operator]
    child.expect("you> ")
    # When a question is answered
    child.sendline("what does this cost?")
    child.expect(
        r"\[tokens: prompt (\d+) · completion (\d+) · total \d+ \(provider usage\) · cost \$(\d+\.\d{6})"
    )
    prompt, completion, dollars = (child.match.group(i) for i in (1, 2, 3))
    child.expect("you> ")
    # Then the cost is those tokens at gpt-4o-mini's prices ($0.15 in, $0.60 out per 1M)
    exact = Decimal(prompt) * Decimal("0.15") + Decimal(completion) * Decimal("0.6")
    assert Decimal(dollars) * 1_000_000 == int(exact + Decimal("0.5"))
    # And /usage shows today's calls, tokens and cost for that model, once the table's stream has
    # counted the turn (COST-3: usually within a second; asked again until then)
    counted = rf"gpt-4o-mini: 1 calls, {int(prompt) + int(completion)} tokens .*\${re.escape(dollars)}"
    deadline = time.monotonic() + 30
    while True:
        child.sendline("/usage")
        child.expect(r"usage of gus on \d{4}-\d{2}-\d{2} \(UTC\):")
        if child.expect([counted, "you> "]) == 0:
            child.expect("you> ")
            break
        assert time.monotonic() < deadline, "the turn never showed in /usage"
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    # And on a model nobody priced (the server's standin-model) the cost is unknown, never $0
    other = spawn("--no-stream")  # type: ignore[operator]
    other.expect("you> ")
    other.sendline("and this?")
    other.expect(r"\(provider usage\) · cost unknown \(no price for this model\)")
    other.sendline("/exit")
    other.expect(pexpect.EOF)


def test_prv2_prv1_repl_exports_to_a_file_and_erases_after_the_typed_user_id(
    spawn: object, model: OpenAIStandin, tmp_path: Path
) -> None:
    """PRV-4 (PRV-2, PRV-1) in the CLI: /export saves the archive to a file; /erase asks for the user id typed
    again (anything else cancels), then shows the receipt and ends the session, the data gone."""
    # Given a REPL of a user of their own (the last --user wins) with one turn
    child = spawn("--no-stream", "--user", "hal")  # type: ignore[operator]
    child.expect("you> ")
    child.sendline("my secret plan")
    child.expect("Stand-in reply")
    child.expect("you> ")
    # When the user exports their data to a file
    target = tmp_path / "mine.json.gz"
    child.sendline(f"/export {target}")
    # Then the archive is saved there and holds the conversation
    child.expect(r"export \w+: 1 conversations, 2 messages, \d+ bytes -> ")
    child.expect("you> ")
    archive = json.loads(gzip.decompress(target.read_bytes()))
    assert archive["user_id"] == "hal"
    assert "my secret plan" in json.dumps(archive)
    # When /erase is answered with something else than the user id, nothing is erased
    child.sendline("/erase")
    child.expect("Type hal to confirm")
    child.sendline("yes")
    child.expect("not confirmed; nothing was erased")
    child.expect("you> ")
    # When it is answered with the user id
    child.sendline("/erase")
    child.expect("Type hal to confirm")
    child.sendline("hal")
    # Then the receipt is shown and the session ends
    child.expect(r"erased hal at \S+: (\d+) items")
    assert int(child.match.group(1)) > 0
    child.expect("ended \\(your data was erased\\)")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
