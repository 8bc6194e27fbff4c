"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scriptable failure modes, for tests and demos.

In tests::

    with OpenAIStandin(mode="ok") as standin:
        settings = Settings(llm_base_url=standin.base_url)
        ...
        standin.set_mode("error500")          # or POST {base_url}/_control {"mode": "error500"}
        assert standin.requests[-1].json["messages"][-1]["content"] == "hi"

Standalone (prints its URL; point LLM_BASE_URL at it)::

    python -m tests.support.openai_standin --port 8089 --mode ok

Modes (``MODES``):
  ok          200, deterministic reply mentioning the last user message, with usage; when the request
              offers `tools` (tool_choice not "none") and ends with a user message, a call of the
              named (else the first) tool instead, like a real model
  no_usage    like ok, without a ``usage`` object (TOK-6)
  partial_usage like ok, usage has only ``prompt_tokens``
  error500    500 with an OpenAI-style error JSON body
  error429    429 with ``Retry-After`` (``retry_after`` seconds) every time
  bad_request 400 with an OpenAI-style error JSON body (not retryable)
  malformed   200 with a body that is not JSON
  no_choices  200 with JSON that has no ``choices``
  wrong_types 200 with JSON whose ``choices[0].message.content`` is a number
  slow        sleeps ``slow_seconds`` (or until ``release()``) then answers like ok
  flaky       the first ``flaky_failures`` requests answer ``flaky_status`` (500 or 429), then ok
  huge        200 with a valid JSON body of about ``huge_bytes`` bytes
  huge_error  500 with a body of about ``huge_bytes`` bytes
  tool_call   200 with an assistant message that has ``tool_calls`` and ``content: null``
  canned      200 with the body set by the ``canned`` control key, verbatim (recorded provider answers)
  stream_cut  like ok, but a streamed answer stops after half its chunks: the connection closes with
              no finish reason and no [DONE] (a stream that breaks)

A request with ``"stream": true`` is answered (ok, tool_call, stream_cut) as Server-Sent Events: one
chunk per word (tool calls in two argument pieces), the finish chunk, the usage chunk when
``stream_options.include_usage`` is set, then ``data: [DONE]``; ``chunk_delay`` seconds between chunks.

Endpoints: ``POST /v1/chat/completions`` (also ``/chat/completions``), ``POST /v1/embeddings`` (also
``/embeddings``: a unit vector of two dimensions per input, the API key checked), ``GET /v1/models`` (also
``/models``), ``POST /_control`` (JSON with any of mode, slow_seconds, flaky_failures, flaky_status,
retry_after, huge_bytes, api_key, reply, canned, reset), ``GET /_requests`` (what was received, as JSON).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = (
    "ok",
    "no_usage",
    "partial_usage",
    "error500",
    "error429",
    "bad_request",
    "malformed",
    "no_choices",
    "wrong_types",
    "slow",
    "flaky",
    "huge",
    "huge_error",
    "tool_call",
    "canned",
    "stream_cut",
)

DEFAULT_MODEL = "standin-model"
_CONTROL_KEYS = (
    "mode",
    "slow_seconds",
    "flaky_failures",
    "flaky_status",
    "retry_after",
    "huge_bytes",
    "api_key",
    "reply",
    "canned",
    "chunk_delay",
)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the stand-in received, for asserting what the client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float  # time.monotonic() in this process
    client_port: int  # the same port on two requests means the client reused its connection

    @property
    def json(self) -> Any:
        """The body parsed as JSON (None when the body is empty or not JSON)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "client_port": self.client_port,
            "headers": self.headers,
            "json": self.json,
            "body": None if self.json is not None else self.body.decode("utf-8", "replace"),
        }


@dataclass
class _State:
    mode: str = "ok"
    slow_seconds: float = 5.0
    flaky_failures: int = 2
    flaky_status: int = 500
    retry_after: float | None = 1.0
    huge_bytes: int = 3_000_000
    api_key: str | None = None
    reply: str | None = None  # a fixed reply text instead of the echo
    canned: dict[str, Any] | None = None  # the whole body "canned" mode answers
    chunk_delay: float = 0.0  # seconds between the chunks of a streamed answer
    completions_seen: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)


def _approx_tokens(text: str) -> int:
    # Deterministic and dependency-free on purpose: the stand-in is not a tokenizer.
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4 if text else 0


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def reply_text(messages: list[Any]) -> str:
    """The deterministic ok-mode reply: says it is the stand-in and quotes the last user message."""
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    last = _text_of(users[-1].get("content")) if users else ""
    quoted = last if len(last) <= 200 else last[:200] + "…"
    return f'Stand-in reply: you said "{quoted}" ({len(messages)} messages received).'


def stream_chunks(body: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A whole answer as the chunks a streaming model sends: the role, one chunk per word of the content
    (tool calls: name, then the arguments in two pieces), the finish, then the usage if asked for."""
    head = {k: body[k] for k in ("id", "created", "model") if k in body}
    head["object"] = "chat.completion.chunk"
    choice = body["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    chunks += [chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(text.split(" ")) if text]
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        function = {"name": call["function"]["name"], "arguments": arguments[:half]}
        chunks.append(
            chunk(
                {"tool_calls": [{"index": index, "id": call["id"], "type": "function", "function": function}]}
            )
        )
        chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]}))
    chunks.append(chunk({}, choice.get("finish_reason") or "stop"))
    if include_usage and body.get("usage"):
        chunks.append({**head, "choices": [], "usage": body["usage"]})
    return chunks


