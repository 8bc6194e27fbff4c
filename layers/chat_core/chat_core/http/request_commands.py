"""The request models turned into the conversation operations' commands (`chat.commands`)."""

from __future__ import annotations

from typing import Any

from chat_core.chat.commands import (
    AppendMessages,
    BuildWindow,
    ConversationSettings,
    CreateConversation,
    PostMessage,
    UpdateConversation,
)
from chat_core.http.schemas import (
    AppendMessagesIn,
    BuildWindowIn,
    ConversationSettingsIn,
    CreateConversationIn,
    EditMessageIn,
    ModelSettingsIn,
    PostMessageIn,
    RecallIn,
    RegenerateIn,
    UpdateConversationIn,
    WindowPolicyIn,
    content_parts,
    content_text,
)


def post_command(body: PostMessageIn) -> PostMessage:
    """POST /messages (and the /v1 tail a post runs)."""
    return PostMessage(
        conversation_id=body.conversation_id,
        text=content_text(body.content),
        parts=content_parts(body.content),
        model=body.model,
        recorded=[m.model_dump(exclude_none=True) for m in body.messages or []],
        settings=body.settings(),
        as_sent=body.model_dump(mode="json", exclude={"recall"} if body.recall is None else None),
        recall=body.recall.model_dump() if isinstance(body.recall, RecallIn) else body.recall,
    )


def edit_command(conversation_id: str, body: EditMessageIn) -> PostMessage:
    """POST .../edit: the post of the new content on the new branch."""
    return post_command(body.as_post(conversation_id))


def regenerate_command(conversation_id: str, body: RegenerateIn) -> PostMessage:
    """POST .../regenerate: the post of no content that asks the model again."""
    return post_command(body.as_post(conversation_id))


def window_command(body: BuildWindowIn) -> BuildWindow:
    """POST /conversations/{id}/window."""
    return BuildWindow(
        text=content_text(body.content) or "",
        parts=content_parts(body.content),
        model=body.model,
        window_policy=policy_dict(body.window_policy),
        settings=body.settings(),
    )


def policy_dict(policy: WindowPolicyIn | None) -> dict[str, Any] | None:
    """A window policy (WIN-3) as a conversation stores it."""
    return policy.model_dump(exclude_none=True) if policy is not None else None


def defaults_dict(defaults: ModelSettingsIn | None) -> dict[str, Any] | None:
    """API-12: default settings as given (set fields, nulls dropped); None when not given."""
    if defaults is None:
        return None
    return {key: value for key, value in defaults.settings().items() if value is not None}


def settings_command(body: ConversationSettingsIn | None) -> ConversationSettings:
    """A new conversation's settings (PUT /conversation-keys/{key} may send none)."""
    return _settings(body) if body is not None else ConversationSettings()


def create_command(body: CreateConversationIn) -> CreateConversation:
    """POST /conversations."""
    return CreateConversation(_settings(body), key=body.key)


def update_command(body: UpdateConversationIn) -> UpdateConversation:
    """PATCH /conversations/{id}: the fields the body set, null included."""
    return UpdateConversation(given=frozenset(body.model_fields_set), values=_settings(body))


def _settings(body: ConversationSettingsIn | UpdateConversationIn) -> ConversationSettings:
    return ConversationSettings(
        title=body.title,
        system_prompt=body.system_prompt,
        model=body.model,
        window_policy=policy_dict(body.window_policy),
        defaults=defaults_dict(body.defaults),
    )


def append_command(body: AppendMessagesIn) -> AppendMessages:
    """POST /conversations/{id}/messages."""
    return AppendMessages([m.model_dump(mode="json", exclude_none=True) for m in body.messages])
