"""The conversation items of the one table: what each item holds and its keys (DES-1, STO-1).

The repositories beside this module (conversations, summaries, events, ledger) read and write these
items; the dialogue and world items (seed 004) are in `dialogue_items`, the recall index's and the
memory's in their own store modules. Key shapes live in `keys`. Nothing here talks to DynamoDB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
)

from chat_core.engine.turnlog import LogEvent
from chat_core.store.base import TableItem
from chat_core.store.keys import (
    LIMITS_SK,
    META_SK,
    NAME_SK,
    SESSION_END_SK,
    SUMMARY_SK,
    conversation_name_pk,
    conversation_pk,
    event_sk,
    link_sk,
    listing_sk,
    message_sk,
    owner_pk,
    usage_day_sk,
    usage_pk,
)

# ------------------------------------------------------------------------------- conversations (seed 003)


class UsageMap(MapAttribute[str, Any]):
    """Token usage of one model call: as the provider reported it, or as counted locally (`total_tokens`
    is left out when it is prompt + completion: `records.MessageUsage`)."""

    prompt_tokens = NumberAttribute(default=0)
    completion_tokens = NumberAttribute(default=0)
    total_tokens = NumberAttribute(null=True)


class Conversation(TableItem, discriminator="conversation"):
    """The conversation item (`sk = ~META`): owner, settings, sequence counter, totals, soft-delete state."""

    conversation_id = UnicodeAttribute()
    owner = UnicodeAttribute()
    title = UnicodeAttribute(null=True)
    system_prompt = UnicodeAttribute(null=True)
    system_tokens = NumberAttribute(default=0)
    model = UnicodeAttribute()
    window_policy = JSONAttribute(null=True)
    #: API-12: Chat Completions settings every post sends unless it says otherwise.
    defaults = JSONAttribute(null=True)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    next_seq = NumberAttribute(default=1)
    message_count = NumberAttribute(default=0)
    prompt_tokens = NumberAttribute(default=0)
    completion_tokens = NumberAttribute(default=0)
    total_tokens = NumberAttribute(default=0)
    local_prompt_tokens = NumberAttribute(default=0)
    local_completion_tokens = NumberAttribute(default=0)
    #: COST-2: what its model calls cost in micro-dollars, and how many were of a model without a price
    #: (their cost is unknown, so `cost_micros` is then a lower bound).
    cost_micros = NumberAttribute(default=0)
    unpriced_calls = NumberAttribute(default=0)
    deleted_at = UnicodeAttribute(null=True)
    #: Turn log (seed 002): turns started so far, and the state of a turn waiting for tool results.
    turn_count = NumberAttribute(default=0)
    open_turn = JSONAttribute(null=True)
    #: The first seq whose message may carry turn-log events (absent: none does; store.turn_log).
    log_from = NumberAttribute(null=True)
    #: Pinned messages (WIN-3), copied here so the post's one Query hands them to the window:
    #: [{"seq", "message_id", "role", "content", "tokens", "name"?}], oldest first; `pinned_rev`
    #: guards concurrent pin changes.
    pinned = JSONAttribute(null=True)
    pinned_rev = NumberAttribute(default=0)
    #: API-18 branches: the seq of the active path's last message (absent while the conversation never
    #: branched: its path is then every message in seq order), and the parents of reply slots that do
    #: not follow their parent ({"<seq>": {"parent", "at", "ref"}}, a regeneration's, while it runs).
    active_leaf = NumberAttribute(null=True)
    slot_parents = JSONAttribute(null=True)
    #: API-21: the key the caller named it by (its ConversationName item points here), if any.
    conversation_key = UnicodeAttribute(null=True)
    #: RSP-9: made for a `store: false` response and deleted once it is answered: the table stream's
    #: consumers never index or embed anything of it (set before its first message is written).
    unkept = BooleanAttribute(null=True)

    @classmethod
    def key(cls, owner: str, conversation_id: str) -> tuple[str, str]:
        """(pk, sk) of the conversation item."""
        return conversation_pk(owner, conversation_id), META_SK

    @classmethod
    def new(cls, owner: str, conversation_id: str, **attributes: Any) -> Conversation:
        """A live conversation item with its keys and listing-index attributes set."""
        pk, sk = cls.key(owner, conversation_id)
        item = cls(pk, sk, conversation_id=conversation_id, owner=owner, **attributes)
        item.gsi1pk = owner_pk(owner)
        item.gsi1sk = listing_sk(item.updated_at, conversation_id)
        return item

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    def listing_key(self) -> dict[str, str]:
        """Its key in the listing index (table and index attributes): where a page of the list ends."""
        return {"pk": self.pk, "sk": self.sk, "gsi1pk": self.gsi1pk, "gsi1sk": self.gsi1sk}


class Message(TableItem, discriminator="message"):
    """One message (`sk = MSG#<seq>`), appended once, never rewritten (only its `pinned` flag changes);
    `tokens` counted at write (TOK-5). `conversation_id` is written by older items only (the key has it)."""

    conversation_id = UnicodeAttribute(null=True)
    message_id = UnicodeAttribute()
    seq = NumberAttribute()
    role = UnicodeAttribute()
    content = UnicodeAttribute(null=True)
    #: API-15: a user message's content parts as sent (text, image_url, audio, file); `content`: their text.
    parts = JSONAttribute(null=True)
    status = UnicodeAttribute(default="ok")
    created_at = UnicodeAttribute()
    tokens = NumberAttribute(default=0)
    #: The tokenizer `tokens` was counted with (engine.tokens encoding name); absent on older items.
    tokens_encoding = UnicodeAttribute(null=True)
    model = UnicodeAttribute(null=True)
    usage = UsageMap(null=True)
    usage_reported = BooleanAttribute(null=True)
    local_usage = UsageMap(null=True)
    error = JSONAttribute(null=True)
    latency_ms = NumberAttribute(null=True)
    finish_reason = UnicodeAttribute(null=True)
    #: API-10: the model's refusal (content then null) and what else it answered (llm.completion.Completion).
    refusal = UnicodeAttribute(null=True)
    extras = JSONAttribute(null=True)
    #: OpenAI tool messages: an assistant message's calls, a tool result's call id and tool name.
    tool_calls = JSONAttribute(null=True)
    tool_call_id = UnicodeAttribute(null=True)
    name = UnicodeAttribute(null=True)
    pinned = BooleanAttribute(null=True)
    #: COST-2: what the reply cost (micro-dollars; None: the model has no price) and how it was found
    #: ("reported": the provider's usage, "estimated": the local count, "unknown").
    cost_micros = NumberAttribute(null=True)
    cost_status = UnicodeAttribute(null=True)
    #: A reply stored on its own because the conversation item stayed contended: what the conversation's
    #: totals still lack ({"reported": [p, c, t], "local": [p, c], "charge"?, "open_turn"?}). The next
    #: post adds it (and the charge to the owner's usage) in its TransactWrite #1 and removes this
    #: attribute in the same transaction.
    pending_totals = JSONAttribute(null=True)
    #: API-18: the seq of the message this one follows (0 for the first); absent means seq - 1 (every
    #: message of a conversation that never branched). `deleted_at`: removed from the active path by
    #: DELETE (kept for audit, never sent to the model again).
    parent_seq = NumberAttribute(null=True)
    deleted_at = UnicodeAttribute(null=True)
    #: API-22: what the client kept with an appended message, as given; never sent to a model.
    metadata = JSONAttribute(null=True)
    #: The turn-log events written with this message, compact JSON (engine.turnlog_codec, store.turn_log).
    log = UnicodeAttribute(null=True)
    #: RSP-2: an answer's Responses settings as its create call answered them (chat.response_settings).
    settings = UnicodeAttribute(null=True)
    #: MEM-50: a reply's turn's other model calls (the current message's embedding for semantic recall),
    #: each an engine.costs.Charge's JSON; the table's stream adds them to the owner's usage with the reply.
    charges = JSONAttribute(null=True)
    #: COST-4: the transaction that stored this message also added it to its owner's usage (budgets on):
    #: the table's stream must not add it again. Stored as "uc" (usage counted): a 500-character reply
    #: stays under 1 KB, so its write costs no unit more.
    counted = BooleanAttribute(null=True, attr_name="uc")

    @classmethod
    def key(cls, owner: str, conversation_id: str, seq: int) -> tuple[str, str]:
        """(pk, sk) of the message at `seq` in a conversation."""
        return conversation_pk(owner, conversation_id), message_sk(seq)

    @classmethod
    def new(cls, owner: str, conversation_id: str, seq: int, **attributes: Any) -> Message:
        pk, sk = cls.key(owner, conversation_id, seq)
        return cls(pk, sk, seq=seq, **attributes)


class ConversationName(TableItem, discriminator="conversation_name"):
    """API-21: a caller-chosen key naming one of an owner's conversations (`pk = USER#<owner>#KEY#<key>`,
    `sk = ~KEY`). Written in the transaction that creates the conversation; once that conversation is
    deleted, the next conversation created under the key takes the name over."""

    owner = UnicodeAttribute()
    conversation_key = UnicodeAttribute()
    conversation_id = UnicodeAttribute()
    created_at = UnicodeAttribute()

    @classmethod
    def new(cls, owner: str, key: str, conversation_id: str, created_at: str) -> ConversationName:
        return cls(
            conversation_name_pk(owner, key),
            NAME_SK,
            owner=owner,
            conversation_key=key,
            conversation_id=conversation_id,
            created_at=created_at,
        )


class UsageDay(TableItem, discriminator="usage_day"):
    """COST-3: one owner's use of one model on one UTC day (`pk = USER#<owner>#USAGE`,
    `sk = DAY#<YYYY-MM-DD>#<model>`). Priced messages (replies, appended answers) are added from the
    table's stream, each exactly once (`watermarks`: per stream shard, the newest sequence number added
    and when; `watermark_version` conditions each such update); summaries are added by the transaction
    that stores them. While budgets are on, a priced message is counted by the transaction that stores
    it, in one of a few shard items (`sk = DAY#<YYYY-MM-DD>#<model>#<shard>`, COST-4), and marked
    `counted` so the stream leaves it out. Created by its first update."""

    owner = UnicodeAttribute(null=True)
    day = UnicodeAttribute(null=True)
    model = UnicodeAttribute(null=True)
    calls = NumberAttribute(default=0)
    prompt_tokens = NumberAttribute(default=0)
    cached_tokens = NumberAttribute(default=0)
    completion_tokens = NumberAttribute(default=0)
    reasoning_tokens = NumberAttribute(default=0)
    cost_micros = NumberAttribute(default=0)
    unpriced_calls = NumberAttribute(default=0)
    estimated_calls = NumberAttribute(default=0)
    watermarks = JSONAttribute(null=True)
    watermark_version = NumberAttribute(null=True)

    @classmethod
    def key(cls, owner: str, day: str, model: str, shard: str | None = None) -> tuple[str, str]:
        return usage_pk(owner), usage_day_sk(day, model, shard)


class BudgetItem(TableItem, discriminator="budget"):
    """COST-4: an administrator's budget for one owner (`sk = ~LIMITS`): each limit a number, None for
    "no limit", or absent for "the deployment's default"."""

    owner = UnicodeAttribute()
    limits = JSONAttribute()
    updated_at = UnicodeAttribute()
    updated_by = UnicodeAttribute()

    @classmethod
    def key(cls, owner: str) -> tuple[str, str]:
        return usage_pk(owner), LIMITS_SK


class BranchLink(TableItem, discriminator="branch_link"):
    """API-18: a message whose parent is not the message before it (an edit, a regeneration, the first
    post after a switch), indexed under its parent (`LINK#<parent>#<child>`) so the tree route finds the
    children of a page of messages with one Query. "LINK#" sorts below "MSG#": the post's Query never
    reads one."""

    parent_seq = NumberAttribute()
    child_seq = NumberAttribute()

    @classmethod
    def new(cls, owner: str, conversation_id: str, parent_seq: int, child_seq: int) -> BranchLink:
        return cls(
            conversation_pk(owner, conversation_id),
            link_sk(parent_seq, child_seq),
            parent_seq=parent_seq,
            child_seq=child_seq,
        )


class Summary(TableItem, discriminator="summary"):
    """The running summary of a conversation's earliest messages, `from_seq..to_seq` inclusive.

    `text` is what the model wrote (capped); `tokens` is the exact chat-format count of the system-side
    message the window sends (TOK-5: counted once, here). `rounds` counts incremental updates.
    """

    conversation_id = UnicodeAttribute()
    from_seq = NumberAttribute()
    to_seq = NumberAttribute()
    text = UnicodeAttribute()
    tokens = NumberAttribute(default=0)
    model = UnicodeAttribute()
    created_at = UnicodeAttribute()
    rounds = NumberAttribute(default=1)
    messages_covered = NumberAttribute(default=0)
    input_tokens = NumberAttribute(default=0)
    output_tokens = NumberAttribute(default=0)
    #: COST-2: what this round's model call cost (None: no price for its model) and what every round of
    #: this conversation's summary has cost so far (micro-dollars).
    cost_micros = NumberAttribute(null=True)
    cost_total_micros = NumberAttribute(default=0)

    @classmethod
    def key(cls, owner: str, conversation_id: str) -> tuple[str, str]:
        """(pk, sk) of a conversation's summary item."""
        return conversation_pk(owner, conversation_id), SUMMARY_SK

    @classmethod
    def new(cls, owner: str, conversation_id: str, **attributes: Any) -> Summary:
        pk, sk = cls.key(owner, conversation_id)
        return cls(pk, sk, conversation_id=conversation_id, **attributes)


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


# The dialogue and world items (seed 004), registered with TableItem's discriminator by this import.
from chat_core.store import dialogue_items as dialogue_items  # noqa: E402
