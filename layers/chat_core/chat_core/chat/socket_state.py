"""RSP-12: a Responses WebSocket connection's lifetime: opened for its caller, found per message, closed."""

from __future__ import annotations

import time
from typing import Any, Final

from chat_core.store import sockets
from chat_core.store.sockets import SocketRecord

__all__ = ["SocketRecord", "close", "evict", "find", "keep", "open_socket"]

#: API Gateway ends a WebSocket connection after two hours whatever happens; the item outlives that a
#: little so a $disconnect delivered late still finds it, and TTL removes the ones never disconnected.
SOCKET_TTL_SECONDS: Final = 2 * 3600 + 600


def open_socket(connection_id: str, owner: str) -> None:
    sockets.open_socket(connection_id, owner, int(time.time()) + SOCKET_TTL_SECONDS)


def find(connection_id: str) -> SocketRecord | None:
    return sockets.find_socket(connection_id)


def keep(socket: SocketRecord, response_id: str, items: list[dict[str, Any]] | None) -> None:
    """What a later `previous_response_id` may continue from; a stored response (no items) is written
    only when it replaces something kept, since the table holds it already."""
    if items is None and socket.kept_id is None:
        return
    sockets.keep_response(socket.connection_id, response_id if items is not None else None, items)


def evict(socket: SocketRecord) -> None:
    """A failed turn forgets what the socket kept (nothing to write when it kept nothing)."""
    if socket.kept_id is not None:
        sockets.keep_response(socket.connection_id, None, None)


def close(connection_id: str) -> None:
    sockets.close_socket(connection_id)
