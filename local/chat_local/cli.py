"""`chat`: terminal client of the Chat History API — a REPL by default, `--once` for one turn (seed 002)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from chat_local.client import DEFAULT_API, ApiError, ChatApi, ServerUnreachable
from chat_local.session import ChatSession, SessionOptions, TokenizerChoiceError, TurnInterrupted, TurnResult

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_REFUSED = 4
#: Longest wait for an export or an erasure in the REPL, seconds (deployed, an erasure's last pass
#: runs ERASURE_SETTLE_SECONDS after the first).
JOB_WAIT_S = 900.0

HELP = """\
Commands:
  /help              this list
  /exit, /quit       end the session (Ctrl-D works too)
  /new               end this session and start a new conversation
  /list              your conversations, most recently updated first
  /window [text]     what the next turn would send to the model (as the server builds it), with token counts
  /resume ID         end this session and continue conversation ID
  /id                this session's id (= the conversation id)
  /edit TEXT         ask your last question differently: a new branch, answered again
  /regen             a new answer to your last question (the old one stays on its branch)
  /branches          every message of the conversation; * marks the active path, ids to /switch to
  /switch ID         continue from message ID (its full id or the end of it, as /branches shows)
  /usage             your tokens and cost today, by model, and your budget
  /export [PATH]     all your data as one archive (gzip JSON) saved to PATH (default chat-export-ID.json.gz)
  /erase             erase all your data for good (asks you to type your user id), then end the session
