"""Token counting: TOK-1 estimate, exact counts from shipped encodings, approximation, chat-format totals."""

from __future__ import annotations

import binascii
import functools
import hashlib
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from chat_core.errors import InvalidInput, TokenizerUnavailable
from chat_core.settings import get_settings

if TYPE_CHECKING:  # imported lazily at run time: a handler that never counts exactly never pays for it
    import tiktoken

__all__ = [
    "NON_TEXT_PART_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "SHIPPED_ENCODINGS",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOKENS_PER_TOOL_CALL",
    "Method",
    "UnknownEncoding",
    "approx_tokens",
    "count_chat_tokens",
    "count_message_tokens",
    "count_tokens",
    "encoding_for_model",
    "estimate_message_tokens",
    "get_encoding",
    "message_counter",
]

# ---------------------------------------------------------------------------------------------- TOK-1


def estimate_message_tokens(text: str) -> int:
    """TOK-1: "" -> 0, otherwise max(1, ceil(utf8_bytes / 4)). Other code relies on exactly this."""
    if not text:
        return 0
    # surrogatepass: a lone surrogate is valid JSON, so a client can send one; it is 3 bytes, not a crash
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4))


# ---------------------------------------------------------------------------------- TOK-3 encodings

ENCODINGS_DIR: Final = Path(__file__).resolve().parent.parent / "encodings"


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


def _check_encoding_name(name: str) -> _EncodingSpec:
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
    spec = _check_encoding_name(name)
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
        _check_encoding_name(name)
        return 0
    return len(get_encoding(name).encode_ordinary(text))


# ----------------------------------------------------------------------------- TOK-7 approximation
#
# approx_tokens() never runs a tokenizer. One regex pass cuts the text into the same kind of pieces
# tiktoken's own pre-tokenizer makes (words with their leading space, camelCase halves, identifiers
# glued to a leading "." or "_", digit groups of three, punctuation runs, newline and indentation
# runs, CJK runs, kana, hangul, Cyrillic, Greek, Arabic/Hebrew, emoji) and adds a fitted cost per
# piece. Refinements: characters past the 8th of a word piece (long words are rarer and split), Han
# characters that are frequent (a single token in cl100k) versus the rest, astral-plane emoji.
# The costs were fitted per encoding, piece by piece, by scripts/fit_approx_tokens.py on
# tests/data/tokens/*.fit.txt and are checked on the *.holdout.txt files; see that script.

_LU = "A-Z\u00c0-\u00d6\u00d8-\u00de"
_LL = "a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u024f"
_LATIN = _LU + _LL
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U000323af"
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_CYRILLIC = "\u0400-\u052f"
_GREEK = "\u0370-\u03ff\u1f00-\u1fff"
_RTL = "\u0590-\u06ff\u0750-\u077f\u08a0-\u08ff"
# Devanagari .. Sinhala, Thai, Lao, Myanmar: their vowel signs are marks, not \w, so they get a class
_BRAHMIC = "\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f"
_EMOJI = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\u200d\ufe0f\u20e3\U00010000-\U0001ffff\U000e0000-\U0010ffff"
_CJK_PUNCT = "\u3000-\u303f\uff00-\uff65\uffe0-\uffef\u2018-\u201f\u2026\u00b7\u2014"


def _piece_kinds(lu: str, ll: str, glue_excluded: str, *, ascii_only: bool) -> tuple[tuple[str, str], ...]:
    """(kind, pattern) in match priority; the first alternative that matches wins, as in tiktoken.

    Contraction and the two word kinds come first (groups 1..3): the counting loop relies on it.
    """
    word = f"(?:[{lu}]*[{ll}]+|[{lu}]+[{ll}]*)"  # camelCase splits in two, like o200k's pattern
    glue = f"(?:[^\\w\\s{glue_excluded}]|_)"  # one non-letter that tiktoken glues to the next word
    kinds = [
        ("contraction", f"'(?:[sdmtSDMT]|ll|ve|re|LL|VE|RE)(?![{lu}{ll}])"),
        ("word", f" ?{word}"),
        ("glued_word", f"{glue}{word}"),
    ]
    if not ascii_only:
        kinds += [
            # Han and kana runs take no leading space (it becomes a space piece), so that the Han
            # piece length is the Han character count; Korean separates words with spaces like Latin.
            ("han", f"[{_HAN}]+"),
            ("kana", f"[{_KANA}]+"),
            ("hangul", f" ?[{_HANGUL}]+"),
            ("cyrillic", f" ?[{_CYRILLIC}]+"),
            ("greek", f" ?[{_GREEK}]+"),
            ("rtl", f" ?[{_RTL}]+"),
            ("brahmic", f" ?[{_BRAHMIC}]+"),
            ("other_letters", f" ?[^\\W\\d_{_HAN}{_KANA}]+"),
        ]
    kinds.append(("digits", r"\d{1,3}"))
    if not ascii_only:
        kinds += [("cjk_punct", f"[{_CJK_PUNCT}]+"), ("emoji", f" ?[{_EMOJI}]+")]
    kinds += [
        ("punct", f" ?{glue}{{1,16}}[\\r\\n]*"),
        # Capped runs: the vocabularies hold up to 16-32 newlines and 128 spaces in one token.
        ("newline", r"[^\S\r\n]{0,64}[\r\n]{1,16}"),
        ("space", r"\s{1,64}(?!\S)|\s{1,64}"),
    ]
    return tuple(kinds)


