"""TOK-5 across models: a count stored with a message is reused when it was made with the tokenizer the
window counts with; a message counted with another tokenizer is recounted, once per message and tokenizer.

A stored message says which tokenizer made its count under "tokens_encoding"; one that does not say
(counts stored before the open families' tokenizers shipped) is reused as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from chat_core.engine.tokens.encodings import encoding_for_model
from chat_core.runtime import current

MessageCounter = Callable[[Mapping[str, Any]], int]

#: Recounts kept by the runtime (message ids are unique and a stored message never changes).
RECOUNT_CACHE_SIZE: Final = 4096
RECOUNTS: Final = "engine.tokens.recounts"


def reuse_stored(
    counter: MessageCounter, *, method: str, model: str | None, encoding: str | None
) -> MessageCounter:
    """`counter`, except that a message's stored "tokens" count is used when it is this tokenizer's."""
    counted = encoding if encoding is not None else encoding_for_model(model)

    def count(message: Mapping[str, Any]) -> int:
        stored = message.get("tokens")
        if type(stored) is not int or stored < 0:
            return counter(message)
        counted_with = message.get("tokens_encoding")
        if method == "estimate" or counted_with is None or counted_with == counted:
            return stored
        message_id = message.get("message_id")
        if not isinstance(message_id, str):
            return counter(message)
        recounts: dict[tuple[str, str, str], int] = current().resource(RECOUNTS, lambda settings: {})
        key = (message_id, counted, method)
        cached = recounts.get(key)
        if cached is None:
            cached = counter(message)
            if len(recounts) >= RECOUNT_CACHE_SIZE:
                recounts.clear()
            recounts[key] = cached
        return cached

    return count
