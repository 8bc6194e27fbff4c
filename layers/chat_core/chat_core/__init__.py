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
- `settings`, `config`, `runtime`, `errors`, `observability`: shared by all. `config` reads the
  environment into `Settings`; `runtime` holds the one `Runtime` of the process (its settings and every
  client, cache and wrapper built from them, each on first use); `settings.get_settings()` is that
  runtime's settings. No other module keeps mutable process state: a test or the local server builds a
  runtime from the settings it wants and installs it (`runtime.use`).
"""

from __future__ import annotations

from chat_core import lazy_packages

__version__ = "0.1.0"

lazy_packages.install()
