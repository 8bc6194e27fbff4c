"""The offline model: a deterministic stand-in that answers when no LLM_BASE_URL is set."""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.engine import tokens
from chat_core.errors import ChatError
from chat_core.llm import offline_facts
from chat_core.llm.completion import ChunkSink, Completion, StreamInterrupted, Usage, to_openai_messages
from chat_core.settings import Settings, get_settings

OFFLINE_MODEL_NAME: Final = "offline-model"
OFFLINE_REPLY_PREFIX: Final = "[offline model]"

# -- the offline model --------------------------------------------------------------------------------


class OfflineProvider:
    """A deterministic built-in model used when LLM_BASE_URL is unset.

    Every reply starts with "[offline model]" and reports what it received (how many messages, how
    many tokens, the last user message and the one before it), so a user can see the history being
    carried without a real model. Usage is the local exact count (tiktoken, TOK-2/TOK-4) of the
    messages and of the reply, with a TOK-1 estimate as fallback, and is marked `usage_reported=True`:
    the offline model is the provider here and it does report usage, so the "usage present" path of
    TOK-6 is what a local user sees.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings if settings is not None else get_settings()

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        time_budget_s: float | None = None,
        options: Mapping[str, Any] | None = None,
        on_chunk: ChunkSink | None = None,
    ) -> Completion:
        """The offline answer; `options` (generation settings) change nothing in it. With `on_chunk` it
        is handed over word by word as Chat Completions chunks, then a chunk with the usage."""
        started = time.monotonic()
        model = model or self.settings.llm_model
        sent = to_openai_messages(messages)
        prompt_tokens = _local_chat_tokens(sent, model)
        # MEM-37: the fact extraction prompt is answered with operations, as a real model would.
        content = (
            offline_facts.answer(sent)
            if offline_facts.is_extraction(sent)
            else self._reply(sent, prompt_tokens)
        )
        completion_tokens = _local_text_tokens(content, model)
        usage = Usage(prompt_tokens, completion_tokens, prompt_tokens + completion_tokens)
        digest = hashlib.sha256(json.dumps(sent, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        raw: dict[str, Any] = {
            "id": f"offline-{digest[:16]}",
            "object": "chat.completion",
            "model": OFFLINE_MODEL_NAME,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": usage.to_dict(),
        }
        completion = Completion(
            content=content,
            model=OFFLINE_MODEL_NAME,
            usage=usage,
            usage_reported=True,
            tool_calls=None,
            finish_reason="stop",
            raw=raw,
            latency_ms=round((time.monotonic() - started) * 1000, 1),
            offline=True,
        )
        if on_chunk is not None:
            _stream(completion, raw["id"], on_chunk)
        return completion

    @staticmethod
    def _reply(sent: Sequence[Mapping[str, Any]], prompt_tokens: int) -> str:
        roles = [m["role"] for m in sent]
        user_texts = [_plain_text(m.get("content")) for m in sent if m["role"] == "user"]
        parts = [
            f"{OFFLINE_REPLY_PREFIX} No LLM_BASE_URL is configured, so the built-in offline model answers.",
            f"I received {len(sent)} message{'s' if len(sent) != 1 else ''} ({_role_summary(roles)}), "
            f"{prompt_tokens} tokens in all.",
        ]
        if user_texts:
            parts.append(f"Your message: {_quote(user_texts[-1])}")
        if len(user_texts) > 1:
            parts.append(f"Before that you said: {_quote(user_texts[-2])}")
        return "\n".join(parts)


def _stream(completion: Completion, answer_id: str, on_chunk: ChunkSink) -> None:
    """The offline answer handed over word by word, then the finish and the usage chunks."""
    head = {"id": answer_id, "object": "chat.completion.chunk", "created": 0, "model": OFFLINE_MODEL_NAME}
    sent: list[str] = []
    try:
        for index, word in enumerate(completion.content.split(" ")):
            piece = word if index == 0 else " " + word
            delta: dict[str, Any] = (
                {"role": "assistant", "content": piece} if index == 0 else {"content": piece}
            )
            on_chunk({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            sent.append(piece)
        on_chunk({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        on_chunk({**head, "choices": [], "usage": completion.usage.to_dict()})
    except Exception as exc:  # the caller stopped listening: what it was sent is what is kept
        reason = f"the client went away ({type(exc).__name__})"
        partial = replace(completion, content="".join(sent), finish_reason=None, interrupted=reason)
        raise StreamInterrupted(reason, partial) from exc


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _quote(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return f"“{flat}”"
    return f"“{flat[:limit]}…” ({len(text)} characters)"


def _role_summary(roles: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for role in roles:
        counts[role] = counts.get(role, 0) + 1
    return ", ".join(f"{n} {role}" for role, n in counts.items()) or "none"


def _local_chat_tokens(messages: list[dict[str, Any]], model: str) -> int:
    counter = getattr(tokens, "count_chat_tokens", None)
    if callable(counter):
        try:
            return int(counter(messages, model=model))
        except (ChatError, LookupError, ValueError, OSError):
            pass  # the estimate below still gives the user a useful number
    return sum(tokens.estimate_message_tokens(_plain_text(m.get("content"))) for m in messages)


def _local_text_tokens(text: str, model: str) -> int:
    counter = getattr(tokens, "count_tokens", None)
    if callable(counter):
        try:
            return int(counter(text, model))
        except (ChatError, LookupError, ValueError, OSError):
            pass
    return tokens.estimate_message_tokens(text)


# -- the offline embeddings ---------------------------------------------------------------------------

OFFLINE_EMBEDDINGS_MODEL: Final = "offline-embeddings"
#: The offline vectors' size (RECALL_EMBEDDINGS_DIMENSIONS changes it).
OFFLINE_DIMENSIONS: Final = 256
_WORDS: Final = re.compile(r"[^\W_]+")


def offline_vector(text: str, dims: int = OFFLINE_DIMENSIONS) -> list[float]:
    """A deterministic stand-in embedding: each word and each character trigram of it (with its edges,
    "#lisbon#" gives "#li", "lis", ...) hashed into `dims` signed buckets, then normalised. Texts that
    share words or word stems ("photographs", "photography") come out close; unrelated ones near 0."""
    vector = [0.0] * dims
    for word in _WORDS.findall(unicodedata.normalize("NFKC", text).casefold()):
        features = [(f"w:{word}", 1.0)]
        padded = f"#{word}#"
        features += [(f"g:{padded[i : i + 3]}", 0.5) for i in range(max(1, len(padded) - 2))]
        for feature, weight in features:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % dims
            vector[bucket] += weight if digest[4] & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector
