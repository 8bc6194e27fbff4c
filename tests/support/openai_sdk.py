"""The official `openai` SDK pointed at a local server as a user points it, and a read of what was stored."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from tests.support.local_server import ServerProcess


def sdk(server: ServerProcess, user: str = "alice") -> openai.OpenAI:
    """The SDK as a user points it at the service: base URL, identity header (dev mode), no retries."""
    return openai.OpenAI(
        base_url=f"{server.url}/v1",
        api_key="unused-locally",
        default_headers={"X-User-Id": user},
        max_retries=0,
    )


def stored(api: httpx.Client, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's messages as GET /conversations/{id} returns them."""
    messages: list[dict[str, Any]] = api.get(f"/conversations/{conversation_id}").json()["messages"]
    return messages
