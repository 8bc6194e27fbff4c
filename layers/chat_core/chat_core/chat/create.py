"""POST /conversations: a new, empty conversation and its session_start event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chat_core.chat import generation
from chat_core.chat.policy import count_message, policy_dict
from chat_core.chat.rules import now_iso
from chat_core.chat.views import conversation_view
from chat_core.engine import tokens, turnlog
from chat_core.engine.turnlog import LogEvent
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as store
from chat_core.store.items import Conversation
from chat_core.store.keys import new_id

if TYPE_CHECKING:
    from chat_core.http.schemas import CreateConversationIn, ModelSettingsIn

TITLE_FROM_MESSAGE_CHARS = 80


def session_start(conversation: Conversation, settings: Settings) -> LogEvent:

    model = conversation.model
    return turnlog.session_start(
        model=model,
        encoding=tokens.encoding_for_model(model),
        config={
            "title": conversation.title,
            "systemPrompt": bool(conversation.system_prompt),
            "windowPolicy": conversation.window_policy,
            "defaults": sorted(conversation.defaults or {}),
            "maxTurnSteps": settings.max_turn_steps,
        },
    )


def defaults_dict(defaults: ModelSettingsIn | None) -> dict[str, Any] | None:
    """API-12: a conversation's default settings as stored (checked like a post's; None when empty)."""
    if defaults is None:
        return None
    stored = {key: value for key, value in defaults.settings().items() if value is not None}
    generation.check(stored)
    return stored or None


def title_from(content: str) -> str | None:
    """A conversation's title made from its first message: its first words, whitespace folded."""
    return " ".join(content.split())[:TITLE_FROM_MESSAGE_CHARS] or None


def new_conversation(
    owner: str,
    *,
    model: str | None = None,
    title: str | None = None,
    system_prompt: str | None = None,
    window_policy: dict[str, Any] | None = None,
    defaults: dict[str, Any] | None = None,
) -> Conversation:
    """A new, empty conversation stored with its session_start event; the system prompt counted once."""
    settings = get_settings()
    model = model or settings.llm_model
    system_prompt = system_prompt or None
    system_tokens = count_message({"role": "system", "content": system_prompt}, model) if system_prompt else 0
    now = now_iso()
    conversation = Conversation.new(
        owner,
        new_id(),
        title=title,
        system_prompt=system_prompt,
        system_tokens=system_tokens,
        model=model,
        window_policy=window_policy,
        defaults=defaults,
        created_at=now,
        updated_at=now,
    )
    store.create_conversation(conversation, events=[session_start(conversation, settings)])
    metrics.add_metric(name="ConversationsCreated", unit=MetricUnit.Count, value=1)
    logger.info("conversation created", conversation_id=conversation.conversation_id, model=model)
    return conversation


def create_conversation(owner: str, request: CreateConversationIn) -> dict[str, Any]:
    """POST /conversations: a new, empty conversation with its settings (201)."""
    conversation = new_conversation(
        owner,
        model=request.model,
        title=request.title,
        system_prompt=request.system_prompt,
        window_policy=policy_dict(request.window_policy),
        defaults=defaults_dict(request.defaults),
    )
    return conversation_view(conversation)
