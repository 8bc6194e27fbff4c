"""Token counting: the TOK-1 estimate, exact counts from shipped encodings, approximation, chat format.

`encodings` loads the shipped tiktoken files (on the first exact count) and maps models to them
(`families` adds the open model families' tokenizers, `chat_families` their chat templates; `spm` and
`chat_mistral` Mistral's SentencePiece tokenizers and chat formats);
`approx` estimates without a tokenizer; `chat_format` counts messages and prompts; `tools` counts tool
definitions (TOK-8).
"""

from __future__ import annotations

from chat_core.engine.tokens.approx import approx_features, approx_tokens
from chat_core.engine.tokens.chat_families import NON_TEXT_PART_TOKENS
from chat_core.engine.tokens.chat_format import (
    REPLY_PRIMING_TOKENS,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TOKENS_PER_TOOL_CALL,
    Method,
    count_chat_tokens,
    count_message_tokens,
    message_counter,
    reply_priming_tokens,
)
from chat_core.engine.tokens.encodings import (
    ENCODINGS_DIR,
    SHIPPED_ENCODINGS,
    UnknownEncoding,
    count_tokens,
    encoding_for_model,
    estimate_message_tokens,
    get_encoding,
    tokenizer_for_model,
)
from chat_core.engine.tokens.tools import count_tool_tokens

__all__ = [
    "ENCODINGS_DIR",
    "NON_TEXT_PART_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "SHIPPED_ENCODINGS",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOKENS_PER_TOOL_CALL",
    "Method",
    "UnknownEncoding",
    "approx_features",
    "approx_tokens",
    "count_chat_tokens",
    "count_message_tokens",
    "count_tokens",
    "count_tool_tokens",
    "encoding_for_model",
    "estimate_message_tokens",
    "get_encoding",
    "message_counter",
    "reply_priming_tokens",
    "tokenizer_for_model",
]