Anything else is sent as your message. Start a message with // to send a text that begins with /.
"""


def _default_user() -> str:
    return os.environ.get("CHAT_USER") or os.environ.get("USER") or os.environ.get("USERNAME") or "local"


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from exc
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {number}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chat",
        description="Chat with the Chat History API. Interactive by default; --once runs one turn and exits.",
        epilog=(
            "Exit codes: 0 ok, 1 the turn failed (API or model error), 2 bad usage, 3 server unreachable, "
            "4 refused by --max-prompt-tokens. Events are written to <log-dir>/<session_id>.jsonl."
        ),
    )
    parser.add_argument("question", nargs="*", help="first question (the only one with --once)")
    parser.add_argument(
        "--once", action="store_true", help="run one turn and exit (question from argv or stdin)"
    )
    parser.add_argument(
        "--api",
        default=os.environ.get("CHAT_API") or DEFAULT_API,
        help=f"API base URL (default $CHAT_API or {DEFAULT_API})",
    )
    parser.add_argument(
        "--user",
        default=None,
        help="your user id, sent as X-User-Id to the local server (default $CHAT_USER, $USER or 'local')",
    )
    parser.add_argument("--token", default=os.environ.get("CHAT_TOKEN"), help="Bearer JWT for a deployed API")
    parser.add_argument(
        "--conversation", metavar="ID", help="resume this conversation (its id is the session id)"
    )
    parser.add_argument("--model", help="model for a new conversation and its turns (default: the server's)")
    parser.add_argument("--system", metavar="PROMPT", help="system prompt of a new conversation")
    parser.add_argument("--title", help="title of a new conversation")
    parser.add_argument(
        "--log-dir", type=Path, default=Path("history"), help="JSONL directory (default history/)"
    )
    parser.add_argument(
        "--max-prompt-tokens",
        type=_positive,
        metavar="N",
        help="refuse a turn whose prompt (the window the server would send) is over N tokens",
    )
    parser.add_argument(
        "--warn-prompt-tokens", type=_positive, metavar="N", help="warn when the prompt is over N"
    )
    parser.add_argument(
        "--tokenizer-model",
        metavar="NAME",
        help="tokenizer for local counts: an encoding (o200k_base, cl100k_base) or a model name "
        "(default: the conversation's model)",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one API call")
    parser.add_argument("--json", action="store_true", help="with --once: print the API's JSON answer")
    parser.add_argument("--no-spinner", action="store_true", help="never show the thinking spinner")
    parser.add_argument(
        "--no-stream",
        action="store_true",
        help="wait for the whole reply instead of printing it as it arrives",
    )
    return parser


class Console:
    """Terminal output: replies on stdout, everything else (status, warnings, errors) on stderr."""

    def __init__(
        self, out: IO[str] | None = None, err: IO[str] | None = None, *, spinner: bool = True
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.spinner_enabled = spinner and _isatty(self.out) and _isatty(self.err)

    def reply(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def piece(self, text: str) -> None:
        """A piece of a streamed reply, printed as it arrives (API-14)."""
        print(text, end="", file=self.out, flush=True)

    def info(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    @contextmanager
    def thinking(self) -> Iterator[Callable[[], None]]:
        """A spinner on stderr while the model thinks (only on a terminal); yields what stops it early.

        Once "thinking…" shows, Ctrl-C ends the turn: the drawing thread starts with SIGINT blocked, so the
        key reaches the main thread, and it starts inside the `try` that stops it, so a Ctrl-C pressed as
        the first frame appears (the main thread still in `Thread.start`) cannot leave it drawing forever.
        """
        if not self.spinner_enabled:
            yield _nothing
            return
        stop = threading.Event()

        def spin() -> None:
            drawn = False
            for frame in itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"):
                if stop.is_set():
                    break
                self.err.write(f"\r{frame} thinking…")
                self.err.flush()
                drawn = True
                if stop.wait(0.1):
                    break
            if drawn:
                self.err.write("\r\033[K")
                self.err.flush()

        thread = threading.Thread(target=spin, daemon=True)

        def done() -> None:
            stop.set()
            # Not alive: never started, or a Ctrl-C came before it was; it then draws nothing (stop is set).
            if thread.is_alive():
                thread.join()

        try:
            with _sigint_held():
                thread.start()
            yield done
        finally:
            done()


def _nothing() -> None:
    pass


@contextmanager
def _sigint_held() -> Iterator[None]:
    """SIGINT waits meanwhile (blocked, not lost: it arrives on leaving), and a thread started here keeps it
    blocked for good, so Ctrl-C always interrupts the main thread."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks; its Ctrl-C goes to the main thread
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _token_line(result: TurnResult) -> str:
    tokens = result.tokens
    if not tokens:
        return ""
    source = (
        "provider usage" if tokens.get("source") == "usage" else "local count; the provider sent no usage"
    )
    return (
        f"  [tokens: prompt {tokens['prompt']} · completion {tokens['completion']} · total {tokens['total']} "
        f"({source}){_cost_part(result.response)} · {result.duration_ms / 1000:.1f} s]"
    )


def _cost_part(response: Mapping[str, Any] | None) -> str:
    """COST-2: " · cost $0.000123" beside the tokens (estimated or unknown said so); "" without a cost."""
    cost = ((response or {}).get("assistant_message") or {}).get("cost")
    if not isinstance(cost, Mapping):
        return ""
    if cost.get("usd") is None:
        return " · cost unknown (no price for this model)"
    return f" · cost {cost['usd']}" + (" (estimated)" if cost.get("status") == "estimated" else "")


def render_turn(console: Console, result: TurnResult, *, verbose: bool) -> None:
    if result.status == "ok":
        # A streamed reply is on screen already; end its line.
        console.reply("" if result.streamed else result.reply or "")
        if verbose:
            console.info(_token_line(result))
        return
    if result.reply:
        console.reply(result.reply)
    console.info(result.error or "the turn failed")


def _exit_code(result: TurnResult) -> int:
    if result.status == "ok":
        return EXIT_OK
    if result.status == "refused":
        return EXIT_REFUSED
    return EXIT_UNREACHABLE if result.unreachable else EXIT_TURN_FAILED


