"""TOK-10, issue 33: Mistral's SentencePiece tokenizers (v1, v2, v3, v7) against mistral-common itself.

tests/data/tokens/families.json holds mistral-common's answers under "mistral_sp" (scripts/
family_reference.py --mistral-sp): the ids of `MistralTokenizer.vN()`'s tokenizer for the mixed
corpora and generated strings, and the length of `encode_chat_completion` for a set of conversations,
without and with tool definitions. These tests need neither mistral-common nor the network; the
last one also asks mistral-common directly where it is installed (requirements-reference.txt).
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_core import config
from chat_core.engine import tokens
from chat_core.engine.tokens import encodings, families

from tests.support.runtime import renew

DATA = Path(__file__).resolve().parents[1] / "data" / "tokens"
FAMILIES_JSON = json.loads((DATA / "families.json").read_text(encoding="utf-8"))
REFERENCE = FAMILIES_JSON["mistral_sp"]
TOOLS: list[dict[str, Any]] = FAMILIES_JSON["chat"]["tools"]
VERSIONS = ("v1", "v2", "v3", "v7")

#: Where the sum over messages is not mistral-common's prompt, and why (chat_mistral.py says so):
#: (version, conversation index) -> how ours relates to the reference.
SYSTEM_FOLD = "system prompt folded into a user turn: its first word loses the word-start marker"
V2_DROPS_HISTORY = "v2 leaves out tool calls and results before the last user turn"
KNOWN = {
    ("v2", 2): SYSTEM_FOLD,
    ("v3", 2): SYSTEM_FOLD,
    ("v2", 4): V2_DROPS_HISTORY,
    ("v2", 6): V2_DROPS_HISTORY,
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("MODEL_TOKENIZERS", raising=False)
    monkeypatch.delenv("DEFAULT_ENCODING", raising=False)
    renew()
    yield
    monkeypatch.delenv("MODEL_TOKENIZERS", raising=False)
    monkeypatch.delenv("DEFAULT_ENCODING", raising=False)
    renew()


def _texts() -> list[str]:
    corpora = [(DATA / name).read_text(encoding="utf-8") for name in FAMILIES_JSON["corpora"]]
    return corpora + list(FAMILIES_JSON["generated"])


def _digest(ids: list[int]) -> list[Any]:
    return [len(ids), hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]]


@pytest.mark.parametrize("version", VERSIONS)
def test_ids_equal_mistral_commons_tokenizer_on_mixed_corpora(version: str) -> None:
    # Given the English, Chinese, code, chat and other-script corpora and 431 generated strings
    encoding = tokens.get_encoding(f"mistral_sp_{version}")
    expected = REFERENCE["ids"][version]
    texts = _texts()
    assert len(texts) == len(expected)
    # When the shipped SentencePiece file encodes each
    got = [_digest(encoding.encode_ordinary(text)) for text in texts]
    # Then the ids are mistral-common's, id for id
    mismatches = [(i, texts[i][:40]) for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b]
    assert mismatches == []
    assert tokens.count_tokens(texts[0], encoding=f"mistral_sp_{version}") == expected[0][0]


@pytest.mark.parametrize("version", VERSIONS)
def test_chat_counts_equal_encode_chat_completion(version: str) -> None:
    # Given conversations with system prompts, names, CJK, emoji, code, empty content, tool calls
    # (one and two per reply), JSON and plain-text tool results, and the same with tool definitions
    name = f"mistral_sp_{version}"
    compared = 0
    for index, (conversation, (plain, with_tools)) in enumerate(
        zip(REFERENCE["conversations"], REFERENCE["prompt_tokens"][version], strict=True)
    ):
        if plain is None:
            continue  # mistral-common refuses it (tools with v1, short call ids from v3 on)
        # When counted in the version's chat format, reply primed
        ours = tokens.count_chat_tokens(conversation["messages"], encoding=name)
        tools_cost = _tools(name)
        known = KNOWN.get((version, index))
        # Then each equals the prompt mistral-common builds, except where the format says otherwise
        if known is None:
            assert (ours, ours + tools_cost) == (plain, with_tools), (index, conversation)
            compared += 1
        elif known == SYSTEM_FOLD:
            assert abs(ours - plain) <= 1
            assert ours + tools_cost - with_tools == ours - plain
        else:
            assert ours > plain  # counts more, never less
    assert compared >= 4


def _tools(name: str) -> int:
    from chat_core.engine.tokens.chat_format import FAMILY_FORMATS

    return FAMILY_FORMATS[name].tools(TOOLS, lambda text: tokens.count_tokens(text, encoding=name))


def test_tool_definitions_cost_what_mistral_common_adds(clean_env: None) -> None:
    # v2 and later write the definitions before the last user turn; v1 leaves them out
    cases = (("v2", "mistral-large-2402"), ("v3", "open-mixtral-8x22b"), ("v7", "mistral-large-latest"))
    for version, model in cases:
        plain, with_tools = REFERENCE["prompt_tokens"][version][0]
        assert tokens.count_tool_tokens(TOOLS, model) == with_tools - plain
    assert tokens.count_tool_tokens(TOOLS, "mistral-medium-2312") == 0


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("mistral-large-latest", "mistral_sp_v7"),
        ("mistral-large-2411", "mistral_sp_v7"),
        ("mistralai/Mistral-Large-Instruct-2411", "mistral_sp_v7"),
        ("pixtral-large-latest", "mistral_sp_v7"),
        ("mistral-large-2407", "mistral_sp_v3"),
        ("mistral-large-2402", "mistral_sp_v2"),
        ("mistral-small-2402", "mistral_sp_v2"),
        ("mistral-small-2312", "mistral_sp_v2"),
        ("mistral-tiny-2312", "mistral_sp_v2"),
        ("open-mixtral-8x7b", "mistral_sp_v2"),
        ("mistral-small-2409", "mistral_sp_v3"),
        ("mistral-tiny-2407", "mistral_sp_v3"),
        ("open-mistral-7b", "mistral_sp_v3"),
        ("open-mixtral-8x22b", "mistral_sp_v3"),
        ("codestral-2405", "mistral_sp_v3"),
        ("codestral-mamba-2407", "mistral_sp_v3"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral_sp_v3"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "mistral_sp_v1"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistral_sp_v1"),
        ("mistral-medium-2312", "mistral_sp_v1"),
        # tekken ones stay tekken
        ("open-mistral-nemo", "mistral_tekken"),
        ("mistral-small-latest", "mistral_tekken"),
        ("mistral-medium-latest", "mistral_tekken"),
        ("codestral-2501", "mistral_tekken"),
        ("ministral-8b-2410", "mistral_tekken"),
    ],
)
def test_the_model_map_routes_mistral_models_by_tokenizer_version(
    model: str, encoding: str, clean_env: None
) -> None:
    resolved = tokens.tokenizer_for_model(model)
    assert (resolved.encoding, resolved.source) == (encoding, "family")
    assert resolved.exact


def test_mistral_common_model_map_entries_agree() -> None:
    # mistral-common's own (deprecated) map, as of 1.13.1; Mistral Small 24.09 is the one exception:
    # its model card gives a 32,768 vocabulary (SentencePiece v3), the map says tekken
    expected = {
        "mistral-tiny-2312": "v2",
        "mistral-tiny-2407": "v3",
        "mistral-small-2312": "v2",
        "open-mixtral-8x22b-2404": "v3",
        "mistral-small-2402": "v2",
        "mistral-medium-2312": "v1",
        "mistral-large-2402": "v2",
        "mistral-large-2407": "v3",
        "mistral-large-2411": "v7",
        "pixtral-large-2411": "v7",
        "codestral-2405": "v3",
        "codestral-mamba-2407": "v3",
    }
    for model, version in expected.items():
        family = families.family_for_model(model)
        assert family is not None, model
        assert family.tokenizer == f"mistral_sp_{version}", model


def test_an_override_may_name_a_sentencepiece_tokenizer(
    monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    monkeypatch.setenv("MODEL_TOKENIZERS", "acme-mistral=mistral_sp_v3, legacy/=mistral_sp_v1")
    monkeypatch.setenv("DEFAULT_ENCODING", "mistral_sp_v7")
    renew()
    assert tokens.tokenizer_for_model("acme-mistral-7b") == ("mistral_sp_v3", "config", "mistral_sp_v3")
    assert tokens.encoding_for_model("legacy/anything") == "mistral_sp_v1"
    assert tokens.encoding_for_model("unknown-model") == "mistral_sp_v7"
    assert set(families.SENTENCEPIECE_SPECS) <= set(config.SHIPPED_TOKENIZERS)
    assert "mistral_sentencepiece" not in config.SHIPPED_TOKENIZERS


def test_sources_manifest_names_the_sentencepiece_files_and_their_hashes() -> None:
    manifest = json.loads((encodings.ENCODINGS_DIR / "SOURCES.json").read_text(encoding="utf-8"))
    for name, spec in families.SENTENCEPIECE_SPECS.items():
        entry = manifest[name]
        data = (encodings.ENCODINGS_DIR / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] == spec.sha256
        assert entry["source"]["package"] == "mistral-common"
        assert entry["source"]["member_sha256"] == spec.sha256  # shipped unchanged
    notice = (encodings.ENCODINGS_DIR / "NOTICE.txt").read_text(encoding="utf-8")
    for name in families.SENTENCEPIECE_SPECS:
        assert f"{name}.model" in notice


def test_a_lone_surrogate_is_counted_not_raised() -> None:
    assert tokens.count_tokens("a\ud800b", encoding="mistral_sp_v7") == tokens.count_tokens(
        "a\ufffdb", encoding="mistral_sp_v7"
    )


def test_sentencepiece_is_imported_on_the_first_count_of_its_family_only() -> None:
    # A process that counts with tiktoken encodings never imports sentencepiece; the first Mistral
    # SentencePiece count does, and loads that file only.
    code = (
        "import sys\n"
        "from chat_core.engine import tokens\n"
        "from chat_core.engine.tokens import encodings\n"
        "tokens.count_tokens('hello', encoding='o200k_base')\n"
        "tokens.count_chat_tokens([{'role': 'user', 'content': 'hi'}], model='deepseek-chat')\n"
        "assert 'sentencepiece' not in sys.modules\n"
        "tokens.count_tokens('hello', 'mistral-large-latest')\n"
        "assert 'sentencepiece' in sys.modules\n"
        "loaded = sorted(encodings._loaded)\n"
        "assert loaded == ['deepseek_v3', 'mistral_sp_v7', 'o200k_base'], loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_against_mistral_common_itself_where_installed() -> None:
    mistral = pytest.importorskip("mistral_common.tokens.tokenizers.mistral")
    rnd = random.Random(33)
    alphabet = list("abc XYZ 012\n\t{}[]\":,.!?'") + list("你好世界ひらがな")
    alphabet += ["😀", "👨\u200d👩", "é", "\u0301"]
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 80))) for _ in range(200)]
    texts += ["[INST] not a control token [/INST]", "[REFERENCE_DOC_1] user-defined piece"]
    texts += ["  lead", "trail  "]
    for version in VERSIONS:
        reference = getattr(mistral.MistralTokenizer, version)().instruct_tokenizer.tokenizer
        ours = tokens.get_encoding(f"mistral_sp_{version}")
        for text in texts:
            assert ours.encode_ordinary(text) == reference.encode(text, bos=False, eos=False), (version, text)
