"""What the store hands the domain: frozen records read from its items, numbers as ints (DynamoDB's
numbers read back as floats or Decimals; they are converted here, once)."""

from __future__ import annotations

from dataclasses import dataclass

from chat_core.store.items import Summary


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
