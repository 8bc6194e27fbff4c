"""Token counting: the TOK-1 estimate, exact tiktoken counts from shipped encodings, chat-format totals."""

from __future__ import annotations

import math


def estimate_message_tokens(text: str) -> int:
    """TOK-1: "" -> 0, otherwise max(1, ceil(utf8_bytes / 4)). Other code relies on exactly this."""
    if not text:
        return 0
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))
