"""What the store hands the domain: frozen records read from its items, numbers as ints (DynamoDB's
numbers read back as floats or Decimals; they are converted here, once)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, cast

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from chat_core.store.items import Conversation, Message, Summary, UsageMap
from chat_core.store.keys import META_SK, conversation_pk, listing_sk, message_sk, owner_pk
from chat_core.store.partitions import parse_conversation_pk


@dataclass(frozen=True)
class SummaryRecord:
    """The running summary of a conversation's earliest messages, `from_seq..to_seq` inclusive (seed 001).

    `text` is what the model wrote (capped); `tokens` is the exact chat-format count of the system-side
    message the window sends (TOK-5). `rounds` counts incremental updates; `cost_micros` is this round's
    model call (None: no price for its model), `cost_total_micros` every round's so far (COST-2).
    """

    conversation_id: str
    from_seq: int
    to_seq: int
    text: str
    model: str
    created_at: str
    tokens: int = 0
    rounds: int = 1
    messages_covered: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_micros: int | None = None
    cost_total_micros: int = 0

    @classmethod
    def of(cls, item: Summary) -> SummaryRecord:
        return cls(
            conversation_id=item.conversation_id,
            from_seq=int(item.from_seq),
            to_seq=int(item.to_seq),
            text=item.text,
            model=item.model,
            created_at=item.created_at,
            tokens=int(item.tokens),
            rounds=int(item.rounds),
            messages_covered=int(item.messages_covered),
            input_tokens=int(item.input_tokens),
            output_tokens=int(item.output_tokens),
            cost_micros=int(item.cost_micros) if item.cost_micros is not None else None,
            cost_total_micros=int(item.cost_total_micros or 0),
        )

    def to_item(self, owner: str) -> Summary:
        """The summary item of this record in `owner`'s conversation partition."""
        return Summary.new(
            owner,
            self.conversation_id,
            from_seq=self.from_seq,
            to_seq=self.to_seq,
            text=self.text,
            tokens=self.tokens,
            model=self.model,
            created_at=self.created_at,
            rounds=self.rounds,
            messages_covered=self.messages_covered,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_micros=self.cost_micros,
            cost_total_micros=self.cost_total_micros,
        )


