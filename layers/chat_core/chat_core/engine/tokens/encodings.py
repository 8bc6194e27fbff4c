"""Exact counts from the encodings shipped in the layer (TOK-2, TOK-3) and the TOK-1 estimate."""

from __future__ import annotations

import binascii
import hashlib
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from chat_core.errors import InvalidInput, TokenizerUnavailable
from chat_core.settings import get_settings

if TYPE_CHECKING:  # imported lazily at run time: a handler that never counts exactly never pays for it
    import tiktoken

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

SHIPPED_ENCODINGS: Final[tuple[str, ...]] = tuple(_SPECS)

_loaded: dict[str, tiktoken.Encoding] = {}
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


def get_encoding(name: str) -> tiktoken.Encoding:
    """TOK-3: the tiktoken Encoding `name`, built from the file shipped in the layer.

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


def _load_encoding(name: str, spec: _EncodingSpec) -> tiktoken.Encoding:
    import tiktoken

    path = ENCODINGS_DIR / f"{name}.tiktoken"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerUnavailable(
            f"encoding file {path} cannot be read ({exc.strerror}); it ships with the layer, "
            "regenerate it with scripts/build_encodings.py",
            encoding=name,
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise TokenizerUnavailable(
            f"encoding file {path} has SHA-256 {digest}, expected {spec.sha256}; "
            "regenerate it with scripts/build_encodings.py",
            encoding=name,
        )
    ranks: dict[bytes, int] = {}
    # Same format and parse as tiktoken.load.load_tiktoken_bpe, without its download cache.
    for line in data.splitlines():
        if line:
            token, rank = line.split(b" ")
            ranks[binascii.a2b_base64(token)] = int(rank)
    return tiktoken.Encoding(
        name, pat_str=spec.pat_str, mergeable_ranks=ranks, special_tokens=dict(spec.special_tokens)
    )


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
    gpt-3.5-turbo, text-embedding-3/ada-002 -> cl100k_base; None or unknown -> settings.default_encoding.

    Dated snapshots ("gpt-4o-2024-08-06"), fine-tunes ("ft:gpt-4o-mini:org::id") and provider
    prefixes ("openai/gpt-4o", "azure/gpt-35-turbo") resolve like the base model. Case-insensitive.
    """
    if model and isinstance(model, str):
        name = model.strip().lower()
        name = name.removeprefix("ft:")
        name = name.rsplit("/", 1)[-1]
        for pattern, encoding in _MODEL_ENCODINGS:
            if pattern.match(name):
                return encoding
    return get_settings().default_encoding


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
