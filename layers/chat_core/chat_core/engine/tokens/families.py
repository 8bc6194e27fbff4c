"""Exact counts for the open model families: their tokenizers as tiktoken encodings, and a dated model map.

Every family below is byte-level BPE with a regex pre-tokenizer, so tiktoken reproduces it exactly
from the family's ranks and pattern (tests/unit/test_tokens_families.py checks the ids against the
reference `tokenizers` library on mixed corpora). The files ship in the layer beside the OpenAI ones;
encodings/SOURCES.json names the package, version and SHA-256 each was taken from, and
scripts/build_tokenizers.py rebuilds them (as `<name>.ranks`: the same ranks, packed to load fast).

- llama3: Meta's own `tokenizer.model` (a tiktoken file), Llama 3, 3.1, 3.2 and 3.3.
- llama4: Meta's own `tokenizer.model` (a tiktoken file), Llama 4 (o200k's pattern, 200k ranks).
- qwen2: the Qwen2 / Qwen2.5 / Qwen3 / QwQ vocabulary; its tokenizer NFC-normalises first.
- deepseek_v3: DeepSeek V3, V3.1, V3.2 and R1. Its tokenizer.json splits in three steps (digit groups,
  then CJK runs, then a GPT-style regex inside what is left); `DEEPSEEK_V3_PATTERN` is those three
  steps as one leftmost-first regex (the pieces it cuts are the ones the three steps cut).
- mistral_tekken: Mistral's tekken (NeMo, Pixtral, Ministral, Small 3.x): the first 130,072 ranks,
  ids offset by the 1,000 special tokens (counts do not depend on the offset).

Mistral's earlier models use SentencePiece, not byte-level BPE: `SENTENCEPIECE_SPECS` ships
mistral-common's four SentencePiece files unchanged (`<name>.model`), counted by the `sentencepiece`
library (spm.py), each with the chat format of its mistral-common version (chat_mistral.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

# ------------------------------------------------------------------------------------- the patterns

_LLAMA3_PATTERN: Final = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
_O200K_STYLE: Final = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
_QWEN2_PATTERN: Final = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
_TEKKEN_PATTERN: Final = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
    r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# DeepSeek V3's second step isolates runs of these (CJK ideographs, hiragana, katakana).
_CJK: Final = "\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff"
# Its third step, restricted so that no piece crosses a digit or a CJK run (the earlier steps' cuts):
# a class loses the digits and CJK characters, and "followed by no non-space" also holds before one.
_DS_STEP3: Final = (
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+""",
    rf"""[^\r\n\p{{L}}\p{{P}}\p{{S}}\p{{N}}{_CJK}]?[\p{{L}}\p{{M}}--[{_CJK}]]+""",
    rf""" ?[\p{{P}}\p{{S}}--[{_CJK}]]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    rf"""\s+(?![^\s\p{{N}}{_CJK}])""",
    r"""\s+""",
)
# The third step inside a CJK run: letters (a stray unassigned code point may lead), then symbols.
_DS_CJK: Final = (
    rf"""[[{_CJK}]--[\p{{L}}\p{{P}}\p{{S}}]]?[[{_CJK}]&&[\p{{L}}\p{{M}}]]+""",
    rf"""[[{_CJK}]&&[\p{{P}}\p{{S}}]]+""",
)
# What no alternative matches stays one piece up to the next match (a split keeps the gaps), e.g. a
# zero-width joiner between emoji or a control character; tiktoken would drop it, so it is matched here.
DEEPSEEK_V3_PATTERN: Final = "|".join(
    [
        r"\p{N}{1,3}",
        *_DS_CJK,
        rf"(?:(?!{'|'.join(_DS_CJK)})[{_CJK}])+",
        *_DS_STEP3,
        rf"(?:(?!{'|'.join(_DS_STEP3)})[^\p{{N}}{_CJK}])+",
    ]
)


class FamilySpec(NamedTuple):
    """One shipped family tokenizer: its file's SHA-256, pattern, and what the reference does first."""

    sha256: str
    pat_str: str
    #: Unicode normalisation the family's tokenizer applies before splitting ("NFC"), if any.
    normalize: str | None = None
    special_tokens: Mapping[str, int] = MappingProxyType({})
    #: Who publishes the tokenizer and under which licence (the files' notices are in encodings/).
    licence: str = ""


