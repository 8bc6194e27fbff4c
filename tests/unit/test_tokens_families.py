"""TOK-9, issue 33: exact counts for the open model families, the shipped tokenizers against references.

tests/data/tokens/families.json holds what the reference implementations answer (scripts/
family_reference.py: the HF `tokenizers` library on each family's tokenizer.json, the family's chat
template rendered as the reference library renders it); these tests need neither the library nor
the network.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_core import config
from chat_core.engine import tokens
from chat_core.engine.tokens import encodings, families, stored

from tests.support.runtime import renew

DATA = Path(__file__).resolve().parents[1] / "data" / "tokens"
REFERENCE = json.loads((DATA / "families.json").read_text(encoding="utf-8"))
FAMILIES = sorted(families.FAMILY_SPECS)


def _texts() -> list[str]:
    corpora = [(DATA / name).read_text(encoding="utf-8") for name in REFERENCE["corpora"]]
    return corpora + list(REFERENCE["generated"])


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("MODEL_TOKENIZERS", raising=False)
    monkeypatch.delenv("DEFAULT_ENCODING", raising=False)
    renew()
    yield
    monkeypatch.delenv("MODEL_TOKENIZERS", raising=False)
    renew()


@pytest.mark.parametrize("family", FAMILIES)
def test_family_ids_equal_the_reference_tokenizer_on_mixed_corpora(family: str) -> None:
    # Given English, Chinese, code, chat and other-script corpora and 430 generated strings mixing
    # CJK, kana, emoji and ZWJ sequences, JSON, digits, whitespace runs, control and combining characters
    encoding = tokens.get_encoding(family)
    expected = REFERENCE["ids"][family]
    texts = _texts()
    assert len(texts) == len(expected)
    # When the shipped tokenizer encodes each
    # Then its ids are the reference's, id for id (count and SHA-256 of the id list)
    mismatches = []
    for index, (text, (count, digest)) in enumerate(zip(texts, expected, strict=True)):
        ids = encoding.encode_ordinary(text)
        got = [len(ids), hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]]
        if got != [count, digest]:
            mismatches.append((index, text[:40], got, count))
    assert mismatches == []
    assert tokens.count_tokens(texts[0], encoding=family) == expected[0][0]


@pytest.mark.parametrize("family", ["qwen2", "deepseek_v3", "llama3"])
def test_chat_format_counts_equal_the_family_template(family: str) -> None:
    # Given conversations (system, multi-turn, names, CJK, emoji, code, padded content, empty content)
    chat = REFERENCE["chat"]
    # When they are counted in the family's chat format with the reply primed
    counts = [tokens.count_chat_tokens(c["messages"], encoding=family) for c in chat["conversations"]]
    # Then each equals the length of the prompt the family's template builds, tokenized by the reference
    assert counts == chat[family]["prompt_tokens"]


def test_tekken_chat_format_against_mistral_commons_v3_format() -> None:
    # mistral-common's own chat format for tekken v3 (Mistral NeMo) folds the system prompt into the
    # last user turn; the count here gives it its own [SYSTEM_PROMPT] turn, as the later tekken
    # formats do: 2 tokens more per system message, the same otherwise.
    chat = REFERENCE["chat"]
    for conversation, reference in zip(chat["conversations"], chat["mistral_tekken_v3"], strict=True):
        systems = sum(1 for m in conversation["messages"] if m["role"] == "system")
        ours = tokens.count_chat_tokens(conversation["messages"], encoding="mistral_tekken")
        assert ours == reference + 2 * systems


def test_qwen_tool_calls_results_and_definitions_equal_its_template() -> None:
    chat = REFERENCE["chat"]
    counts = [tokens.count_chat_tokens(c["messages"], encoding="qwen2") for c in chat["tool_conversations"]]
    assert counts == chat["qwen2"]["tool_prompt_tokens"]
    assert tokens.count_tool_tokens(chat["tools"], "Qwen/Qwen3-32B") == chat["qwen2"]["tools_tokens"]


@pytest.mark.parametrize(
    ("model", "encoding", "source"),
    [
        ("deepseek-chat", "deepseek_v3", "family"),
        ("deepseek-reasoner", "deepseek_v3", "family"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek_v3", "family"),
        ("openrouter/deepseek/deepseek-r1", "deepseek_v3", "family"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen2", "family"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "llama3", "family"),
        ("Qwen/Qwen3-32B", "qwen2", "family"),
        ("qwen-plus", "qwen2", "family"),
        ("qwen2.5:7b", "qwen2", "family"),
        ("Qwen/QwQ-32B", "qwen2", "family"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama3", "family"),
        ("llama3.1:8b", "llama3", "family"),
        ("openrouter/meta-llama/llama-4-maverick", "llama4", "family"),
        ("mistral-small-2503", "mistral_tekken", "family"),
        ("open-mistral-nemo", "mistral_tekken", "family"),
        ("gpt-4o", "o200k_base", "openai"),
        ("openrouter/openai/gpt-4o-mini", "o200k_base", "openai"),
        ("mistral-large-latest", "mistral_sp_v7", "family"),
        # families whose tokenizer is not shipped, and names nobody mapped: the default, said so
        ("deepseek-v4-pro", "o200k_base", "default"),
        ("claude-sonnet-4-5", "o200k_base", "default"),
        ("gemini-2.5-pro", "o200k_base", "default"),
        ("my-own-model", "o200k_base", "default"),
    ],
)
def test_the_dated_model_map(model: str, encoding: str, source: str, clean_env: None) -> None:
    resolved = tokens.tokenizer_for_model(model)
    assert (resolved.encoding, resolved.source) == (encoding, source)
    assert resolved.exact is (source != "default")
    assert tokens.encoding_for_model(model) == encoding


def test_a_family_not_shipped_is_named_and_counted_as_an_estimate(clean_env: None) -> None:
    resolved = tokens.tokenizer_for_model("deepseek-v4-pro")
    assert resolved.family == "deepseek_v4"
    assert resolved.family in families.NOT_SHIPPED
    assert not resolved.exact
    assert families.MODEL_MAP_AS_OF  # the aliases are dated


def test_configured_tokenizers_override_the_map(monkeypatch: pytest.MonkeyPatch, clean_env: None) -> None:
    # Given a deployment that counts its fine-tune with Llama 3's tokenizer and DeepSeek V4 with V3's
    monkeypatch.setenv("MODEL_TOKENIZERS", "acme-chat=llama3, deepseek-v4=deepseek_v3,openrouter/x/=qwen2")
    renew()
    assert tokens.tokenizer_for_model("acme-chat-7b").encoding == "llama3"
    assert tokens.tokenizer_for_model("acme-chat-7b").source == "config"
    assert tokens.encoding_for_model("deepseek-v4-pro") == "deepseek_v3"
    assert tokens.encoding_for_model("openrouter/x/anything") == "qwen2"
    assert tokens.encoding_for_model("gpt-4o") == "o200k_base"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("MODEL_TOKENIZERS", "acme=gemma3"),
        ("MODEL_TOKENIZERS", "acme"),
        ("MODEL_TOKENIZERS", "=llama3"),
        ("DEFAULT_ENCODING", "mistral_sentencepiece"),
    ],
)
def test_a_tokenizer_we_do_not_ship_is_refused_at_start(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable):
        config.read_settings()


def test_the_settings_list_of_tokenizers_is_the_shipped_list() -> None:
    assert set(config.SHIPPED_TOKENIZERS) == set(tokens.SHIPPED_ENCODINGS)


def test_sources_manifest_names_every_family_file_and_its_hash() -> None:
    manifest = json.loads((encodings.ENCODINGS_DIR / "SOURCES.json").read_text(encoding="utf-8"))
    specs = {**families.FAMILY_SPECS, **families.SENTENCEPIECE_SPECS}
    assert set(manifest) == set(specs)
    for name, entry in manifest.items():
        data = (encodings.ENCODINGS_DIR / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] == specs[name].sha256
        assert entry["source"]["package"]
        assert entry["source"]["version"]
        assert entry["source"]["member_sha256"]
    notice = (encodings.ENCODINGS_DIR / "NOTICE.txt").read_text(encoding="utf-8")
    assert "Llama 3.3 is licensed under the Llama 3.3 Community License" in notice
    assert "Llama 4 is licensed under the Llama 4 Community License" in notice
    for licence in ("LLAMA3-LICENSE.txt", "LLAMA3.3-LICENSE.txt", "LLAMA4-LICENSE.txt", "APACHE-2.0.txt"):
        assert (encodings.ENCODINGS_DIR / "licenses" / licence).stat().st_size > 1000


def test_qwen_normalises_to_nfc_like_its_tokenizer() -> None:
    decomposed = "Cafe\u0301 \u212b"  # é as e + combining accent, the angstrom sign
    assert tokens.count_tokens(decomposed, encoding="qwen2") == tokens.count_tokens(
        "Café Å", encoding="qwen2"
    )
    # the others do not normalise (their tokenizer.json has no normalizer)
    assert tokens.get_encoding("llama3").encode_ordinary(decomposed) != tokens.get_encoding(
        "llama3"
    ).encode_ordinary("Café Å")


def test_counts_use_the_family_of_the_model(clean_env: None) -> None:
    text = "你好，世界！Counting tokens exactly, offline. 12345"
    assert tokens.count_tokens(text, "deepseek-chat") == tokens.count_tokens(text, encoding="deepseek_v3")
    assert tokens.count_tokens(text, "Qwen/Qwen3-32B") == tokens.count_tokens(text, encoding="qwen2")
    messages = [{"role": "user", "content": text}]
    qwen = tokens.count_chat_tokens(messages, model="Qwen/Qwen3-32B")
    assert qwen == 3 + tokens.count_tokens("user\n" + text, encoding="qwen2") + 3
    assert tokens.reply_priming_tokens(model="deepseek-chat") == 2
    assert tokens.reply_priming_tokens(model="gpt-4o") == tokens.REPLY_PRIMING_TOKENS
    # estimates never depend on the model's template
    assert tokens.reply_priming_tokens("estimate", model="deepseek-chat") == tokens.REPLY_PRIMING_TOKENS


def test_a_count_stored_with_another_tokenizer_is_recounted_once(clean_env: None) -> None:
    calls: list[str] = []

    def counter(message: Any) -> int:
        calls.append(message["message_id"])
        return 42

    count = stored.reuse_stored(counter, method="exact", model="deepseek-chat", encoding=None)
    same = {"message_id": "m1", "content": "x", "tokens": 7, "tokens_encoding": "deepseek_v3"}
    legacy = {"message_id": "m2", "content": "x", "tokens": 8}
    other = {"message_id": "m3", "content": "x", "tokens": 9, "tokens_encoding": "o200k_base"}
    assert (count(same), count(legacy)) == (7, 8)
    assert count(other) == 42
    assert count(other) == 42
    assert calls == ["m3"]


def test_family_files_load_lazily_and_only_their_own() -> None:
    # A process that counts only OpenAI encodings never reads a family file (nor imports tiktoken
    # before its first exact count).
    code = (
        "import sys\n"
        "from chat_core.engine import tokens\n"
        "from chat_core.engine.tokens import encodings\n"
        "assert 'tiktoken' not in sys.modules\n"
        "tokens.count_tokens('hello', encoding='o200k_base')\n"
        "assert sorted(encodings._loaded) == ['o200k_base'], encodings._loaded\n"
        "tokens.count_tokens('hello', 'deepseek-chat')\n"
        "assert sorted(encodings._loaded) == ['deepseek_v3', 'o200k_base'], encodings._loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