_PIECE_KINDS: Final = _piece_kinds(_LU, _LL, _EMOJI + _CJK_PUNCT + _BRAHMIC, ascii_only=False)
# Pure-ASCII text (most English and code) takes a smaller pattern that cuts it identically, faster.
_ASCII_PIECE_KINDS: Final = _piece_kinds("A-Z", "a-z", "", ascii_only=True)
# kind -> regex group (0, a group that never matches, when the pattern has no such kind)
_GROUP: Final = {kind: index for index, (kind, _) in enumerate(_PIECE_KINDS, start=1)}
_ASCII_GROUP: Final = dict.fromkeys(_GROUP, 0) | {
    kind: index for index, (kind, _) in enumerate(_ASCII_PIECE_KINDS, start=1)
}
_ASTRAL: Final = "[\U00010000-\U0001ffff\U000e0000-\U0010ffff]"
_LONG_PIECE: Final = 8  # letters past this (leading space or glue included) cost long_word_excess each

# Feature order of the coefficient vectors.
APPROX_FEATURES: Final[tuple[str, ...]] = (
    "word",
    "glued_word",
    "long_word_excess",
    "contraction",
    "han_common",
    "han_other",
    "kana_chars",
    "kana_runs",
    "hangul_chars",
    "hangul_runs",
    "cyrillic_chars",
    "cyrillic_runs",
    "greek_chars",
    "greek_runs",
    "rtl_chars",
    "rtl_runs",
    "brahmic_chars",
    "brahmic_runs",
    "other_letters_chars",
    "other_letters_runs",
    "digit_groups",
    "cjk_punct_chars",
    "emoji_astral",
    "emoji_other",
    "punct_runs",
    "punct_extra_chars",
    "newline_runs",
    "space_runs",
)


@dataclass(frozen=True)
class _PiecePatterns:
    """The compiled TOK-7 regexes: `pieces` cuts any text (group i+1 = _PIECE_KINDS[i]), `ascii_pieces`
    cuts pure-ASCII text the same way, faster; `astral` and `common_han` refine emoji and Han counts."""

    pieces: re.Pattern[str]
    ascii_pieces: re.Pattern[str]
    astral: re.Pattern[str]
    common_han: re.Pattern[str]


@functools.cache
def _piece_patterns() -> _PiecePatterns:
    """Compiled on the first approximate count, not at import: compiling them costs ~4 ms of CPU, which
    every handler that imports this module would pay at cold start whether it approximates or not."""
    return _PiecePatterns(
        pieces=re.compile("|".join(f"({pattern})" for _, pattern in _PIECE_KINDS)),
        ascii_pieces=re.compile("|".join(f"({pattern})" for _, pattern in _ASCII_PIECE_KINDS)),
        astral=re.compile(_ASTRAL),
        common_han=re.compile(f"[{_COMMON_HAN}]"),
    )


