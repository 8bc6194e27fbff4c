"""Closing a turn whose reply never came: an error reply written into the slot TransactWrite #1 reserved."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from chat_core.errors import StoreUnavailable
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.conversations import Conversation, Message


def close_turn(conversation: Conversation, reply: Message) -> bool:
    """One TransactWrite: put `reply` into its empty reserved slot and count it in `message_count`.

    Returns False, writing nothing, when the slot is no longer empty (the reply or another repair got
    there first) or the conversation is gone or deleted. Raises StoreUnavailable when DynamoDB fails.
    """
    target = Conversation(conversation.pk, conversation.sk)
    try:
        with TransactWrite(connection=base.connection()) as tx:
            tx.save(reply, condition=TableItem.pk.does_not_exist())
            tx.update(
                target,
                actions=[Conversation.message_count.add(1)],
                condition=TableItem.pk.exists() & Conversation.deleted_at.does_not_exist(),
            )
    except TransactWriteError as exc:
        reasons = {r.code for r in exc.cancellation_reasons if r is not None}
        cancelled = exc.cause_response_code == "TransactionCanceledException"
        if cancelled and reasons == {"ConditionalCheckFailed"}:
            return False
        raise StoreUnavailable("the turn could not be closed", cause=base.transient_cause(exc)) from exc
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise StoreUnavailable("the turn could not be closed", cause=base.transient_cause(exc)) from exc
    return True
