"""TOK-3: the encodings ship in the layer, match tiktoken's own files and load with no network."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public
from chat_core.engine import tokens
from chat_core.engine.tokens import encodings
from chat_core.errors import TokenizerUnavailable

REPO = Path(__file__).resolve().parents[2]
SAMPLES = [
    "hello world",
    "tiktoken is great!",
    "<|endoftext|> is a special token, <|fim_prefix|> too",
    "上下文管理系统负责管理对话历史消息，智能裁剪以适应模型的 token 限制。",
    "def f(x):\n    return {'a': [1, 2, 3]}  # 🎉👨‍👩‍👧\n",
    "Ünïcödé, кириллица, ελληνικά, العربية, हिन्दी, ไทย, 한국어, 日本語",
]


def official_spec(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, str]]:
    """Run tiktoken's own constructor for `name`, its loader pointed at the shipped file, no network.

    Returns the constructor's result and what it asked the loader for (the URL and expected_hash).
    tiktoken's own load_tiktoken_bpe parses the file and checks the hash; its download cache is off.
    """
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    asked: dict[str, str] = {}
    shipped = encodings.ENCODINGS_DIR / f"{name}.tiktoken"

    def load_from_layer(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        asked.update(url=url, expected_hash=expected_hash or "")
        return tiktoken.load.load_tiktoken_bpe(str(shipped), expected_hash=expected_hash)

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load_from_layer)
    spec: dict[str, Any] = openai_public.ENCODING_CONSTRUCTORS[name]()
    return spec, asked


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tok3_shipped_file_has_tiktokens_expected_sha256(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the file shipped in the layer and tiktoken's official constructor for the same encoding
    data = (encodings.ENCODINGS_DIR / f"{name}.tiktoken").read_bytes()
    # When the constructor asks for its file
    _, asked = official_spec(name, monkeypatch)
    # Then it is the same file name and the shipped bytes have exactly the hash tiktoken expects
    assert asked["url"].rsplit("/", 1)[-1] == f"{name}.tiktoken"
    assert hashlib.sha256(data).hexdigest() == asked["expected_hash"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tok3_encoding_equals_tiktokens_official_encoding(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given tiktoken's official encoding (its constructor, its parser, its hash check)
    spec, _ = official_spec(name, monkeypatch)
    official = tiktoken.Encoding(**spec)
    # When chat_core builds the same encoding from the layer
    ours = tokens.get_encoding(name)
    # Then pattern, special tokens and ranks are the official ones, and so are the encodings of texts
    assert ours.name == spec["name"]
    assert ours._pat_str == spec["pat_str"]
    assert ours._special_tokens == spec["special_tokens"]
    assert ours._mergeable_ranks == spec["mergeable_ranks"]
    for text in SAMPLES:
        assert ours.encode_ordinary(text) == official.encode(text, disallowed_special=())


def test_tok3_known_token_ids_from_tiktoken_and_the_openai_cookbook() -> None:
    # Given texts whose ids are published (tiktoken's tests, OpenAI's cookbook)
    cl100k, o200k = tokens.get_encoding("cl100k_base"), tokens.get_encoding("o200k_base")
    # When encoded with the shipped encodings
    # Then the ids are the published ones
    assert cl100k.encode("hello world") == [15339, 1917]
    assert cl100k.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert o200k.encode("tiktoken is great!") == [83, 8251, 2488, 382, 2212, 0]


def test_tok3_loads_lazily_with_no_network_cache_or_environment(tmp_path: Path) -> None:
    """A fresh interpreter with sockets blocked, no tiktoken cache variables and an empty temp dir."""
    # Given a process where any connection attempt fails and tiktoken has no cache to fall back on
    script = textwrap.dedent(
        """
        import socket, sys

        def refuse(*args, **kwargs):
            raise AssertionError("network access attempted")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from chat_core.engine import tokens
        from chat_core.engine.tokens import encodings
        assert "tiktoken" not in sys.modules, "import must not load tiktoken"
        assert encodings._loaded == {}, "import must not load an encoding"
        print(tokens.count_tokens("hello world", "gpt-4"), tokens.count_tokens("hello world", "gpt-4o"))
        print(sorted(encodings._loaded))
        """
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    # When it counts tokens for a cl100k and an o200k model
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    # Then both counts are right, nothing was downloaded or cached, and nothing was written to disk
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["2 2", "['cl100k_base', 'o200k_base']"]
    assert list(tmp_path.iterdir()) == []


def test_tok3_loaded_once_per_process_even_under_concurrent_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a process where no encoding is loaded yet and a loader that counts its calls
    monkeypatch.setattr(encodings, "_loaded", {})
    calls: list[str] = []
    real_loader = encodings._load_encoding

    def counting_loader(name: str, spec: Any) -> tiktoken.Encoding:
        calls.append(name)
        return real_loader(name, spec)

    monkeypatch.setattr(encodings, "_load_encoding", counting_loader)
    barrier = threading.Barrier(8)
    results: list[tiktoken.Encoding] = []

    def first_use() -> None:
        barrier.wait()
        results.append(tokens.get_encoding("cl100k_base"))

    # When eight threads ask for it at the same moment, and then once more
    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    again = tokens.get_encoding("cl100k_base")
    # Then the file was loaded exactly once and everyone shares the same Encoding
    assert calls == ["cl100k_base"]
    assert all(result is again for result in results)


def test_tok3_tampered_file_is_refused_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a layer whose cl100k file has one rank changed
    data = (encodings.ENCODINGS_DIR / "cl100k_base.tiktoken").read_bytes()
    (tmp_path / "cl100k_base.tiktoken").write_bytes(data.replace(b"IQ== 0\n", b"IQ== 1\n", 1))
    monkeypatch.setattr(encodings, "ENCODINGS_DIR", tmp_path)
    monkeypatch.setattr(encodings, "_loaded", {})
    # When it is loaded
    # Then loading fails, saying which file, which hash and how to fix it
    with pytest.raises(TokenizerUnavailable, match=r"SHA-256 .* expected 223921b7.*build_encodings\.py"):
        tokens.get_encoding("cl100k_base")


def test_tok3_missing_file_is_refused_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a layer without its o200k file
    monkeypatch.setattr(encodings, "ENCODINGS_DIR", tmp_path)
    monkeypatch.setattr(encodings, "_loaded", {})
    # When it is needed
    # Then the error names the file and the script that rebuilds it
    with pytest.raises(
        TokenizerUnavailable, match=r"o200k_base\.tiktoken cannot be read.*build_encodings\.py"
    ):
        tokens.count_tokens("hello", encoding="o200k_base")


def load_build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_encodings", REPO / "scripts" / "build_encodings.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tok3_build_script_expands_npm_bpe_ranks_into_the_tiktoken_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an npm-style bpe_ranks value: two lines, each "! <offset> <b64>...", consecutive ranks
    build = load_build_script()
    bpe_ranks = "! 0 IQ== Ig== Iw==\n! 3 aGVsbG8= IHdvcmxk\n"
    # When the build script converts it
    converted = build.bpe_ranks_to_tiktoken(bpe_ranks)
    # Then every token gets its rank, one "<b64> <rank>" line each, in rank order
    assert converted == b"IQ== 0\nIg== 1\nIw== 2\naGVsbG8= 3\nIHdvcmxk 4\n"
    # And tiktoken's own parser reads it back as those ranks
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    (tmp_path / "mini.tiktoken").write_bytes(converted)
    ranks = tiktoken.load.load_tiktoken_bpe(str(tmp_path / "mini.tiktoken"))
    assert ranks == {b"!": 0, b'"': 1, b"#": 2, b"hello": 3, b" world": 4}


def test_tok3_build_script_rejects_duplicate_ranks_and_reads_tiktokens_hashes() -> None:
    # Given the build script
    build = load_build_script()
    # When the input repeats a rank, it stops instead of writing a wrong file
    with pytest.raises(SystemExit, match="duplicate"):
        build.bpe_ranks_to_tiktoken("! 0 IQ== Ig==\n! 1 Iw==\n")
    # And the hashes it verifies against are the ones in the installed tiktoken, as shipped
    assert build.official_hashes() == {name: encodings._SPECS[name].sha256 for name in build.ENCODINGS}