def approx_features(text: str, *, common_han: re.Pattern[str] | None = None) -> list[int]:
    """TOK-7 piece counts of `text`, in APPROX_FEATURES order (exposed for the calibration script)."""
    ascii_only = text.isascii()
    patterns = _piece_patterns()
    pieces, g = (patterns.ascii_pieces, _ASCII_GROUP) if ascii_only else (patterns.pieces, _GROUP)
    counts = [0] * (pieces.groups + 1)
    lengths = [0] * (pieces.groups + 1)
    excess = 0
    astral = 0
    emoji_group = g["emoji"]
    for match in pieces.finditer(text):
        group: int = match.lastindex  # type: ignore[assignment]  # every alternative is a group
        start, end = match.span()
        size = end - start
        counts[group] += 1
        lengths[group] += size
        if size > _LONG_PIECE and group <= 3:
            excess += size - _LONG_PIECE
        elif group == emoji_group:
            # Only astral characters inside emoji pieces: astral letters (e.g. U+1D400) are not emoji.
            astral += len(patterns.astral.findall(text, start, end))
    han_all = lengths[g["han"]]
    han_common = (common_han or patterns.common_han).subn("", text)[1] if han_all else 0
    return [
        counts[g["word"]],
        counts[g["glued_word"]],
        excess,
        counts[g["contraction"]],
        han_common,
        han_all - han_common,
        lengths[g["kana"]],
        counts[g["kana"]],
        lengths[g["hangul"]],
        counts[g["hangul"]],
        lengths[g["cyrillic"]],
        counts[g["cyrillic"]],
        lengths[g["greek"]],
        counts[g["greek"]],
        lengths[g["rtl"]],
        counts[g["rtl"]],
        lengths[g["brahmic"]],
        counts[g["brahmic"]],
        lengths[g["other_letters"]],
        counts[g["other_letters"]],
        counts[g["digits"]],
        lengths[g["cjk_punct"]],
        astral,
        lengths[g["emoji"]] - astral,
        counts[g["punct"]],
        lengths[g["punct"]] - counts[g["punct"]],
        counts[g["newline"]],
        counts[g["space"]],
    ]


def approx_tokens(text: str, encoding: str = "o200k_base") -> int:
    """TOK-7: a calibrated, script-aware token estimate for `encoding`, without a tokenizer.

    Within -10%/+15% of count_tokens() on English prose, Chinese prose, source code and mixed chat
    with emoji (tests/data/tokens, hold-out files), for cl100k_base and o200k_base. "" -> 0,
    any other text -> at least 1.
    """
    if not isinstance(text, str):
        raise TypeError(f"approx_tokens() needs a str, got {type(text).__name__}")
    _check_encoding_name(encoding)
    if not text:
        return 0
    coefficients = _APPROX_VECTORS[encoding]
    total = sum(c * f for c, f in zip(coefficients, approx_features(text), strict=True))
    return max(1, int(total + 0.5))


