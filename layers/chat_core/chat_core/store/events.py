"""Turn-log event items (seed 002) in the conversation's partition, and the Query that pages them.

Keys: `EVT#<turn, zero-padded>#<index in turn, zero-padded>`; session_start is turn 0, session_end sorts
last (`EVT#~END`). "EVT#" sorts before "MSG#", so the post's one descending Query (from `~META` down
through the newest messages, key condition `sk >= "MSG#"`) never reads an event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute

from chat_core.engine.turnlog import LogEvent
from chat_core.store.base import TableItem
from chat_core.store.keys import SEQ_WIDTH, conversation_pk

EVENT_SK_PREFIX = "EVT#"
SESSION_END_SK = f"{EVENT_SK_PREFIX}~END"
_INDEX_WIDTH = 4


def event_sk(turn: int, index: int) -> str:
    """Sort key of the event at `index` inside `turn` (turn 0 holds session_start)."""
    return f"{EVENT_SK_PREFIX}{turn:0{SEQ_WIDTH}d}#{index:0{_INDEX_WIDTH}d}"


def turn_prefix(turn: int) -> str:
    """The sort-key prefix of every event of one turn."""
    return f"{EVENT_SK_PREFIX}{turn:0{SEQ_WIDTH}d}#"


class EventItem(TableItem, discriminator="event"):
    """One turn-log event. The seed's `type` is stored as `event_type` (`type` is the item discriminator)."""

    conversation_id = UnicodeAttribute()
    ts = UnicodeAttribute()
    event_type = UnicodeAttribute()
    turn = NumberAttribute(null=True)
    step = NumberAttribute(null=True)
    content = UnicodeAttribute(null=True)
    # Stored as event_role so an item filter on `role` only ever meets messages.
    role = UnicodeAttribute(null=True, attr_name="event_role")
    meta = JSONAttribute(null=True)

    @classmethod
    def new(cls, owner: str, conversation_id: str, event: LogEvent) -> EventItem:
        """The item of `event`; session_end gets the key that sorts after every turn."""
        pk = conversation_pk(owner, conversation_id)
        sk = SESSION_END_SK if event.type == "session_end" else event_sk(event.turn or 0, event.index)
        return cls(
            pk,
            sk,
            conversation_id=conversation_id,
            ts=event.ts,
            event_type=event.type,
            turn=event.turn,
            step=event.step,
            content=event.content,
            role=event.role,
            meta=event.meta or {},
        )

    def to_line(self) -> dict[str, Any]:
        """The seed-002 JSONL object of this event."""
        meta = self.meta if isinstance(self.meta, Mapping) else {}
        return LogEvent(
            type=self.event_type,  # type: ignore[arg-type]
            ts=self.ts,
            turn=int(self.turn) if self.turn is not None else None,
            step=int(self.step) if self.step is not None else None,
            content=self.content,
            role=self.role,
            meta=dict(meta),
        ).to_line(self.conversation_id)