def tool_call_for(request: dict[str, Any], messages: list[Any]) -> dict[str, Any] | None:
    """Like a real model, ok mode calls a tool only when the request offers `tools` (and `tool_choice`
    is not "none") and the last message is the user's: the named tool, else the first, with the user's
    words as the value of its first parameter."""
    tools = request.get("tools") or []
    choice = request.get("tool_choice", "auto")
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if not tools or choice == "none" or last.get("role") != "user":
        return None
    function = tools[0].get("function", {})
    if isinstance(choice, dict):
        wanted = choice.get("function", {}).get("name")
        function = next(
            (t["function"] for t in tools if t.get("function", {}).get("name") == wanted), function
        )
    properties = list((function.get("parameters") or {}).get("properties") or {})
    arguments = {properties[0]: _text_of(last.get("content"))} if properties else {}
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:12]
    return {
        "id": f"call_{digest}",
        "type": "function",
        "function": {"name": function.get("name", ""), "arguments": json.dumps(arguments)},
    }


class _Handler(BaseHTTPRequestHandler):
    server: _StandinHTTPServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY each reply waits ~40 ms on
    # the client's delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    # -- plumbing ---------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _record(self, body: bytes) -> RecordedRequest:
        rec = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            received_at=time.monotonic(),
            client_port=int(self.client_address[1]),
        )
        with self.server.lock:
            self.server.state.requests.append(rec)
        return rec

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("x-request-id", f"standin-{len(self.server.state.requests)}")
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            # Large bodies go out in pieces so a client that stops reading early is noticed.
            for start in range(0, len(body), 65536):
                self.wfile.write(body[start : start + 65536])
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_stream(self, body: dict[str, Any], include_usage: bool, *, cut: bool, delay: float) -> None:
        """`body` as a Chat Completions stream (Server-Sent Events, chunked); `cut` stops half way."""
        chunks = stream_chunks(body, include_usage)
        if cut:
            chunks = chunks[: max(1, len(chunks) // 2)]
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                data = b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                if delay and self.server.stopping.wait(delay):
                    return
            if not cut:
                data = b"data: [DONE]\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), "application/json", extra)

    def _error(self, status: int, message: str, err_type: str, extra: dict[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": err_type, "param": None, "code": None}}
        self._send_json(status, body, extra)

    # -- routes -----------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record(b"")
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/models", "/v1/models"):
            self._send_json(
                200,
                {"object": "list", "data": [{"id": DEFAULT_MODEL, "object": "model", "owned_by": "standin"}]},
            )
        elif path == "/_requests":
            with self.server.lock:
                recorded = [r.to_dict() for r in self.server.state.requests]
            self._send_json(200, recorded)
        else:
            self._error(404, f"no route GET {path}", "not_found")

    def do_POST(self) -> None:
        body = self._read_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_control":
            self._control(body)
            return
        self._record(body)
        if path in ("/embeddings", "/v1/embeddings"):
            self._embeddings(body)
            return
        if path not in ("/chat/completions", "/v1/chat/completions"):
            self._error(404, f"no route POST {path}", "not_found")
            return
        self._completion(body)

    def _read_request(self, body: bytes, field: str) -> tuple[dict[str, Any], list[Any]] | None:
        """The request and its list `field`, or None once a 401 (wrong key) or 400 (bad body) is sent."""
        state = self.server.state
        if state.api_key is not None and self.headers.get("Authorization") != f"Bearer {state.api_key}":
            self._error(401, "Incorrect API key provided.", "invalid_request_error")
            return None
        try:
            request = json.loads(body)
            items = request[field]
            if not isinstance(items, list):
                raise TypeError(f"{field} must be a list")
        except (ValueError, KeyError, TypeError) as exc:
            self._error(400, f"invalid request body: {exc}", "invalid_request_error")
            return None
        return request, items

    def _embeddings(self, body: bytes) -> None:
        """A unit vector per input (its two dimensions from the input's hash), whatever the mode."""
        read = self._read_request(body, "input")
        if read is None:
            return
        request, inputs = read
        data = []
        for index, text in enumerate(inputs):
            turn = hashlib.sha256(str(text).encode("utf-8")).digest()[0] / 255
            data.append(
                {"object": "embedding", "index": index, "embedding": [turn, (1 - turn * turn) ** 0.5]}
            )
        used = sum(_approx_tokens(str(text)) for text in inputs)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": str(request.get("model") or "standin-embeddings"),
                "usage": {"prompt_tokens": used, "total_tokens": used},
            },
        )

    def _control(self, body: bytes) -> None:
        try:
            update = json.loads(body or b"{}")
            if not isinstance(update, dict):
                raise ValueError("control body must be a JSON object")
            self.server.configure(**update)
        except (ValueError, TypeError) as exc:
            self._error(400, str(exc), "invalid_request_error")
            return
        self._send_json(200, self.server.snapshot())

    def _completion(self, body: bytes) -> None:
        state = self.server.state
        with self.server.lock:
            state.completions_seen += 1
            seen = state.completions_seen
            mode = state.mode
        read = self._read_request(body, "messages")
        if read is None:
            return
        request, messages = read
        model = str(request.get("model") or DEFAULT_MODEL)

        if mode == "slow" and self.server.hold(state.slow_seconds):
            return
        if mode == "flaky" and seen <= state.flaky_failures:
            mode = "error429" if state.flaky_status == 429 else "error500"

        if mode == "error500":
            self._error(500, "The server had an error while processing your request.", "server_error")
        elif mode == "error429":
            extra = {} if state.retry_after is None else {"Retry-After": f"{state.retry_after:g}"}
            self._error(429, "Rate limit reached, please retry later.", "rate_limit_error", extra)
        elif mode == "bad_request":
            self._error(400, "Invalid value for 'messages'.", "invalid_request_error")
        elif mode == "malformed":
            self._send(200, b"<html><body>502 Bad Gateway (upstream said hello)</body></html>", "text/html")
        elif mode == "no_choices":
            self._send_json(200, {"id": "chatcmpl-standin", "object": "chat.completion", "model": model})
        elif mode == "huge_error":
            self._send(500, b"E" * state.huge_bytes, "text/plain")
        elif mode == "canned":
            self._send_json(200, state.canned or {})
        else:
            body = self._completion_body(
                "ok" if mode == "stream_cut" else mode, model, messages, state.huge_bytes, state.reply
            )
            if mode in ("ok", "stream_cut"):
                call = tool_call_for(request, messages)
                if call is not None:
                    body["choices"][0]["message"] = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [call],
                    }
                    body["choices"][0]["finish_reason"] = "tool_calls"
            if request.get("stream") is True:
                include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
                self._send_stream(body, include_usage, cut=mode == "stream_cut", delay=state.chunk_delay)
            else:
                self._send_json(200, body)

    @staticmethod
    def _completion_body(
        mode: str, model: str, messages: list[Any], huge_bytes: int, reply: str | None = None
    ) -> dict[str, Any]:
        text = reply if reply is not None else reply_text(messages)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        if mode == "huge":
            message["content"] = "x" * huge_bytes
        elif mode == "wrong_types":
            message["content"] = 12345
        elif mode == "tool_call":
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_standin_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            }
            finish = "tool_calls"
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
        body: dict[str, Any] = {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        prompt = sum(_approx_tokens(_text_of(m.get("content"))) + 4 for m in messages if isinstance(m, dict))
        completion = _approx_tokens(text)
        if mode == "partial_usage":
            body["usage"] = {"prompt_tokens": prompt}
        elif mode != "no_usage":
            body["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return body


class _StandinHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: _State, verbose: bool) -> None:
        super().__init__(address, _Handler)
        self.state = state
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.released = threading.Event()
        self.verbose = verbose

    def hold(self, seconds: float) -> bool:
        """A slow answer's wait: `seconds`, or until released; True if the server is stopping."""
        deadline = time.monotonic() + seconds
        while not self.released.is_set() and (remaining := deadline - time.monotonic()) > 0:
            if self.stopping.wait(min(remaining, 0.02)):
                return True
        return self.stopping.is_set()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gives up (timeout, size limit) resets its connection; that is expected here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def configure(self, **update: Any) -> None:
        unknown = set(update) - {*_CONTROL_KEYS, "reset"}
        if unknown:
            raise ValueError(f"unknown control keys: {sorted(unknown)}")
        mode = update.get("mode")
        if mode is not None and mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        with self.lock:
            if "mode" in update or "slow_seconds" in update:
                self.released.clear()
            if update.pop("reset", False):
                self.released.clear()
                self.state.reply = None
                self.state.chunk_delay = 0.0
                self.state.requests.clear()
                self.state.completions_seen = 0
            if "mode" in update:
                # A new mode starts a new script: flaky counts from here.
                self.state.completions_seen = 0
            for key, value in update.items():
                setattr(self.state, key, value)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {key: getattr(self.state, key) for key in _CONTROL_KEYS} | {
                "requests": len(self.state.requests)
            }


class OpenAIStandin:
    """The stand-in server, run on a background thread; use as a context manager or start()/stop()."""

    def __init__(
        self,
        mode: str = "ok",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        slow_seconds: float = 5.0,
        flaky_failures: int = 2,
        flaky_status: int = 500,
        retry_after: float | None = 1.0,
        huge_bytes: int = 3_000_000,
        api_key: str | None = None,
        verbose: bool = False,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        state = _State(
            mode=mode,
            slow_seconds=slow_seconds,
            flaky_failures=flaky_failures,
            flaky_status=flaky_status,
            retry_after=retry_after,
            huge_bytes=huge_bytes,
            api_key=api_key,
        )
        self._server = _StandinHTTPServer((host, port), state, verbose)
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> OpenAIStandin:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._server.stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> OpenAIStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """http://127.0.0.1:PORT (no path)."""
        return f"http://{self._server.server_address[0]}:{self.port}"

    @property
    def base_url(self) -> str:
        """What LLM_BASE_URL should be: requests go to {base_url}/chat/completions."""
        return f"{self.root_url}/v1"

    # -- scripting and inspection -----------------------------------------------------------------

    @property
    def mode(self) -> str:
        return self._server.state.mode

    @mode.setter
    def mode(self, value: str) -> None:
        self.set_mode(value)

    def set_mode(self, mode: str, **options: Any) -> None:
        """Switch mode (and any option: slow_seconds, flaky_failures, ...); flaky counts restart."""
        self._server.configure(mode=mode, **options)

    def configure(self, **options: Any) -> None:
        self._server.configure(**options)

    def release(self) -> None:
        """Answer every slow request now, waiting or yet to come (until the mode or slow_seconds is set):
        a test that needs a request in flight holds it with a long slow_seconds and ends it with this
        rather than racing a short one."""
        self._server.released.set()

    def reset(self) -> None:
        """Forget recorded requests and the flaky counter."""
        self._server.configure(reset=True)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.lock:
            return list(self._server.state.requests)

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        """Only the POSTs to .../chat/completions."""
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/chat/completions")]

    def iter_sent_messages(self) -> Iterator[list[dict[str, Any]]]:
        """The ``messages`` list of every completion request, in arrival order."""
        for rec in self.completion_requests:
            body = rec.json
            if isinstance(body, dict) and isinstance(body.get("messages"), list):
                yield body["messages"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.openai_standin",
        description="An OpenAI-compatible stand-in server on 127.0.0.1 with scriptable failure modes.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089, help="0 picks a free port")
    parser.add_argument("--mode", default="ok", choices=MODES)
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    parser.add_argument("--flaky-failures", type=int, default=2)
    parser.add_argument("--flaky-status", type=int, default=500, choices=(500, 429))
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--huge-bytes", type=int, default=3_000_000)
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--quiet", action="store_true", help="no per-request log lines")
    args = parser.parse_args(argv)

    standin = OpenAIStandin(
        args.mode,
        host=args.host,
        port=args.port,
        slow_seconds=args.slow_seconds,
        flaky_failures=args.flaky_failures,
        flaky_status=args.flaky_status,
        retry_after=args.retry_after,
        huge_bytes=args.huge_bytes,
        api_key=args.api_key,
        verbose=not args.quiet,
    )
    print(f"OpenAI-compatible stand-in ({args.mode} mode) listening on {standin.base_url}", flush=True)
    print(f"  export LLM_BASE_URL={standin.base_url}", flush=True)
    print(
        f'  switch mode: curl -s -X POST {standin.root_url}/_control -d \'{{"mode": "error500"}}\'',
        flush=True,
    )
    try:
        standin._server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        standin._server.stopping.set()
        standin._server.server_close()


if __name__ == "__main__":
    main()
