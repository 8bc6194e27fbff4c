"""OPS-4: one owner's count of model-calling requests in one window, checked and counted in one call.

Each window is an item of the owner's own `#RATE` partition, keyed by the window's start: a conditional
UpdateItem adds one to its count when the count is under the limit (or the item is new), and refuses
otherwise. No read comes before it, two requests racing for the last place cannot both take it, and it
is never part of a conversation's transaction: one user's posts to different conversations never
conflict over it. The item expires by TTL (`expires_at`) after its window.
"""

from __future__ import annotations

from typing import Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException, UpdateError
from pynamodb.expressions.operand import Path

from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.keys import rate_pk

#: The item's `type`: the table's stream consumers filter on it and none of them takes this one.
RATE_WINDOW_TYPE: Final = "rate_window"


def window_sk(window_start: int) -> str:
    """The window's item: its start in seconds since the epoch."""
    return f"W#{window_start}"


def count_request(owner: str, window_start: int, limit: int, expires_at: int) -> bool:
    """Count one request of `owner` in the window starting at `window_start` (epoch seconds) when fewer
    than `limit` were counted there; False (nothing written) when `limit` were. One UpdateItem."""
    base.bind()
    count = Path("n")
    actions = [
        count.add(1),
        Path("type").set(RATE_WINDOW_TYPE),
        Path("expires_at").set(expires_at),
    ]
    condition = count.does_not_exist() | (count < limit)
    try:
        TableItem._get_connection().update_item(
            rate_pk(owner), window_sk(window_start), actions=actions, condition=condition
        )
    except UpdateError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise base.store_error(exc) from exc
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        # Throttled or unreachable after retries: 503 store_unavailable with Retry-After, as elsewhere.
        raise base.store_error(exc) from exc
    return True