@dataclass(frozen=True)
class MessageUsage:
    """Token usage of one model call: as the provider reported it, or as counted locally."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @classmethod
    def of(cls, value: UsageMap | None) -> MessageUsage | None:
        if value is None:
            return None
        return cls(
            prompt_tokens=int(value.prompt_tokens or 0),
            completion_tokens=int(value.completion_tokens or 0),
            total_tokens=_total(value),
        )

    def to_map(self) -> UsageMap:
        """Its map on a message item: the total is left out when it is prompt + completion."""
        prompt, completion = self.prompt_tokens, self.completion_tokens
        total = None if self.total_tokens == prompt + completion else self.total_tokens
        return UsageMap(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _total(value: UsageMap) -> int:
    """The stored total, or prompt + completion where it was not stored (it equals their sum)."""
    if value.total_tokens is None:
        return int(value.prompt_tokens or 0) + int(value.completion_tokens or 0)
    return int(value.total_tokens)


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


@dataclass(frozen=True)
class MessageRecord:
    """One message of a conversation (`sk = MSG#<seq>`), as `store.items.Message` describes each field:
    appended once, never rewritten (only its `pinned` flag changes); `tokens` counted at write (TOK-5)."""

    owner: str
    conversation_id: str
    seq: int
    message_id: str
    role: str
    created_at: str
    content: str | None = None
    parts: Any = None
    status: str = "ok"
    tokens: int = 0
    model: str | None = None
    usage: MessageUsage | None = None
    usage_reported: bool | None = None
    local_usage: MessageUsage | None = None
    error: Any = None
    latency_ms: float | None = None
    finish_reason: str | None = None
    refusal: str | None = None
    extras: Any = None
    tool_calls: Any = None
    tool_call_id: str | None = None
    name: str | None = None
    pinned: bool | None = None
    cost_micros: int | None = None
    cost_status: str | None = None
    pending_totals: Any = None
    parent_seq: int | None = None
    deleted_at: str | None = None
    metadata: Any = None
    log: str | None = None
    #: The tokenizer `tokens` was counted with (None on messages written before it was recorded).
    tokens_encoding: str | None = None
    settings: str | None = None
    #: MEM-50: the turn's other model calls, charged with the reply by the stream (Charge JSON each).
    charges: list[dict[str, Any]] | None = None
    #: COST-4: its usage was counted by the transaction that stored it (the stream skips it).
    counted: bool | None = None

    @property
    def pk(self) -> str:
        return conversation_pk(self.owner, self.conversation_id)

    @property
    def sk(self) -> str:
        return message_sk(self.seq)

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> MessageRecord | None:
        """The record of a message item as a Query or BatchGetItem answers it (DynamoDB's JSON), each
        attribute read by its own PynamoDB attribute but with no model object in between: the hot read
        (a window's 125 messages) spent more on building those objects than on the records. None when
        `raw` is another kind of item."""
        if (raw.get(_TYPE_ATTRIBUTE) or {}).get("S") != _MESSAGE_TYPE:
            return None
        values = dict(_MESSAGE_DEFAULTS)
        for wire_name, found in raw.items():
            reader = _MESSAGE_READERS.get(wire_name)
            if reader is not None and "NULL" not in found:
                values[reader[0]] = reader[1](found)
        return cls.of(cast(Message, _Attributes(values)))

    @classmethod
    def of(cls, item: Message) -> MessageRecord:
        return cls(
            owner=_owner_of(item.pk),
            conversation_id=item.conversation_id or _conversation_of(item.pk),
            seq=int(item.seq),
            message_id=item.message_id,
            role=item.role,
            created_at=item.created_at,
            content=item.content,
            parts=item.parts,
            status=item.status,
            tokens=int(item.tokens or 0),
            model=item.model,
            usage=MessageUsage.of(item.usage),
            usage_reported=item.usage_reported,
            local_usage=MessageUsage.of(item.local_usage),
            error=item.error,
            latency_ms=item.latency_ms,
            finish_reason=item.finish_reason,
            refusal=item.refusal,
            extras=item.extras,
            tool_calls=item.tool_calls,
            tool_call_id=item.tool_call_id,
            name=item.name,
            pinned=item.pinned,
            cost_micros=_int(item.cost_micros),
            cost_status=item.cost_status,
            pending_totals=item.pending_totals,
            parent_seq=_int(item.parent_seq),
            deleted_at=item.deleted_at,
            metadata=item.metadata,
            log=item.log,
            tokens_encoding=item.tokens_encoding,
            settings=item.settings,
            charges=item.charges,
            counted=item.counted,
        )

    def to_item(self) -> Message:
        """The message item of this record (as a write puts it)."""
        values = {f.name: getattr(self, f.name) for f in _MESSAGE_FIELDS}
        values["usage"] = self.usage.to_map() if self.usage is not None else None
        values["local_usage"] = self.local_usage.to_map() if self.local_usage is not None else None
        return Message.new(self.owner, self.conversation_id, self.seq, **values)


_MESSAGE_FIELDS = [f for f in fields(MessageRecord) if f.name not in {"owner", "conversation_id", "seq"}]
#: The discriminator of a message item on the wire: its attribute and value.
_TYPE_ATTRIBUTE = Message.item_type.attr_name
_MESSAGE_TYPE = Message.item_type.get_discriminator(Message)
#: The value of each attribute an item leaves out (a message's defaults are plain values: status, tokens).
_MESSAGE_DEFAULTS = {name: a.default for name, a in Message.get_attributes().items()}


def _usage(found: Mapping[str, Any]) -> _Attributes:
    """A usage map's numbers, as `MessageUsage.of` reads them (an absent one is None)."""
    fields_ = found.get("M") or {}
    return _Attributes(
        {
            key: json.loads(fields_[key]["N"]) if "N" in (fields_.get(key) or {}) else None
            for key in ("prompt_tokens", "completion_tokens", "total_tokens")
        }
    )


def _reader(attribute: Any) -> Any:
    """How one attribute's wire value is read: strings and numbers directly (as PynamoDB reads them),
    anything else by the attribute itself."""
    if type(attribute) is UnicodeAttribute:
        return lambda found: found["S"]
    if type(attribute) is NumberAttribute:
        return lambda found: json.loads(found["N"])
    if type(attribute) is UsageMap:
        return _usage
    return lambda found: attribute.deserialize(attribute.get_value(found))


#: Name on the wire -> (python name, reader) of every attribute a message item may hold.
_MESSAGE_READERS = {a.attr_name: (name, _reader(a)) for name, a in Message.get_attributes().items()}


class _Attributes:
    """A message item's values by attribute name, read as `MessageRecord.of` reads an item."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        return self._values[name]


@dataclass(frozen=True)
class ConversationRecord:
    """The conversation (`sk = ~META`), as `store.items.Conversation` describes each field: owner,
    settings, sequence counter, totals, turn state, pins, branch state and soft-delete state."""

    owner: str
    conversation_id: str
    model: str
    created_at: str
    updated_at: str
    title: str | None = None
    system_prompt: str | None = None
    system_tokens: int = 0
    window_policy: Any = None
    defaults: Any = None
    next_seq: int = 1
    message_count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    local_prompt_tokens: int = 0
    local_completion_tokens: int = 0
    cost_micros: int = 0
    unpriced_calls: int = 0
    deleted_at: str | None = None
    #: When DynamoDB's TTL removes a deleted conversation (set by the soft delete).
    expires_at: datetime | None = None
    turn_count: int = 0
    open_turn: Any = None
    log_from: int | None = None
    pinned: Any = None
    pinned_rev: int = 0
    active_leaf: int | None = None
    slot_parents: Any = None
    conversation_key: str | None = None
    unkept: bool | None = None

    @property
    def pk(self) -> str:
        return conversation_pk(self.owner, self.conversation_id)

    @property
    def sk(self) -> str:
        return META_SK

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    def listing_key(self) -> dict[str, str]:
        """Its key in the listing index (table and index attributes): where a page of the list ends.
        Every write that moves `updated_at` moves the index sort key with it."""
        gsi1sk = listing_sk(self.updated_at, self.conversation_id)
        return {"pk": self.pk, "sk": self.sk, "gsi1pk": owner_pk(self.owner), "gsi1sk": gsi1sk}

    @classmethod
    def of(cls, item: Conversation) -> ConversationRecord:
        return cls(
            owner=item.owner,
            conversation_id=item.conversation_id,
            model=item.model,
            created_at=item.created_at,
            updated_at=item.updated_at,
            title=item.title,
            system_prompt=item.system_prompt,
            system_tokens=int(item.system_tokens or 0),
            window_policy=item.window_policy,
            defaults=item.defaults,
            next_seq=int(item.next_seq),
            message_count=int(item.message_count or 0),
            prompt_tokens=int(item.prompt_tokens or 0),
            completion_tokens=int(item.completion_tokens or 0),
            total_tokens=int(item.total_tokens or 0),
            local_prompt_tokens=int(item.local_prompt_tokens or 0),
            local_completion_tokens=int(item.local_completion_tokens or 0),
            cost_micros=int(item.cost_micros or 0),
            unpriced_calls=int(item.unpriced_calls or 0),
            deleted_at=item.deleted_at,
            expires_at=item.expires_at,
            turn_count=int(item.turn_count or 0),
            open_turn=item.open_turn,
            log_from=_int(item.log_from),
            pinned=item.pinned,
            pinned_rev=int(item.pinned_rev or 0),
            active_leaf=_int(item.active_leaf),
            slot_parents=item.slot_parents,
            conversation_key=item.conversation_key,
            unkept=item.unkept,
        )

    def to_item(self) -> Conversation:
        """The conversation item of this record (as the write creating it puts it, listing keys set)."""
        values = {f.name: getattr(self, f.name) for f in _CONVERSATION_FIELDS}
        item = Conversation.new(self.owner, self.conversation_id, **values)
        item.expires_at = self.expires_at
        return item


_CONVERSATION_FIELDS = [
    f for f in fields(ConversationRecord) if f.name not in {"owner", "conversation_id", "expires_at"}
]


def _owner_of(pk: str) -> str:
    found = parse_conversation_pk(pk)
    if found is None:
        raise ValueError(f"not a conversation partition key: {pk!r}")
    return found[0]


def _conversation_of(pk: str) -> str:
    found = parse_conversation_pk(pk)
    if found is None:
        raise ValueError(f"not a conversation partition key: {pk!r}")
    return found[1]
