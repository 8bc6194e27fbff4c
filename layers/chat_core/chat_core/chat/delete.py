"""DELETE /conversations/{id}: soft delete, the rest left to the table's TTL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chat_core.chat.rules import check_id
from chat_core.engine import turnlog
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import get_settings
from chat_core.store import conversations as store
from chat_core.store import names


def delete_conversation(owner: str, conversation_id: str) -> None:
    """DELETE /conversations/{id}: soft delete; TTL removes the item after RETENTION_DAYS. A key naming
    it (API-21) is deleted now."""
    check_id(conversation_id)
    settings = get_settings()
    now = datetime.now(UTC)
    expires = now + timedelta(days=settings.retention_days)
    ended = turnlog.session_end(
        reason="deleted",
        meta={"retentionDays": settings.retention_days, "expiresAt": expires.strftime("%Y-%m-%dT%H:%M:%SZ")},
    )
    conversation = store.get_conversation(owner, conversation_id)
    store.soft_delete(owner, conversation_id, now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), expires, events=[ended])
    if conversation is not None and conversation.conversation_key:
        # API-21: the key is free again; the next PUT of it starts a new conversation.
        names.forget(owner, conversation.conversation_key, conversation_id)
    logger.info("conversation deleted", conversation_id=conversation_id)
    metrics.add_metric(name="ConversationsDeleted", unit=MetricUnit.Count, value=1)