# --- BEGIN GENERATED by scripts/fit_approx_tokens.py; edit the script or the corpora, not this block ---
# Fitted piece by piece on tests/data/tokens/*.fit.txt; the *.holdout.txt files test them.
_APPROX_COEFFICIENTS: Final[dict[str, dict[str, float]]] = {
    "cl100k_base": {
        "word": 1.035,
        "glued_word": 1.1798,
        "long_word_excess": 0.1941,
        "contraction": 1.0,
        "han_common": 0.9211,
        "han_other": 2.1488,
        "kana_chars": 0.8347,
        "kana_runs": 0.1399,
        "hangul_chars": 1.0608,
        "hangul_runs": 0.0,
        "cyrillic_chars": 0.3911,
        "cyrillic_runs": 0.2668,
        "greek_chars": 0.8735,
        "greek_runs": 0.0,
        "rtl_chars": 0.7048,
        "rtl_runs": 0.0,
        "brahmic_chars": 0.984,
        "brahmic_runs": 0.154,
        "other_letters_chars": 1.0,
        "other_letters_runs": 0.5,
        "digit_groups": 1.0,
        "cjk_punct_chars": 1.0,
        "emoji_astral": 2.231,
        "emoji_other": 1.0267,
        "punct_runs": 0.9808,
        "punct_extra_chars": 0.0337,
        "newline_runs": 1.0,
        "space_runs": 1.0,
    },
    "o200k_base": {
        "word": 1.0255,
        "glued_word": 1.1769,
        "long_word_excess": 0.1142,
        "contraction": 1.0,
        "han_common": 0.7123,
        "han_other": 1.1921,
        "kana_chars": 0.5917,
        "kana_runs": 0.2494,
        "hangul_chars": 0.6154,
        "hangul_runs": 0.0,
        "cyrillic_chars": 0.1342,
        "cyrillic_runs": 0.5442,
        "greek_chars": 0.4218,
        "greek_runs": 0.0,
        "rtl_chars": 0.2643,
        "rtl_runs": 0.3351,
        "brahmic_chars": 0.404,
        "brahmic_runs": 0.0,
        "other_letters_chars": 1.0,
        "other_letters_runs": 0.5,
        "digit_groups": 1.0,
        "cjk_punct_chars": 1.0,
        "emoji_astral": 1.4805,
        "emoji_other": 0.8679,
        "punct_runs": 0.9871,
        "punct_extra_chars": 0.0251,
        "newline_runs": 1.0,
        "space_runs": 1.0,
    },
}
# The 549 Han characters that are a single token in cl100k_base.
_COMMON_HAN: Final = (
    "一万三上下不与专业东两个中串为主么义之也书了事二于五些交产享京人亿今介从他付代以"
    "们件价任份企优会传但位体何余作你使例供価保信修倍值停像元先入全公共关其具内円册再"
    "写出击分列则初利别到制前力功加务动動包化北区十午华单南即历原去县参及友反发取变口"
    "只可台右号司合同名后向否含听启告员周命和品哈商問器四回因国图土在地场址型城基報場"
    "填增声处备复外多大天失头女好如始子字存学安宋完定实审客家容密对导将小少尔就局展山"
    "岁州工左已市布常平年并广序库应店度建开异式引张当录形影径待後得微心必志态思性总息"
    "您情意感成我或户所手打找技投报拉持指按换据排接推提播支收改放政效数整文料断新方族"
    "无日时明易星是時景更最月有服期木未本机权束条来板构析果查标样核格案检模次款止正此"
    "步歳段每比民気水求江汽没治法注活流海消清游源火点無然片版物特率环现球理生用由电男"
    "画界番登的监目直相省看県真知码确示社票私种科秒称移程稍税稿空立站章端笑符第等签简"
    "算管箱米类系素索约级线组经结给络统编网置美老考者而联能自至色节英藏行表装西要見见"
    "规视角解言計記話読计认议记论设证评试话询该详语误说请读调象责败账货购费资起超路身"
    "车转软载辑输达过运近还这进连述退送选通速造連道邮部都配释里重量金钟钮链销错键长開"
    "間関门闭问间队阳陆限院除雅集雷需非面音页项预频题额首验高黑"
)
# --- END GENERATED ---

_APPROX_VECTORS: Final[dict[str, tuple[float, ...]]] = {
    name: tuple(_APPROX_COEFFICIENTS.get(name, {}).get(feature, 0.0) for feature in APPROX_FEATURES)
    for name in _SPECS
}

# ---------------------------------------------------------------------------------- TOK-4 chat format

Method = Literal["estimate", "approx", "exact"]
_METHODS: Final[tuple[str, ...]] = get_args(Method)

# OpenAI cookbook, "How to count tokens with tiktoken" (gpt-3.5-turbo-0613 and later, gpt-4, gpt-4o):
TOKENS_PER_MESSAGE: Final = 3  # <|start|>, <|message|>, <|end|> around every message; the role is text
TOKENS_PER_NAME: Final = 1  # a "name" field costs its text plus one
REPLY_PRIMING_TOKENS: Final = 3  # every reply is primed with <|start|>assistant<|message|>
# Not in the cookbook: each tool call's framing (call id/type wrapper around name and arguments),
# a deliberately small constant; name and arguments themselves are counted as text.
TOKENS_PER_TOOL_CALL: Final = 3
# Images, audio and files in a content list are not text; each counts as a flat 85 tokens (the base
# cost of one low-detail image in OpenAI's vision pricing) so budgets see them, not as their real cost.
NON_TEXT_PART_TOKENS: Final = 85
_TEXT_PART_TYPES: Final = frozenset({"text", "input_text", "output_text", "refusal"})


def message_counter(
    method: Method = "exact", *, model: str | None = None, encoding: str | None = None
) -> Callable[[Mapping[str, Any]], int]:
    """A reusable TOK-4 counter of one message: `counter(message) -> tokens` with the framing overhead.

    method: "estimate" applies TOK-1 to every text part, "approx" approx_tokens(), "exact" count_tokens().
    The encoding (given, else the model's) is resolved here once; an exact counter loads it on first use.
    """
    text_tokens = _text_counter(method, model=model, encoding=encoding)
    return lambda message: _count_message(message, text_tokens)


