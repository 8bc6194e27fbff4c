"""`store: false` on POST /v1/responses (RSP-2): the answer, and no content kept.

The turn is an ordinary post (the window, usage, cost, budgets, rate limit, turn log) in a conversation
of its own, which is deleted for good in the same request as soon as the answer is recorded: its whole
partition (messages, turn-log events, content parts kept in S3), not a soft delete left to the
retention period. With an Idempotency-Key the answer itself is the key's record (`chat.once`, under
`ONCE_NAME`; zlib-compressed when large), so a retry is answered from it and reads no message; the post
keeps no record of its own. What is kept: the usage and cost on the owner's day (COST-3; the table's
stream prices the answer from the insert it saw, although the item is gone) and the key's record until
it expires (IDEMPOTENCY_TTL_SECONDS).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from chat_core.chat import responses
from chat_core.http.responses_api import ResponseCreateIn

#: The idempotent operation's name (the records' key prefix).
ONCE_NAME: Final = "responses_unstored"
#: A record's answer is kept as JSON up to this many bytes, compressed above (DynamoDB's item is 400 KB).
PLAIN_UP_TO: Final = 32 * 1024
#: The events that end a streamed response: a client may act on them at once (ask for the response,
#: close the socket), so they are sent only once the conversation is gone.
LAST_EVENTS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
#: What a retry may change without being another request: whether it streams.
NOT_HASHED: Final = frozenset({"stream", "stream_options"})


def hashed_body(request: ResponseCreateIn) -> dict[str, Any]:
    """What an Idempotency-Key's payload check compares: the request, streamed or not."""
    return request.model_dump(mode="json", exclude_none=True, exclude=set(NOT_HASHED))


def record(status: int, body: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    """The key's record of an answer: the answer whole."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    kept: dict[str, Any] = {"status": status, "headers": dict(headers)}
    if len(text.encode("utf-8")) <= PLAIN_UP_TO:
        kept["body"] = body
    else:
        kept["body_z"] = base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return kept


def answer_of(kept: Mapping[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, body, headers) of a key's record."""
    if "body_z" in kept:
        body = json.loads(zlib.decompress(base64.b64decode(str(kept["body_z"]))).decode("utf-8"))
    else:
        body = dict(kept.get("body") or {})
    headers = {str(k): str(v) for k, v in (kept.get("headers") or {}).items()}
    return int(kept.get("status", 200)), body, headers


def drop(owner: str, conversation_ids: Iterable[str]) -> None:
    """The conversations the request wrote in, deleted for good (each once)."""
    for conversation_id in dict.fromkeys(conversation_ids):
        responses.discard(owner, conversation_id)


class HeldLast:
    """An event sink that holds a response's last event until `release`: a `store: false` answer is
    complete for the client only when nothing of it is readable any more (RSP-9)."""

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        self._emit = emit
        self._held: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("type") in LAST_EVENTS:
            self._held.append(event)
        else:
            self._emit(event)

    def release(self) -> None:
        held, self._held = self._held, []
        for event in held:
            self._emit(event)