FAMILY_SPECS: Final[dict[str, FamilySpec]] = {
    "llama3": FamilySpec(
        sha256="113e1977eadec4e453ed7ead82f9caac63579602474daa2469f7d6f44ea4f669",
        pat_str=_LLAMA3_PATTERN,
        licence="Llama 3.x Community License (Meta); see encodings/licenses/",
    ),
    "llama4": FamilySpec(
        sha256="c2e31cc7e88a9dc74b7ef77ea3db5ccfa0260ed662a4b29e7c73c64cc0a4b9c8",
        pat_str=_O200K_STYLE,
        licence="Llama 4 Community License (Meta); see encodings/licenses/",
    ),
    "qwen2": FamilySpec(
        sha256="724f133edc644bb5aec04b932abf03cffd3377b9c65d2df44f354afe5a57c9b4",
        pat_str=_QWEN2_PATTERN,
        normalize="NFC",
        licence="Apache-2.0 (Qwen2.5 / Qwen3)",
    ),
    "deepseek_v3": FamilySpec(
        sha256="80056d15736a4cf5720ae7a0409eba33041119c1ddb5b0ec07c0daf2454cca2c",
        pat_str=DEEPSEEK_V3_PATTERN,
        licence="MIT (DeepSeek-R1) / DeepSeek model licence (V3)",
    ),
    "mistral_tekken": FamilySpec(
        sha256="f12ae1ab49540b12820078b1cdba52bfaa252b6050823006bff2fba5b90e8e6f",
        pat_str=_TEKKEN_PATTERN,
        licence="Apache-2.0 (mistral-common)",
    ),
}


class SentencePieceSpec(NamedTuple):
    """One shipped SentencePiece tokenizer: its file's SHA-256 and the chat format version it goes with."""

    sha256: str
    #: mistral-common's instruct tokenizer version ("v1", "v2", "v3", "v7"): how a chat is rendered.
    version: str
    licence: str = "Apache-2.0 (mistral-common)"


#: Mistral's SentencePiece tokenizers, the files mistral-common 1.13.1 ships (encodings/SOURCES.json).
#: v2, v3 and v7 share v1's 32,000 text pieces behind 768 control tokens; v3 and v7 add a few
#: user-defined pieces (such as "[REFERENCE_DOC_0]") that text can contain.
SENTENCEPIECE_SPECS: Final[dict[str, SentencePieceSpec]] = {
    "mistral_sp_v1": SentencePieceSpec(
        "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055", "v1"
    ),
    "mistral_sp_v2": SentencePieceSpec(
        "37f00374dea48658ee8f5d0f21895b9bc55cb0103939607c8185bfd1c6ca1f89", "v2"
    ),
    "mistral_sp_v3": SentencePieceSpec(
        "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33", "v3"
    ),
    "mistral_sp_v7": SentencePieceSpec(
        "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a", "v7"
    ),
}

#: Tokenizers the families use that the layer does not ship: a model mapped to one gets the
#: calibrated estimate, said so, never a count from another vocabulary.
NOT_SHIPPED: Final = frozenset({"deepseek_v4", "claude", "gemini"})

# ------------------------------------------------------------------------------- the dated model map

#: The day the map below was last checked: aliases ("deepseek-chat", "mistral-large-latest") move.
MODEL_MAP_AS_OF: Final = "2025-09-30"


class ModelFamily(NamedTuple):
    """What a model name resolves to: a shipped tokenizer or a named one we do not ship."""

    tokenizer: str
    #: What the name meant on MODEL_MAP_AS_OF (for an alias) or which models the rule covers.
    meaning: str


