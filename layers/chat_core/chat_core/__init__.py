"""chat_core: token counting, window assembly, storage and the model client of Chat History Service.

Packages, and what each may import (a test checks it):

- `engine`: pure logic (tokens, window, context, model limits, turn log, tool pairing); imports nothing
  else of chat_core but `errors`.
- `store`: the one DynamoDB table (PynamoDB items, keys, repositories); imports `engine`.
- `llm`: the model client (OpenAI-compatible HTTP, offline model, API keys); imports `engine`.
- `chat`, `dialogue`: the operations of the two domains, one module per operation; import `engine`,
  `store` and (the post and the summarizer only) `llm`.
- `http`: the edge shared by every handler (resolver, identity, request and response models, error
  codes to statuses); imports the domains.
- `settings`, `errors`, `observability`: shared by all.
"""

from __future__ import annotations

import sys

__version__ = "0.1.0"


def reset() -> None:
    """Forget every process-wide cache of the loaded chat_core modules (settings, the table binding and
    connection, the idempotent post's wiring, the model provider and its HTTP client).

    Each module that keeps process state defines `reset_process_state()`; only loaded modules are
    touched, so resetting never imports anything. For tests and the local server, which change
    settings within one process.
    """
    for name, module in list(sys.modules.items()):
        if name.startswith("chat_core.") and module is not None:
            forget = getattr(module, "reset_process_state", None)
            if callable(forget):
                forget()
