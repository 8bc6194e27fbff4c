"""POST /conversations: a new, empty conversation and its session_start event."""

from __future__ import annotations

from typing import Any

from chat_core.chat import conversation_keys, generation
from chat_core.chat.commands import ConversationSettings, CreateConversation
from chat_core.chat.policy import count_message
from chat_core.chat.rules import now_iso
from chat_core.chat.views import conversation_view
from chat_core.engine import tokens, turnlog
from chat_core.engine.turnlog import LogEvent
from chat_core.errors import ConversationBusy, ConversationKeyTaken
from chat_core.observability import MetricUnit, logger, metrics
from chat_core.settings import Settings, get_settings
from chat_core.store import conversations as store
from chat_core.store import names
from chat_core.store.keys import new_id
from chat_core.store.records import ConversationRecord

TITLE_FROM_MESSAGE_CHARS = 80
#: Rounds of "read the name, create under it" before concurrent claims of one key give up (409).
NAME_ATTEMPTS = 5


def session_start(conversation: ConversationRecord, settings: Settings) -> LogEvent:

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


def check_defaults(defaults: dict[str, Any] | None) -> dict[str, Any] | None:
    """API-12: a conversation's default settings as stored (checked like a post's; None when empty)."""
    if defaults is None:
        return None
    generation.check(defaults)
    return defaults or None


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
    key: str | None = None,
    replacing: str | None = None,
) -> ConversationRecord:
    """A new, empty conversation stored with its session_start event; the system prompt counted once.
    With `key` (API-21) it is named by it in the same write (names.NameTaken when the key names another
    conversation than `replacing`)."""
    settings = get_settings()
    model = model or settings.llm_model
    system_prompt = system_prompt or None
    system_tokens = count_message({"role": "system", "content": system_prompt}, model) if system_prompt else 0
    now = now_iso()
    conversation = ConversationRecord(
        owner=owner,
        conversation_id=new_id(),
        title=title,
        system_prompt=system_prompt,
        system_tokens=system_tokens,
        model=model,
        window_policy=window_policy,
        defaults=defaults,
        created_at=now,
        updated_at=now,
        conversation_key=key,
    )
    events = [session_start(conversation, settings)]
    if key is None:
        store.create_conversation(conversation, events=events)
    else:
        names.create_named(conversation, key, events=events, replacing=replacing)
    metrics.add_metric(name="ConversationsCreated", unit=MetricUnit.Count, value=1)
    logger.info("conversation created", conversation_id=conversation.conversation_id, model=model)
    return conversation


def _settings(request: ConversationSettings) -> dict[str, Any]:
    return {
        "model": request.model,
        "title": request.title,
        "system_prompt": request.system_prompt,
        "window_policy": request.window_policy,
        "defaults": check_defaults(request.defaults),
    }


def create_conversation(owner: str, request: CreateConversation) -> dict[str, Any]:
    """POST /conversations: a new, empty conversation with its settings (201). With `key` (API-21): 409
    conversation_key_taken when the key names one of the caller's live conversations."""
    if request.key is None:
        return conversation_view(new_conversation(owner, **_settings(request.settings)))
    outcome = _named(owner, request.key, request.settings, take_live=False)
    return conversation_view(outcome[0])


def conversation_for_key(owner: str, key: str, request: ConversationSettings) -> tuple[dict[str, Any], bool]:
    """PUT /conversation-keys/{key} (API-21): the caller's conversation named `key`, created with
    `request`'s settings when there is none (or it was deleted). The view, and whether it was created."""
    conversation_keys.check_key(key)
    conversation, created = _named(owner, key, request, take_live=True)
    return conversation_view(conversation), created


def _named(
    owner: str, key: str, request: ConversationSettings, *, take_live: bool
) -> tuple[ConversationRecord, bool]:
    """The conversation named `key`: the live one (`take_live`, else 409), or a new one."""
    settings = _settings(request)
    for _ in range(NAME_ATTEMPTS):
        named = names.find_name(owner, key)
        if named is not None:
            conversation = store.get_conversation(owner, named)
            if conversation is not None and not conversation.is_deleted:
                if not take_live:
                    raise ConversationKeyTaken(
                        f"the key {key!r} already names conversation {conversation.conversation_id}",
                        key=key,
                        conversation_id=conversation.conversation_id,
                    )
                return conversation, False
        try:
            return new_conversation(owner, key=key, replacing=named, **settings), True
        except names.NameTaken:
            continue  # created (or taken over) by another request meanwhile: read it again
    raise ConversationBusy("the key is being claimed by concurrent requests; retry the request")
