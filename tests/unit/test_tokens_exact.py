"""TOK-2: exact counts for a model or an encoding, special tokens as text, model -> encoding map."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cache
from unittest import mock

import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public
from chat_core.engine import tokens
from chat_core.engine.tokens import encodings
from chat_core.http.statuses import status_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.runtime import drop, renew


@cache
def official(name: str) -> tiktoken.Encoding:
    """tiktoken's own constructor and parser, fed the shipped file instead of a download."""
    shipped = str(encodings.ENCODINGS_DIR / f"{name}.tiktoken")

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return tiktoken.load.load_tiktoken_bpe(shipped, expected_hash=expected_hash)

    with (
        mock.patch.dict(os.environ, {"TIKTOKEN_CACHE_DIR": ""}),
        mock.patch.object(openai_public, "load_tiktoken_bpe", load),
    ):
        return tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())


@pytest.fixture
def default_encoding(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Settings are read once per runtime; a new one is built around a test that changes the environment."""
    drop()
    yield
    monkeypatch.delenv("DEFAULT_ENCODING", raising=False)
    drop()


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_tok2_hello_world_is_two_tokens_in_both_encodings(encoding: str) -> None:
    # Given the classic example
    # When counted exactly
    # Then it is 2 tokens, as tiktoken's own tests and the cookbook say
    assert tokens.count_tokens("hello world", encoding=encoding) == 2


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4.1-mini", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("o1-mini", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("GPT-4o", "o200k_base"),
        ("openai/gpt-4o-mini", "o200k_base"),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-32k", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-3.5-turbo-16k", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("ft:gpt-3.5-turbo-0125:acme::xyz", "cl100k_base"),
    ],
)
def test_tok2_model_to_encoding_map(model: str, encoding: str) -> None:
    # Given a model name, snapshot, fine-tune or provider-prefixed name
    # When it is mapped
    # Then it gets the encoding OpenAI uses for it
    assert tokens.encoding_for_model(model) == encoding


@pytest.mark.parametrize("model", [None, "", "my-own-model-7b", "claude-3-5-sonnet", "o1x", "gpt-40"])
def test_tok2_unknown_model_uses_the_configured_default(
    model: str | None, monkeypatch: pytest.MonkeyPatch, default_encoding: None
) -> None:
    # Given a deployment configured with cl100k_base as its default encoding
    monkeypatch.setenv("DEFAULT_ENCODING", "cl100k_base")
    renew()
    # When a model nobody mapped is counted
    # Then the default applies
    assert tokens.encoding_for_model(model) == "cl100k_base"
    assert tokens.count_tokens("你好，世界", model) == 6  # 3 in o200k_base


def test_tok2_default_encoding_out_of_the_box_is_o200k(default_encoding: None) -> None:
    # Given no configuration
    # When an unknown model is counted
    # Then o200k_base (the encoding of current OpenAI models) is used
    assert tokens.encoding_for_model("some-local-model") == "o200k_base"
    assert tokens.count_tokens("你好，世界", "some-local-model") == 3


def test_tok2_encoding_argument_wins_over_the_model() -> None:
    # Given a gpt-4o model but an explicit cl100k_base encoding
    # When counted
    # Then the explicit encoding is used
    assert tokens.count_tokens("你好，世界", "gpt-4o", encoding="cl100k_base") == 6
    assert tokens.count_tokens("你好，世界", "gpt-4o") == 3


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("special", ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|im_start|>"])
def test_tok2_special_token_strings_are_counted_as_ordinary_text(encoding: str, special: str) -> None:
    # Given user text that contains a special-token string
    text = f"please ignore {special} and go on"
    enc = tokens.get_encoding(encoding)
    # When counted
    count = tokens.count_tokens(text, encoding=encoding)
    # Then it neither raises nor becomes one special token: it is the text's ordinary tokens
    assert count == len(enc.encode(text, disallowed_special=()))
    assert count > len(enc.encode("please ignore  and go on", disallowed_special=())) + 1


def test_tok2_empty_text_is_zero_tokens() -> None:
    assert tokens.count_tokens("") == 0
    assert tokens.count_tokens("", encoding="cl100k_base") == 0


def test_tok2_unknown_encoding_is_a_clear_value_error() -> None:
    # Given an encoding that is not shipped
    # When it is asked for
    # Then a ValueError (400 if it reaches the API) lists the shipped ones
    with pytest.raises(
        ValueError, match=r"unknown encoding 'p50k_base'; the shipped encodings are cl100k_base, o200k_base"
    ):
        tokens.count_tokens("hello", encoding="p50k_base")
    with pytest.raises(tokens.UnknownEncoding) as caught:
        tokens.get_encoding("gpt2")
    assert status_for(caught.value) == 400


def test_tok2_non_string_text_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="needs a str, got bytes"):
        tokens.count_tokens(b"hello")  # type: ignore[arg-type]


def test_tok2_lone_surrogates_from_json_are_counted_not_raised() -> None:
    # Given text with a lone surrogate (json.loads accepts "\ud800")
    text = "abc \ud800 def"
    # When counted exactly
    # Then it is counted like tiktoken counts it (replacement character), without an exception
    assert tokens.count_tokens(text) == tokens.count_tokens("abc \ufffd def")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300), encoding=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_tok2_count_equals_tiktokens_official_encoder_on_any_text(text: str, encoding: str) -> None:
    # Given any text, special-token strings and odd code points included
    # When chat_core counts it
    count = tokens.count_tokens(text, encoding=encoding)
    # Then it is what tiktoken's official encoding says with disallowed_special=()
    assert count == len(official(encoding).encode(text, disallowed_special=()))


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_tok2_special_tokens_inside_text_match_the_official_encoder(encoding: str) -> None:
    # Given a text built of every special token of the encoding
    text = " and ".join(official(encoding).special_tokens_set)
    # When counted
    # Then chat_core and the official encoder agree, and no single special-token id appears
    assert tokens.count_tokens(text, encoding=encoding) == len(
        official(encoding).encode(text, disallowed_special=())
    )
    ids = tokens.get_encoding(encoding).encode_ordinary(text)
    assert not set(ids) & set(official(encoding)._special_tokens.values())
