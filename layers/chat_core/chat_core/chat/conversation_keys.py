"""A conversation named by its caller's key (API-21): the key's form, and the live conversation it names.
Kept apart from `chat.create` so that reading a conversation by key loads no creation path."""

from __future__ import annotations

from chat_core.errors import ConversationNotFound, InvalidInput
from chat_core.store import conversations as store
from chat_core.store import names
from chat_core.store.keys import MAX_CONVERSATION_KEY_CHARS, is_valid_conversation_key
from chat_core.store.records import ConversationRecord


def named_conversation_id(owner: str, key: str) -> str:
    """The id of the caller's live conversation named `key` (404 when there is none)."""
    check_key(key)
    live = live_named(owner, key)
    if live is None:
        raise ConversationNotFound(f"no conversation has the key {key!r}", key=key)
    return live.conversation_id


def check_key(key: str) -> None:
    if not is_valid_conversation_key(key):
        raise InvalidInput(
            f"a conversation key is 1-{MAX_CONVERSATION_KEY_CHARS} characters: letters, digits and . _ : @ "
            "+ = ~ - (no '/', '#' or spaces)",
            field="key",
        )


def live_named(owner: str, key: str) -> ConversationRecord | None:
    named = names.find_name(owner, key)
    if named is None:
        return None
    conversation = store.get_conversation(owner, named)
    return conversation if conversation is not None and not conversation.is_deleted else None
