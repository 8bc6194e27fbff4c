"""Mistral's SentencePiece tokenizers (families.SENTENCEPIECE_SPECS), counted by the `sentencepiece` library.

The library is imported on the first count of one of them, never before: a process that counts only
the tiktoken encodings does not load it. Its model files are mistral-common's own, unchanged, so an
encoding here gives the ids mistral-common's SentencePieceTokenizer gives (`encode(text, bos=False,
eos=False)`); tests/unit/test_tokens_mistral_sp.py compares them on the mixed corpora.
"""

from __future__ import annotations

from typing import Any


class SentencePieceEncoding:
    """The part of tiktoken's Encoding the layer uses (`encode_ordinary`, `encode`, `decode`, `name`)."""

    def __init__(self, name: str, model_proto: bytes) -> None:
        import sentencepiece

        self.name = name
        self._processor: Any = sentencepiece.SentencePieceProcessor(model_proto=model_proto)
        self.n_vocab: int = int(self._processor.get_piece_size())

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of `text` as mistral-common encodes it, with no begin or end token; control-token
        strings such as "[INST]" are ordinary text (SentencePiece never matches them in text)."""
        try:
            ids: list[int] = self._processor.encode(text)
        except (UnicodeEncodeError, RuntimeError):
            # A lone surrogate (the binding cannot pass it to C++): replaced, as tiktoken does, rather
            # than a crash on a client's text. Anything else fails again below and is raised.
            ids = self._processor.encode(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
        return ids

    def encode(self, text: str, **_: Any) -> list[int]:
        return self.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        text: str = self._processor.decode(list(tokens))
        return text
