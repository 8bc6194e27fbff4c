"""PATCH /conversations/{id}: title, system prompt, model, window policy and default settings (API-12)."""

from __future__ import annotations

from typing import Any

from chat_core.chat.commands import UpdateConversation
from chat_core.chat.create import check_defaults
from chat_core.chat.policy import count_message
from chat_core.chat.rules import check_id, not_found, now_iso
from chat_core.chat.views import conversation_view
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.store import conversations as store


def update_conversation(owner: str, conversation_id: str, request: UpdateConversation) -> dict[str, Any]:
    """The fields the body gives change (null clears an optional one); the next post uses them.

    Messages already stored keep their counts; a new system prompt (or model) is counted once here
    (TOK-5). One read (the system prompt's count needs the model) and one conditional update.
    """
    check_id(conversation_id)
    given, values = request.given, request.values
    changes: dict[str, Any] = {}
    if "title" in given:
        changes["title"] = values.title or None
    if "window_policy" in given:
        changes["window_policy"] = values.window_policy
    if "defaults" in given:
        changes["defaults"] = check_defaults(values.defaults)
    if "model" in given:
        changes["model"] = values.model
    if "system_prompt" in given or "model" in given:
        current = store.get_conversation(owner, conversation_id)
        if current is None or current.is_deleted:
            raise not_found(conversation_id)
        prompt = values.system_prompt if "system_prompt" in given else current.system_prompt
        model = values.model or current.model
        changes["system_prompt"] = prompt or None
        changes["system_tokens"] = (
            count_message({"role": "system", "content": prompt}, model) if prompt else 0
        )
    updated = store.update_conversation(owner, conversation_id, changes, now_iso())
    metrics.add_metric(name="ConversationsUpdated", unit=MetricUnit.Count, value=1)
    logger.info("conversation updated", conversation_id=conversation_id, fields=sorted(given))
    return conversation_view(updated)