def count_message_tokens(
    message: Mapping[str, Any],
    *,
    method: Method = "exact",
    model: str | None = None,
    encoding: str | None = None,
) -> int:
    """TOK-4: tokens of one message in chat format.

    3 per message + role + content text + (name + 1) + per tool call (3 + function name + arguments).
    Tool results (role "tool") are their content plus the per-message overhead; tool_call_id and
    bookkeeping keys (tokens, pinned, message_id, seq, ...) are not counted. Content may be a str,
    None, or a list of parts: text parts count as text, other parts NON_TEXT_PART_TOKENS each.
    A stored "tokens" value is not consulted here: this function is what computes it (TOK-5).
    """
    return message_counter(method, model=model, encoding=encoding)(message)


def count_chat_tokens(
    messages: Iterable[Mapping[str, Any]],
    *,
    method: Method = "exact",
    model: str | None = None,
    encoding: str | None = None,
) -> int:
    """TOK-4: tokens of a whole prompt: the sum of count_message_tokens() plus REPLY_PRIMING_TOKENS."""
    counter = message_counter(method, model=model, encoding=encoding)
    return sum(counter(message) for message in messages) + REPLY_PRIMING_TOKENS


def _text_counter(method: str, *, model: str | None, encoding: str | None) -> Callable[[str], int]:
    if method == "estimate":
        return estimate_message_tokens
    if method not in _METHODS:
        raise ValueError(f"unknown counting method {method!r}; use one of {', '.join(_METHODS)}")
    name = encoding if encoding is not None else encoding_for_model(model)
    _check_encoding_name(name)
    if method == "approx":
        return lambda text: approx_tokens(text, name)

    def exact(text: str) -> int:
        return len(get_encoding(name).encode_ordinary(text)) if text else 0

    return exact


def _count_message(message: Mapping[str, Any], text_tokens: Callable[[str], int]) -> int:
    if not isinstance(message, Mapping):
        raise InvalidInput(f"a message must be a JSON object, got {type(message).__name__}")
    total = TOKENS_PER_MESSAGE
    role = message.get("role")
    if role:
        total += text_tokens(_as_text(role, "role"))
    total += _content_tokens(message.get("content"), text_tokens)
    name = message.get("name")
    if name:
        total += text_tokens(_as_text(name, "name")) + TOKENS_PER_NAME
    tool_calls = message.get("tool_calls")
    if tool_calls:
        if not isinstance(tool_calls, list | tuple):
            raise InvalidInput(f"tool_calls must be a list, got {type(tool_calls).__name__}")
        for call in tool_calls:
            total += _tool_call_tokens(call, text_tokens)
    function_call = message.get("function_call")  # the pre-tools single-call form
    if function_call:
        total += _tool_call_tokens({"function": function_call}, text_tokens)
    return total


def _content_tokens(content: Any, text_tokens: Callable[[str], int]) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return text_tokens(content)
    if isinstance(content, list | tuple):
        total = 0
        for part in content:
            if isinstance(part, str):
                total += text_tokens(part)
            elif isinstance(part, Mapping):
                if part.get("type", "text") in _TEXT_PART_TYPES:
                    text = part.get("text", part.get("refusal"))
                    total += text_tokens(_as_text(text, "content part text")) if text is not None else 0
                else:
                    total += NON_TEXT_PART_TOKENS
            else:
                raise InvalidInput(f"a content part must be an object or a string, got {type(part).__name__}")
        return total
    raise InvalidInput(
        f"message content must be a string, a list of content parts or null, got {type(content).__name__}"
    )


def _tool_call_tokens(call: Any, text_tokens: Callable[[str], int]) -> int:
    if not isinstance(call, Mapping):
        raise InvalidInput(f"a tool call must be an object, got {type(call).__name__}")
    function = call.get("function") or {}
    if not isinstance(function, Mapping):
        raise InvalidInput(f"a tool call's function must be an object, got {type(function).__name__}")
    name = function.get("name") or ""
    arguments = function.get("arguments") or ""
    if isinstance(arguments, Mapping | list):
        # Some clients hand over parsed arguments; the model sees them as compact JSON text.
        arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    return (
        TOKENS_PER_TOOL_CALL
        + text_tokens(_as_text(name, "tool call name"))
        + text_tokens(_as_text(arguments, "tool call arguments"))
    )


def _as_text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