class Repl:
    """The interactive loop: reads lines, runs turns, handles /commands, keeps the session log."""

    def __init__(self, api: ChatApi, console: Console, options: SessionOptions, session: ChatSession) -> None:
        self.api = api
        self.console = console
        self.options = options
        self.session = session
        self.interactive_input = _isatty(sys.stdin)
        #: Print replies as they arrive (API-14); `--no-stream` waits for the whole reply.
        self.stream = True
        self.erased = False

    def announce(self) -> None:
        s = self.session
        state = "resumed" if not s.created else "new conversation"
        self.console.info(
            f"session {s.session_id}  ({state}, model {s.model}, tokenizer {s.counter.encoding})"
        )
        if s.log_path is not None:
            self.console.info(f"  events -> {s.log_path}")
        self.console.info("  /help for commands, /exit or Ctrl-D to quit")

    def turn(self, text: str) -> TurnResult:
        result = self.session.run_turn(
            text,
            waiting=self.console.thinking,
            on_warning=self.console.info,
            on_delta=self.console.piece if self.stream else None,
        )
        render_turn(self.console, result, verbose=True)
        return result

    def read(self) -> str | None:
        try:
            if self.interactive_input:
                return input("you> ")
            line = sys.stdin.readline()
            return None if line == "" else line.rstrip("\n")
        except EOFError:
            return None

    def run(self, first: str | None) -> int:
        self.announce()
        last = EXIT_OK
        if first:
            last = _exit_code(self.turn(first))
        while True:
            try:
                line = self.read()
            except KeyboardInterrupt:
                self.console.info("")
                break
            if line is None:
                break
            # Ctrl-C once a line is read, whatever it runs (a turn, a /command), ends that and not the REPL.
            try:
                text = line.strip()
                if not text:
                    continue
                if text.startswith("//"):
                    text = text[1:]
                elif text.startswith("/"):
                    if not self.command(text):
                        break
                    continue
                last = _exit_code(self.turn(text))
            except TurnInterrupted as exc:
                sent = "the server may still store this turn" if exc.sent else "nothing was sent"
                self.console.info(f"(interrupted; {sent})")
            except KeyboardInterrupt:
                self.console.info("(interrupted)")
        self.finish()
        return last

    def finish(self) -> None:
        discarded = self.session.close()
        if self.erased:
            self.console.info(f"session {self.session.session_id} ended (your data was erased)")
        elif discarded:
            self.console.info(f"session {self.session.session_id} ended (empty conversation discarded)")
        else:
            self.console.info(
                f"session {self.session.session_id} ended; resume with: chat --conversation "
                f"{self.session.session_id}"
            )

    def command(self, text: str) -> bool:
        """Run a /command; False means leave the loop."""
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        try:
            if name in ("/exit", "/quit", "/q"):
                return False
            if name in ("/help", "/?"):
                self.console.info(HELP.rstrip())
            elif name == "/id":
                self.console.info(self.session.session_id)
            elif name == "/new":
                self.switch(None)
            elif name == "/resume":
                if not arg:
                    self.console.info("usage: /resume CONVERSATION_ID")
                else:
                    self.switch(arg)
            elif name == "/list":
                self.list_conversations()
            elif name == "/window":
                self.show_window(arg or "…")
            elif name == "/edit":
                if not arg:
                    self.console.info("usage: /edit TEXT (replaces your last question)")
                else:
                    self.edit(arg)
            elif name == "/regen":
                self.regenerate()
            elif name == "/branches":
                self.show_branches()
            elif name == "/usage":
                self.show_usage()
            elif name == "/export":
                self.export(arg)
            elif name == "/erase":
                return not self.erase()
            elif name == "/switch":
                if not arg:
                    self.console.info("usage: /switch MESSAGE_ID (see /branches)")
                else:
                    self.switch_branch(arg)
            else:
                self.console.info(f"unknown command {name}; /help lists the commands")
        except (ApiError, ServerUnreachable) as exc:
            self.console.info(str(exc))
        return True

    # -- a user's data as a whole (PRV-1, PRV-2) ----------------------------------------------------------

    def _whose(self) -> str:
        if not self.api.user:
            raise ApiError(400, "no_user", "your identity names no user (give --user, or a JWT with a sub)")
        return self.api.user

    def _until_done(
        self, read: Callable[[], dict[str, Any]], job: dict[str, Any], what: str
    ) -> dict[str, Any]:
        """`read()` again until the job is done, saying each new status; Ctrl-C stops waiting (the job
        goes on)."""
        deadline = time.monotonic() + JOB_WAIT_S
        pause, shown = 0.2, ""
        while job.get("status") != "done":
            state = f"{what}: {job.get('status')}" + (f", {job['phase']}" if job.get("phase") else "")
            if state != shown:
                self.console.info(f"  {state}…")
                shown = state
            if time.monotonic() > deadline:
                raise ApiError(504, "job_not_done", f"{what} is still {job.get('status')}; ask again later")
            time.sleep(pause)
            pause = min(pause * 1.5, 2.0)
            job = read()
        return job

    def export(self, path: str) -> None:
        user = self._whose()
        job = self.api.request_export(user)
        export_id = str(job["export_id"])
        self.console.info(f"export {export_id} of {user} started")
        job = self._until_done(lambda: self.api.get_export(user, export_id), job, f"export {export_id}")
        target = Path(path).expanduser() if path else Path(f"chat-export-{export_id}.json.gz")
        size = self.api.download(str(job["url"]), target)
        counts = job.get("counts") or {}
        self.console.info(
            f"export {export_id}: {counts.get('conversations', 0)} conversations, "
            f"{counts.get('messages', 0)} messages, {size} bytes -> {target}"
        )

    def erase(self) -> bool:
        """True once the user's data is erased (the session then ends)."""
        user = self._whose()
        self.console.info(
            f"This erases ALL the data of {user}: every conversation, message, fact and file, for good."
        )
        if self.interactive_input:
            typed = input(f"Type {user} to confirm (anything else cancels): ")
        else:
            typed = sys.stdin.readline().rstrip("\n")
        if typed.strip() != user:
            self.console.info("not confirmed; nothing was erased")
            return False
        receipt = self._until_done(
            lambda: self.api.get_erasure(user), self.api.request_erasure(user), "erasure"
        )
        counts = receipt.get("counts") or {}
        self.console.info(
            f"erased {user} at {receipt.get('finished_at')}: {counts.get('items', 0)} items, "
            f"{counts.get('objects', 0)} files, {counts.get('jobs', 0)} jobs, "
            f"{counts.get('passes', 0)} passes "
            f"(asked by {receipt.get('requested_by')} at {receipt.get('requested_at')})"
        )
        self.erased = True
        return True

    # -- usage and budget (COST-3, COST-4) -------------------------------------------------------------

    def show_usage(self) -> None:
        report = self.api.usage()
        day = report.get("days") or []
        models = day[0]["models"] if day else []
        self.console.info(f"usage of {report.get('user_id')} on {report.get('to')} (UTC):")
        if not models:
            self.console.info("  nothing yet")
        for row in models:
            cost = row["cost"]["usd"]
            unpriced = f", {row['unpriced_calls']} unpriced" if row.get("unpriced_calls") else ""
            self.console.info(
                f"  {row['model']}: {row['calls']} calls, {row['total_tokens']} tokens "
                f"({row['prompt_tokens']} in, {row['cached_tokens']} cached, "
                f"{row['completion_tokens']} out), {cost}{unpriced}"
            )
        totals = report.get("totals") or {}
        if len(models) > 1:
            spent = totals["cost"]["usd"]
            self.console.info(f"  all models: {totals.get('total_tokens', 0)} tokens, {spent}")
        budget = report.get("budget") or {}
        limits = {k: v for k, v in (budget.get("limits") or {}).items() if v is not None}
        if limits:
            shown = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in limits.items())
            state = "OVER: posts are refused until it resets" if budget.get("over") else "within budget"
            self.console.info(f"  budget: {shown} — {state}")

    # -- branches (API-18) ---------------------------------------------------------------------------

    def _active_path(self) -> list[dict[str, Any]]:
        detail = self.api.get_conversation(self.session.session_id, limit=200)
        return list(detail.get("messages") or [])

    def _last(self, role: str) -> dict[str, Any] | None:
        return next((m for m in reversed(self._active_path()) if m.get("role") == role), None)

    def _show_answer(self, body: Mapping[str, Any]) -> None:
        answer = body.get("assistant_message") or {}
        if answer.get("status") == "ok":
            self.console.reply(str(answer.get("content") or ""))
            usage = answer.get("usage") or {}
            self.console.info(
                f"  [{answer.get('message_id')}] prompt {usage.get('prompt_tokens', 0)}, "
                f"completion {usage.get('completion_tokens', 0)} tokens"
            )
        else:
            self.console.info(str((answer.get("error") or {}).get("message") or "the turn failed"))

    def edit(self, text: str) -> None:
        question = self._last("user")
        if question is None:
            self.console.info("nothing to edit yet: ask something first")
            return
        self._show_answer(self.api.edit_message(self.session.session_id, question["message_id"], text))

    def regenerate(self) -> None:
        answer = self._last("assistant")
        if answer is None:
            self.console.info("no answer to regenerate yet")
            return
        self._show_answer(self.api.regenerate(self.session.session_id, answer["message_id"]))

    def _tree(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.api.tree(self.session.session_id, cursor=cursor)
            messages += page.get("messages") or []
            cursor = page.get("next_cursor")
            if not cursor:
                return messages

    def show_branches(self) -> None:
        messages = self._tree()
        if not messages:
            self.console.info("no messages yet")
            return
        depth: dict[str, int] = {}
        for message in messages:
            parent = message.get("parent_id")
            siblings = 0
            if parent is not None:
                owner = next((m for m in messages if m["message_id"] == parent), None)
                siblings = len(owner.get("children") or []) if owner else 0
            base = depth.get(parent, -1) if parent is not None else -1
            depth[message["message_id"]] = base + (1 if siblings > 1 or parent is None else 0)
            mark = "*" if message.get("active") else " "
            gone = " (deleted)" if message.get("deleted_at") else ""
            flat = " ".join(str(message.get("content") or "").split())
            short = flat if len(flat) <= 60 else flat[:59] + "…"
            indent = "  " * max(0, depth[message["message_id"]])
            self.console.info(
                f"{mark} {indent}{message['message_id'][-8:]}  {message.get('role', '?'):<9} {short}{gone}"
            )

    def switch_branch(self, wanted: str) -> None:
        matches = [m for m in self._tree() if m["message_id"].endswith(wanted.upper())]
        if len(matches) != 1:
            self.console.info(f"{len(matches)} messages match {wanted!r}; /branches lists their ids")
            return
        self.api.set_active(self.session.session_id, matches[0]["message_id"])
        self.console.info(f"active path now ends at {matches[0]['message_id']}")

    def switch(self, conversation_id: str | None) -> None:
        new = ChatSession.open(
            self.api, mode="interactive", options=self.options, conversation_id=conversation_id
        )
        self.finish()
        self.session = new
        self.announce()

    def list_conversations(self) -> None:
        page = self.api.list_conversations(limit=20)
        items = page.get("items") or []
        if not items:
            self.console.info("no conversations yet")
            return
        for item in items:
            mark = "*" if item.get("conversation_id") == self.session.session_id else " "
            title = item.get("title") or "(untitled)"
            self.console.info(
                f"{mark} {item.get('conversation_id')}  {item.get('updated_at')}  "
                f"{item.get('message_count', 0):>4} msgs  {title}"
            )
        if page.get("next_cursor"):
            self.console.info("  (more: only the 20 most recent are shown)")

    def show_window(self, text: str) -> None:
        preview = self.session.preview(text)
        self.console.info(
            f"window for a next message {text!r}: {len(preview.messages)} messages, "
            f"{preview.prompt_tokens} prompt tokens ({self.session.counter.encoding}, chat format)"
        )
        for message, count in zip(preview.messages, preview.per_message, strict=True):
            content = str(message.get("content") or "")
            flat = " ".join(content.split())
            short = flat if len(flat) <= 70 else flat[:69] + "…"
            self.console.info(f"  {message.get('role', '?'):<9} {count:>6}  {short}")
        dropped = preview.stats.get("dropped") or []
        if dropped:
            self.console.info(f"  dropped from the window: {len(dropped)} older message(s)")
        limit = self.options.max_prompt_tokens
        if limit is not None:
            self.console.info(
                f"  --max-prompt-tokens {limit}: {'OK' if preview.prompt_tokens <= limit else 'OVER'}"
            )


def _question(args: argparse.Namespace, console: Console) -> str | None:
    if args.question:
        return " ".join(args.question)
    if args.once and not _isatty(sys.stdin):
        text = sys.stdin.read().strip()
        return text or None
    return None


def run_once(api: ChatApi, console: Console, options: SessionOptions, args: argparse.Namespace) -> int:
    question = _question(args, console)
    if not question:
        console.info("chat: --once needs a question, as an argument or on stdin")
        return EXIT_USAGE
    session = ChatSession.open(api, mode="once", options=options, conversation_id=args.conversation)
    console.info(f"session {session.session_id}")
    try:
        stream = None if args.json or args.no_stream else console.piece
        result = session.run_turn(
            question, waiting=console.thinking, on_warning=console.info, on_delta=stream
        )
    finally:
        session.close()
    if args.json and result.response is not None:
        console.reply(json.dumps(result.response, ensure_ascii=False, indent=2))
        if result.status != "ok":
            console.info(result.error or "the turn failed")
    else:
        render_turn(console, result, verbose=False)
    return _exit_code(result)


def take_ctrl_c() -> None:
    """At a terminal, Ctrl-C stops waiting for the model, whatever SIGINT disposition the CLI inherited.

    A program started in the background of a non-interactive shell (a script's `cmd &`, a CI runner, some
    IDE launchers) inherits SIGINT *ignored*, and Python then never turns Ctrl-C into KeyboardInterrupt:
    a slow reply could not be interrupted, and the turn ran to its end as if the key was never pressed.
    """
    if sys.stdin.isatty():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    take_ctrl_c()
    console = Console(spinner=not args.no_spinner)
    if (
        args.max_prompt_tokens is not None
        and args.warn_prompt_tokens is not None
        and args.warn_prompt_tokens > args.max_prompt_tokens
    ):
        console.info("chat: --warn-prompt-tokens should not be above --max-prompt-tokens")
        return EXIT_USAGE
    user = args.user or (None if args.token else _default_user())
    options = SessionOptions(
        model=args.model,
        system_prompt=args.system,
        title=args.title,
        tokenizer_model=args.tokenizer_model,
        max_prompt_tokens=args.max_prompt_tokens,
        warn_prompt_tokens=args.warn_prompt_tokens,
        log_dir=args.log_dir,
    )
    api = ChatApi(args.api, user=user, token=args.token, timeout_s=args.timeout)
    try:
        if args.once:
            return run_once(api, console, options, args)
        first = _question(args, console)
        session = ChatSession.open(
            api, mode="interactive", options=options, conversation_id=args.conversation
        )
        repl = Repl(api, console, options, session)
        repl.stream = not args.no_stream
        return repl.run(first)
    except ServerUnreachable as exc:
        console.info(f"chat: {exc}")
        return EXIT_UNREACHABLE
    except ApiError as exc:
        console.info(f"chat: {exc}")
        return EXIT_TURN_FAILED
    except TokenizerChoiceError as exc:
        console.info(f"chat: --tokenizer-model: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.info("")
        return 130
    except OSError as exc:
        console.info(f"chat: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "))
        return EXIT_TURN_FAILED
    finally:
        api.close()


if __name__ == "__main__":
    sys.exit(main())
