"""Exact counts from the encodings shipped in the layer (TOK-2, TOK-3) and the TOK-1 estimate."""

from __future__ import annotations

import binascii
import functools
import gc
import hashlib
import marshal
import math
import re
import threading
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from chat_core.engine.tokens.families import (
    FAMILY_SPECS,
    SENTENCEPIECE_SPECS,
    configured_tokenizer,
    family_for_model,
    normalise_model,
)
from chat_core.engine.tokens.spm import SentencePieceEncoding
from chat_core.errors import InvalidInput, TokenizerUnavailable
from chat_core.settings import get_settings

if TYPE_CHECKING:  # imported lazily at run time: a handler that never counts exactly never pays for it
    import tiktoken


class TokenEncoding(Protocol):
    """What callers use of an encoding: tiktoken's Encoding, or spm.SentencePieceEncoding."""

    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


# ---------------------------------------------------------------------------------------------- TOK-1


def estimate_message_tokens(text: str) -> int:
    """TOK-1: "" -> 0, otherwise max(1, ceil(utf8_bytes / 4)). Other code relies on exactly this."""
    if not text:
        return 0
    # surrogatepass: a lone surrogate is valid JSON, so a client can send one; it is 3 bytes, not a crash
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4))


# ---------------------------------------------------------------------------------- TOK-3 encodings

ENCODINGS_DIR: Final = Path(__file__).resolve().parents[2] / "encodings"


@dataclass(frozen=True)
class _EncodingSpec:
    """What tiktoken_ext/openai_public.py would build, minus the download (tests compare the two)."""

    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]
    #: Unicode normalisation applied before splitting, as the family's own tokenizer does ("NFC").
    normalize: str | None = None
    #: The file's format: "tiktoken" (`<name>.tiktoken`, base64 lines), "ranks" (`<name>.ranks`, the
    #: family files: a marshalled (first rank, [token bytes in rank order]), loaded about twice as fast)
    #: or "model" (`<name>.model`, a SentencePiece model, counted by spm.py).
    packing: str = "tiktoken"


_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

