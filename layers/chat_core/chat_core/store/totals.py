"""A conversation's running totals (tokens, cost) as its transactions add them, and the totals replies
stored on their own still owe it (`pending_totals`), folded in once by a later write."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chat_core.engine.costs import Charge
from chat_core.store import ledger
from chat_core.store.items import Conversation, Message
from chat_core.store.records import MessageRecord

#: ("put" | "update", item, condition, actions): an entry of a TransactWrite (see conversations._transact).
Item = tuple[str, Any, Any, list[Any] | None]


def actions(
    reported: Sequence[int], local: Sequence[int], charges: Sequence[tuple[str, Charge]] = ()
) -> list[Any]:
    """The conversation item's ADDs for `reported` and `local` usage and `charges` ((day, charge) pairs)."""
    found = [
        Conversation.prompt_tokens.add(int(reported[0])),
        Conversation.completion_tokens.add(int(reported[1])),
        Conversation.total_tokens.add(int(reported[2])),
        Conversation.local_prompt_tokens.add(int(local[0])),
        Conversation.local_completion_tokens.add(int(local[1])),
    ]
    if charges:
        # COST-2: the conversation's cost moves with its token totals, in the same update.
        known = sum(c.cost_micros for _, c in charges if c.cost_micros is not None)
        found.append(Conversation.cost_micros.add(known))
        found.append(Conversation.unpriced_calls.add(sum(1 for _, c in charges if c.cost_micros is None)))
    return found


#: Pending totals of a reply stored on its own: `cost` is its charge, owed to the conversation's totals
#: only (the table's stream adds it to the owner's usage, COST-3, unless the write counted it, COST-4);
#: `charge`, written before usage came from the stream, is owed to the owner's usage items as well.
COST, UNBILLED = "cost", "charge"


def pending_sums(
    replies: Sequence[MessageRecord],
) -> tuple[list[int], list[int], list[tuple[str, Charge]], list[tuple[str, Charge]]]:
    """The reported and local usage and the charges that replies stored on their own still owe the
    conversation's totals, and the charges of those the owner's usage items still lack."""
    reported, local = [0, 0, 0], [0, 0]
    charges: list[tuple[str, Charge]] = []
    unbilled: list[tuple[str, Charge]] = []
    for reply in replies:
        pending = reply.pending_totals or {}
        for i, value in enumerate(pending.get("reported") or (0, 0, 0)):
            reported[i] += int(value)
        for i, value in enumerate(pending.get("local") or (0, 0)):
            local[i] += int(value)
        for name in (COST, UNBILLED):
            if isinstance(pending.get(name), Mapping):
                charge = (ledger.reply_day(reply), Charge.from_json(pending[name]))
                charges.append(charge)
                if name == UNBILLED:
                    unbilled.append(charge)
    return reported, local, charges, unbilled


def reconcile(replies: Sequence[MessageRecord]) -> tuple[list[Item], list[Any]]:
    """Items and conversation actions that fold replies stored on their own into the totals, once: each
    reply's `pending_totals` is removed in the same transaction, conditioned on it still being there.
    The owner's usage items for their charges are added by the caller, with its own."""
    if not replies:
        return [], []
    items: list[Item] = [
        (
            "update",
            Message(reply.pk, reply.sk),
            Message.pending_totals.exists(),
            [Message.pending_totals.remove()],
        )
        for reply in replies
    ]
    reported, local, charges, _ = pending_sums(replies)
    return items, [Conversation.message_count.add(len(replies)), *actions(reported, local, charges)]