# First match wins on the normalised name (lower case, provider path and ":tag" dropped). Compiled on
# first use (`_rules`): a process that never maps a model name does not pay for it.
_FAMILY_RULES: Final[tuple[tuple[str, ModelFamily], ...]] = tuple(
    (pattern, family)
    for pattern, family in (
        (r"deepseek-chat$", ModelFamily("deepseek_v3", "DeepSeek-V3.2-Exp, non-thinking mode (API alias)")),
        (r"deepseek-reasoner$", ModelFamily("deepseek_v3", "DeepSeek-V3.2-Exp, thinking mode (API alias)")),
        (r"deepseek-r1-distill-qwen", ModelFamily("qwen2", "DeepSeek-R1-Distill-Qwen: Qwen2.5's vocabulary")),
        (
            r"deepseek-r1-distill-llama",
            ModelFamily("llama3", "DeepSeek-R1-Distill-Llama: Llama 3's vocabulary"),
        ),
        (r"deepseek-v4", ModelFamily("deepseek_v4", "DeepSeek V4: its tokenizer is in no package we reach")),
        (r"deepseek-(?:v3|r1)(?![0-9])", ModelFamily("deepseek_v3", "DeepSeek V3 / V3.1 / V3.2 / R1")),
        (r"qw(?:en|q)", ModelFamily("qwen2", "Qwen2, Qwen2.5, Qwen3, QwQ and the qwen-plus/max/turbo API")),
        (r"(?:meta-)?llama-?4(?![0-9])", ModelFamily("llama4", "Llama 4 (Scout, Maverick)")),
        (r"(?:meta-)?llama-?3(?![0-9])", ModelFamily("llama3", "Llama 3, 3.1, 3.2, 3.3")),
        # Mistral on SentencePiece, by mistral-common's own model map (MODEL_NAME_TO_TOKENIZER_CLS) and
        # the model cards; before the tekken rule, which would take "codestral-2405".
        (r"mistral-large-2402", ModelFamily("mistral_sp_v2", "Mistral Large 24.02 (v2)")),
        (r"mistral-large-(?:instruct-)?2407", ModelFamily("mistral_sp_v3", "Mistral Large 2, 24.07 (v3)")),
        (
            r"(?:mistral|pixtral)-large",
            ModelFamily(
                "mistral_sp_v7",
                "Mistral Large 24.11 and Pixtral Large (v7); mistral-large-latest meant mistral-large-2411",
            ),
        ),
        (
            r"mistral-small-(?:instruct-)?2409",
            ModelFamily(
                "mistral_sp_v3",
                "Mistral Small 24.09 (v3: its model card gives a 32,768 vocabulary; mistral-common's "
                "deprecated model map says tekken)",
            ),
        ),
        (
            r"mistral-(?:small|tiny)-2312|mistral-small-2402|open-mixtral-8x7b",
            ModelFamily("mistral_sp_v2", "the API's Mistral 7B and Mixtral 8x7B of 23.12, Small 24.02 (v2)"),
        ),
        (r"mistral-medium-2312", ModelFamily("mistral_sp_v1", "Mistral Medium 23.12 (v1)")),
        (
            r"mistral-tiny|open-mistral-7b|mistral-7b-(?:instruct-)?v0\.3|open-mixtral-8x22b|mixtral-8x22b"
            r"|codestral-(?:2405|22b|mamba)|mathstral",
            ModelFamily(
                "mistral_sp_v3",
                "Mistral 7B v0.3 (open-mistral-7b, mistral-tiny-2407), Mixtral 8x22B, Codestral 24.05, "
                "Codestral Mamba, Mathstral (v3)",
            ),
        ),
        (
            r"mistral-7b|mixtral-8x7b",
            ModelFamily("mistral_sp_v1", "Mistral 7B v0.1 / v0.2 and Mixtral 8x7B open weights (v1)"),
        ),
        (
            r"(?:open-)?mistral-nemo|pixtral-12b|ministral-|mistral-small-(?:25|3)|mistral-medium-(?:25|3)"
            r"|mistral-(?:small|medium)-latest|devstral|magistral|codestral-(?:25|2)",
            ModelFamily(
                "mistral_tekken",
                "Mistral models on tekken (NeMo, Pixtral 12B, Ministral, Small 3+, Medium 3+); "
                "mistral-small-latest meant mistral-small-2506, mistral-medium-latest mistral-medium-2508",
            ),
        ),
        (
            r"claude",
            ModelFamily("claude", "Anthropic Claude: no public offline tokenizer for current models"),
        ),
        (r"gemini", ModelFamily("gemini", "Google Gemini: no public offline tokenizer")),
    )
)


def family_for_model(model: str | None) -> ModelFamily | None:
    """The open family `model` belongs to (by the built-in rules), or None when it is none of them."""
    if not model or not isinstance(model, str):
        return None
    name = normalise_model(model)
    for pattern, family in _rules():
        if pattern.match(name):
            return family
    return None


@functools.cache
def _rules() -> tuple[tuple[re.Pattern[str], ModelFamily], ...]:
    return tuple((re.compile(pattern), family) for pattern, family in _FAMILY_RULES)


def configured_tokenizer(model: str, overrides: Iterable[tuple[str, str]]) -> str | None:
    """The tokenizer settings.model_tokenizers gives `model` (longest matching name prefix), if any.

    Prefixes match the normalised name ("llama-3.3-70b-instruct"), or the full lower-case name when
    they contain a "/" ("openrouter/deepseek/").
    """
    full = model.strip().lower()
    name = normalise_model(model)
    best: tuple[int, str] | None = None
    for prefix, tokenizer in overrides:
        key = prefix.strip().lower()
        matches = bool(key) and (full.startswith(key) if "/" in key else name.startswith(key))
        if matches and (best is None or len(key) > best[0]):
            best = (len(key), tokenizer)
    return best[1] if best is not None else None


def normalise_model(model: str) -> str:
    """ "openrouter/meta-llama/Llama-3.3-70B-Instruct" -> "llama-3.3-70b-instruct"; "qwen3:32b" -> "qwen3"."""
    name = model.strip().lower().removeprefix("ft:")
    name = name.rsplit("/", 1)[-1]
    return name.split(":", 1)[0] if ":" in name else name
