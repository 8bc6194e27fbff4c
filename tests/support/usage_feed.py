"""The table's stream feeding the owners' usage of the day (COST-3) in tests that run handlers in process.

Deployed, the summarizer's event source mapping delivers each priced reply's INSERT within a second or
two and `chat.usage_stream` adds it to the day item. In process there is no poller: `UsageFeed` reads
the moto stream itself and hands each shard's records (filtered by the summarizer's FilterCriteria from
template.yaml) to the same code, just before anything reads usage (GET /usage, a budget check), as a
stream that is never behind would. `hold()` stops it, for tests of what a read sees before delivery.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from chat_core.chat import usage_stream
from chat_core.store import ledger

from tests.support.stream_records import TableStream, for_function

if TYPE_CHECKING:
    import pytest

SUMMARIZER = "SummarizeConversationFunction"


class UsageFeed:
    def __init__(self, table: str) -> None:
        self.stream = TableStream(table)
        self._lock = threading.Lock()
        self.held = False

    def drain(self) -> int:
        """Deliver every record written since the last drain; returns how many usages were added."""
        if self.held:
            return 0
        added = 0
        with self._lock:
            for shard, records in self.stream.read_shards().items():
                delivered = for_function(SUMMARIZER, records)
                if delivered:
                    added += usage_stream.record_usage(delivered, shard)
        return added

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Nothing is delivered inside the block (a stream that is behind); what waited comes after."""
        self.held = True
        try:
            yield
        finally:
            self.held = False

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Drain before each read of the usage items (and on `deliver()`, for tests reading them raw)."""
        monkeypatch.setattr(_installed, "feed", self)
        for name in ("read_days", "read_since"):
            original: Callable[..., Any] = getattr(ledger, name)

            def reading(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
                self.drain()
                return _original(*args, **kwargs)

            monkeypatch.setattr(ledger, name, reading)


class _Installed:
    feed: UsageFeed | None = None


_installed = _Installed()


def deliver() -> int:
    """Deliver what the stream holds now to the usage items (tests that read the items themselves)."""
    return _installed.feed.drain() if _installed.feed is not None else 0


@contextmanager
def held() -> Iterator[None]:
    """A stream that is behind: nothing is delivered inside the block (see `UsageFeed.hold`)."""
    feed = _installed.feed
    if feed is None:
        yield
        return
    with feed.hold():
        yield
