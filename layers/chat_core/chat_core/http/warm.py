"""PERF-2: a function that counts tokens loads its deployment model's tokenizer at init when init is off
the request path (SnapStart, provisioned concurrency).

Encodings load on their first count (TOK-3): 150-400 ms of CPU for a 100k-200k-token vocabulary, paid by
the first request that counts. Under SnapStart the init runs when a version is published and the
snapshot keeps what it built, so loading the tokenizer of the deployment's model (LLM_MODEL) there takes
that cost off the first request after every restore. On demand nothing loads at import (PERF-1): an
on-demand init is on the first request's path anyway, and a request for another model would have paid
for a tokenizer it does not use. Only the functions that count call `preload_tokenizer` (their app.py),
so the others neither import the counting code nor grow their snapshot.
"""

from __future__ import annotations

from chat_core import startup
from chat_core.engine import tokens
from chat_core.errors import ChatError
from chat_core.observability import logger
from chat_core.settings import Settings, get_settings


def preload_tokenizer(settings: Settings | None = None) -> str | None:
    """Load the encoding LLM_MODEL is counted with, when init is off the request path; the encoding's
    name, or None when nothing was loaded (on demand, or the file could not be read: then the first
    count reports it, as it would have without this)."""
    if not startup.prewarmed():
        return None
    model = (settings or get_settings()).llm_model
    try:
        name = tokens.encoding_for_model(model)
        tokens.get_encoding(name)
    except ChatError as exc:
        logger.warning(
            "tokenizer not loaded at init; the first count loads it", model=model, error=exc.message
        )
        return None
    logger.info("tokenizer loaded at init", model=model, encoding=name)
    return name
