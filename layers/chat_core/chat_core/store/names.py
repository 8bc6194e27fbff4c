"""API-21: conversations named by a key the caller chooses (`"user_123"`), unique per owner.

The name is its own item (`USER#<owner>#KEY#<key>`, `~KEY`), written in the one TransactWrite that creates
the conversation, with a condition that makes the key unique: two requests creating the same key at once
get one conversation. A name whose conversation was deleted is taken over by the next one created under
it (the condition names the conversation it replaces)."""

from __future__ import annotations

from collections.abc import Sequence

from pynamodb.exceptions import DeleteError, PynamoDBException

from chat_core.engine.turnlog import LogEvent
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.conversations import SequenceConflict, create_conversation
from chat_core.store.items import ConversationName
from chat_core.store.keys import NAME_SK, conversation_name_pk
from chat_core.store.records import ConversationRecord


class NameTaken(Exception):
    """The key names another conversation (created meanwhile, or live): `conversation_id` is it."""

    def __init__(self, conversation_id: str | None) -> None:
        super().__init__(f"the key names conversation {conversation_id}")
        self.conversation_id = conversation_id


def find_name(owner: str, key: str) -> str | None:
    """The id of the conversation `key` names for `owner` (one consistent GetItem), or None."""
    base.bind()
    try:
        return ConversationName.get(
            conversation_name_pk(owner, key), NAME_SK, consistent_read=True
        ).conversation_id
    except ConversationName.DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise base.store_error(exc) from exc


def create_named(
    conversation: ConversationRecord,
    key: str,
    *,
    events: Sequence[LogEvent] = (),
    replacing: str | None = None,
) -> None:
    """A new conversation named `key`, with its session_start event, in one TransactWrite. The name
    must be free, or still name `replacing` (a deleted conversation); else NameTaken."""
    name = ConversationName.new(
        conversation.owner, key, conversation.conversation_id, conversation.created_at
    )
    free = TableItem.pk.does_not_exist()
    if replacing is not None:
        free = free | (ConversationName.conversation_id == replacing)
    try:
        create_conversation(conversation, events=events, also=[("put", name, free, None)])
    except SequenceConflict as exc:  # the fresh id cannot clash: the name's condition failed
        raise NameTaken(find_name(conversation.owner, key)) from exc


def forget(owner: str, key: str, conversation_id: str) -> None:
    """Delete the name `key` if it still names `conversation_id` (its conversation was deleted: the key
    is free, and no trace of it outlives the conversation)."""
    base.bind()
    name = ConversationName(conversation_name_pk(owner, key), NAME_SK)
    try:
        name.delete(condition=ConversationName.conversation_id == conversation_id)
    except DeleteError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return  # it names another conversation now (or nothing)
        raise base.store_error(exc) from exc
    except PynamoDBException as exc:
        raise base.store_error(exc) from exc
