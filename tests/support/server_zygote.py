"""A parent that has already imported what every `chat-local-server` imports, and forks a server per test.

About 60 local servers start during the suite; each spent 2 to 2.5 s of CPU before its banner, most of it
importing moto, botocore, Powertools and chat_core and parsing botocore's service models. This process
does that once per pytest worker; each server is then a fork of it that runs `chat_local.server.main`
with the test's arguments, environment, working directory and output pipe, and ends as the interpreter
normally ends (atexit, non-daemon threads joined). What it preloads reads no environment at import:
chat_core reads its settings when a runtime is built (chat_core.config), the handlers' own modules are
imported in the server as before, under the test's environment.

Protocol, one Unix-socket connection per server: the client sends one JSON line (argv, env, cwd, session)
with two descriptors (stdin, stdout+stderr); the zygote answers `{"pid": N}` once forked, then
`{"exit": code, "cpu": seconds}` (code as `Popen.returncode`: negative for a signal; the server's user
and system CPU, its reaped children's included) when the server has ended. The
zygote leaves when its stdin closes (the pytest worker that started it has gone).

Run as a script by tests/support/local_server.py (`_Zygote`); never by the product.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import selectors
import socket
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _preload() -> None:
    """Import what a server imports before its banner, and parse the botocore models its clients use."""
    # As the console script's interpreter would see it: its own folder first, not this one.
    sys.path[0] = str(Path(sys.executable).parent)
    import boto3
    import chat_local.server  # noqa: F401 - moto comes in lazily, below
    from chat_local.botocore_data import share_botocore_data

    share_botocore_data()
    session = boto3.session.Session(
        aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1"
    )
    for service in ("dynamodb", "dynamodbstreams", "sqs", "s3", "lambda", "sts"):
        session.client(service, endpoint_url="http://127.0.0.1:9")  # parses the model; sends nothing
    import moto.dynamodb.responses
    import moto.dynamodbstreams.responses
    import moto.moto_server.werkzeug_app
    import moto.s3.responses
    import moto.sqs.responses  # noqa: F401
    import werkzeug.serving  # noqa: F401

    # The libraries and chat_core modules the handlers import by name (not the handlers, nor their
    # sibling modules: those are imported by the server, as before, under the test's environment).
    for module in sorted(_handler_imports()):
        with contextlib.suppress(ImportError):
            __import__(module)


def _handler_imports() -> set[str]:
    names: set[str] = set()
    for app in sorted((REPO / "functions").glob("*/*.py")):
        siblings = {p.stem for p in app.parent.glob("*.py")}
        for node in ast.walk(ast.parse(app.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found = [node.module]
            else:
                continue
            names.update(name for name in found if name.split(".")[0] not in siblings)
    return names


def _serve(listener: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """Until stdin closes: fork a server per request. In a child, returns what it must run."""
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin, selectors.EVENT_READ, "stdin")
    waiting: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    while True:
        for key, _ in selector.select():
            if key.data == "stdin":
                if not os.read(sys.stdin.fileno(), 4096):
                    return None
            elif key.data == "accept":
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 2)
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    for _, other in waiting.values():
                        other.close()
                    for pidfd in waiting:
                        os.close(pidfd)
                    conn.close()
                    return request, fds
                for fd in fds:
                    os.close(fd)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                pidfd = os.pidfd_open(pid)
                waiting[pidfd] = (pid, conn)
                selector.register(pidfd, selectors.EVENT_READ, "exit")
            else:
                pidfd = key.fd
                pid, conn = waiting.pop(pidfd)
                selector.unregister(pidfd)
                os.close(pidfd)
                _, status, usage = os.wait4(pid, 0)
                ended = {"exit": os.waitstatus_to_exitcode(status), "cpu": usage.ru_utime + usage.ru_stime}
                with contextlib.suppress(OSError):  # the test has gone
                    conn.sendall(json.dumps(ended).encode() + b"\n")
                conn.close()


def _become_server(request: dict[str, Any], fds: list[int]) -> int:
    stdin, output = fds
    if request.get("session"):
        os.setsid()
    os.dup2(stdin, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(stdin)
    os.close(output)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.stdout.reconfigure(line_buffering=True, write_through=True)
    sys.stderr.reconfigure(line_buffering=True, write_through=True)
    from chat_local.server import main

    return main(sys.argv[1:])


if __name__ == "__main__":
    _preload()
    path = sys.argv[1]
    server_socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server_socket.bind(path)
    server_socket.listen(16)
    print("ready", flush=True)
    forked = _serve(server_socket)
    if forked is None:
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
        sys.exit(0)
    sys.exit(_become_server(*forked))