_SPECS: Final[dict[str, _EncodingSpec]] = {
    "cl100k_base": _EncodingSpec(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=(
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
            r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        special_tokens={
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _EncodingSpec(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}

# The open families' tokenizers (families.py), loaded the same way from the same directory.
_SPECS.update(
    {
        name: _EncodingSpec(spec.sha256, spec.pat_str, dict(spec.special_tokens), spec.normalize, "ranks")
        for name, spec in FAMILY_SPECS.items()
    }
)
_SPECS.update(
    {name: _EncodingSpec(spec.sha256, "", {}, None, "model") for name, spec in SENTENCEPIECE_SPECS.items()}
)

SHIPPED_ENCODINGS: Final[tuple[str, ...]] = tuple(_SPECS)

_loaded: dict[str, TokenEncoding] = {}
# One lock per encoding: loading o200k (the slower one) never holds up a first cl100k count.
_load_locks: Final[dict[str, threading.Lock]] = {name: threading.Lock() for name in _SPECS}


class UnknownEncoding(InvalidInput, ValueError):
    """An encoding name that is not shipped in the layer (it is also a ValueError)."""

    code = "unknown_encoding"


def check_encoding_name(name: str) -> _EncodingSpec:
    spec = _SPECS.get(name) if isinstance(name, str) else None
    if spec is None:
        raise UnknownEncoding(
            f"unknown encoding {name!r}; the shipped encodings are {', '.join(SHIPPED_ENCODINGS)}",
            encoding=name,
            shipped=list(SHIPPED_ENCODINGS),
        )
    return spec


def get_encoding(name: str) -> TokenEncoding:
    """TOK-3: the Encoding `name` (tiktoken's, or spm.py's for SentencePiece), from the layer's file.

    Loaded on first use, once per process (thread-safe), SHA-256 checked against tiktoken's own
    expected hash. Never touches the network or tiktoken's download cache; needs no environment variable.
    """
    encoding = _loaded.get(name)
    if encoding is not None:
        return encoding
    spec = check_encoding_name(name)
    with _load_locks[name]:
        encoding = _loaded.get(name)
        if encoding is None:
            encoding = _load_encoding(name, spec)
            _loaded[name] = encoding
    return encoding


def _load_encoding(name: str, spec: _EncodingSpec) -> TokenEncoding:
    path = ENCODINGS_DIR / f"{name}.{spec.packing}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerUnavailable(
            f"encoding file {path} cannot be read ({exc.strerror}); it ships with the layer, "
            f"regenerate it with scripts/{_BUILDER[spec.packing]}",
            encoding=name,
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise TokenizerUnavailable(
            f"encoding file {path} has SHA-256 {digest}, expected {spec.sha256}; "
            f"regenerate it with scripts/{_BUILDER[spec.packing]}",
            encoding=name,
        )
    if spec.packing == "model":
        return SentencePieceEncoding(name, data)
    import tiktoken

    # Same format as tiktoken.load.load_tiktoken_bpe ("<base64 token> <rank>" lines), without its download
    # cache; parsed in one pass of C-level maps with the collector paused: 100k-200k small objects
    # would otherwise trigger several full collections during a cold start.
    paused = gc.isenabled()
    gc.disable()
    try:
        try:
            ranks = _packed_ranks(data) if spec.packing == "ranks" else _tiktoken_ranks(data)
        except ValueError as exc:
            raise TokenizerUnavailable(f"encoding file {path}: {exc}", encoding=name) from exc
        encoding_class = (
            _normalizing_encoding(tiktoken.Encoding, spec.normalize) if spec.normalize else tiktoken.Encoding
        )
        return encoding_class(
            name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=dict(spec.special_tokens)
        )
    finally:
        if paused:
            gc.enable()


_BUILDER: Final = {
    "tiktoken": "build_encodings.py",
    "ranks": "build_tokenizers.py",
    "model": "build_tokenizers.py",
}


def _tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    # Only ever tiktoken's own file (its SHA-256 matched the one tiktoken expects), whose ranks run from
    # 0 line by line: the rank column is checked at its two ends, not parsed line by line, which takes
    # about a third off the load of o200k_base (test_tok3_encoding_equals_tiktokens_official_encoding).
    fields = data.split()
    tokens = fields[0::2]
    if len(fields) != 2 * len(tokens) or fields[1] != b"0" or int(fields[-1]) != len(tokens) - 1:
        raise ValueError("the ranks of a .tiktoken file must run from 0, one a line")
    del fields
    return dict(zip(map(binascii.a2b_base64, tokens), range(len(tokens)), strict=True))


def _packed_ranks(data: bytes) -> dict[bytes, int]:
    # Only ever the layer's own file, after its SHA-256 matched the one pinned in families.py.
    first, tokens = marshal.loads(data)  # noqa: S302
    return dict(zip(tokens, range(first, first + len(tokens)), strict=True))


def _normalizing_encoding(base: type[tiktoken.Encoding], form: str) -> type[tiktoken.Encoding]:
    """An Encoding that normalises text first, as Qwen's tokenizer does (NFC), for every caller."""
    nf: Any = form

    def normal(text: str) -> str:
        if text.isascii() or unicodedata.is_normalized(nf, text):
            return text
        return unicodedata.normalize(nf, text)

    class NormalizingEncoding(base):  # type: ignore[misc,valid-type]
        def encode_ordinary(self, text: str) -> list[int]:
            ids: list[int] = super().encode_ordinary(normal(text))
            return ids

        def encode(self, text: str, **kwargs: Any) -> list[int]:
            ids: list[int] = super().encode(normal(text), **kwargs)
            return ids

        def encode_ordinary_batch(self, text: list[str], **kwargs: Any) -> list[list[int]]:
            batch: list[list[int]] = super().encode_ordinary_batch([normal(t) for t in text], **kwargs)
            return batch

    return NormalizingEncoding


# ------------------------------------------------------------------------------------ TOK-2 exact

# First match wins; the look-aheads stop "gpt-4" from claiming "gpt-4o"/"gpt-4.1" and "o1" from "o1x".
_MODEL_ENCODINGS: Final[tuple[tuple[re.Pattern[str], str], ...]] = (
    (re.compile(r"(?:chatgpt-)?gpt-4o(?![a-z0-9])"), "o200k_base"),
    (re.compile(r"gpt-4\.[15](?![0-9])"), "o200k_base"),
    (re.compile(r"gpt-5(?![0-9])"), "o200k_base"),
    (re.compile(r"o[134](?![a-z0-9])"), "o200k_base"),
    (re.compile(r"gpt-oss(?![a-z0-9])"), "o200k_base"),
    (re.compile(r"gpt-4(?![a-z0-9.])"), "cl100k_base"),
    (re.compile(r"gpt-3\.5(?![0-9])|gpt-35(?![0-9])"), "cl100k_base"),
    (re.compile(r"text-embedding-3(?![0-9])|text-embedding-ada-002(?![0-9])"), "cl100k_base"),
    (re.compile(r"(?:davinci|babbage)-002(?![0-9])"), "cl100k_base"),
)


def encoding_for_model(model: str | None) -> str:
    """TOK-2 model -> encoding: gpt-4o/4.1/4.5/5 and o1/o3/o4 -> o200k_base; gpt-4, gpt-4-turbo,
    gpt-3.5-turbo, text-embedding-3/ada-002 -> cl100k_base; the open families (Llama 3/4, Qwen,
    DeepSeek V3/R1, Mistral on tekken and on SentencePiece v1-v7) -> their own tokenizer (families.py,
    overridable by settings.model_tokenizers); None, unknown, or a family whose tokenizer is not shipped ->
    settings.default_encoding (`tokenizer_for_model` says which of these a name is).

    Dated snapshots ("gpt-4o-2024-08-06"), fine-tunes ("ft:gpt-4o-mini:org::id") and provider
    prefixes ("openai/gpt-4o", "azure/gpt-35-turbo", "openrouter/qwen/qwen3-32b") resolve like the base
    model. Case-insensitive.
    """
    return tokenizer_for_model(model).encoding


class ModelTokenizer(NamedTuple):
    """How `model`'s tokens are counted: the encoding used, and whether it is the model's own."""

    encoding: str
    #: "openai", "family" or "config" (settings.model_tokenizers): the model's own tokenizer (or the one
    #: configured for it); "default": not known, or the family's
    #: tokenizer is not shipped (`family` names it), so counts use the default encoding as an estimate.
    source: str
    family: str | None = None

    @property
    def exact(self) -> bool:
        return self.source != "default"


def tokenizer_for_model(model: str | None) -> ModelTokenizer:
    """The encoding `model` is counted with, and whether it is the model's own (see ModelTokenizer)."""
    settings = get_settings()
    name = model if isinstance(model, str) else None
    return _resolve(name, settings.model_tokenizers, settings.default_encoding)


@functools.lru_cache(maxsize=512)
def _resolve(model: str | None, overrides: tuple[tuple[str, str], ...], default: str) -> ModelTokenizer:
    if model:
        configured = configured_tokenizer(model, overrides)
        if configured is not None:
            return ModelTokenizer(configured, "config", configured)
        name = normalise_model(model)
        for pattern, encoding in _MODEL_ENCODINGS:
            if pattern.match(name):
                return ModelTokenizer(encoding, "openai")
        family = family_for_model(model)
        if family is not None:
            if family.tokenizer in _SPECS:
                return ModelTokenizer(family.tokenizer, "family", family.tokenizer)
            return ModelTokenizer(default, "default", family.tokenizer)
    return ModelTokenizer(default, "default")


def count_tokens(text: str, model: str | None = None, *, encoding: str | None = None) -> int:
    """TOK-2: the exact number of tokens of `text` for `encoding`, or else for `model`'s encoding.

    Special-token strings such as "<|endoftext|>" are counted as the ordinary text they are
    (tiktoken's `disallowed_special=()`), so user content can never raise or be mis-counted.
    """
    if not isinstance(text, str):
        raise TypeError(f"count_tokens() needs a str, got {type(text).__name__}")
    name = encoding if encoding is not None else encoding_for_model(model)
    if not text:
        check_encoding_name(name)
        return 0
    return len(get_encoding(name).encode_ordinary(text))
