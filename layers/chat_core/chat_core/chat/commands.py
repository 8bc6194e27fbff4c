"""What the conversation operations are asked to do, as plain values: the edge builds them from requests.

Each command holds what its operation needs and nothing of HTTP: the content's text and parts apart,
the recorded tool messages and the model settings as JSON, a window policy as the dict it is stored as.
`http.request_commands` builds them from the validated request models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PostMessage:
    """A post (API-1): new content and/or recorded agent steps, and this turn's model settings (API-11).

    Edits and regenerations (API-18) are posts too: an edit carries the new content, a regeneration none.
    """

    #: None starts a conversation.
    conversation_id: str | None
    #: The content's text (the string, or the text parts joined by newlines); None: no content.
    text: str | None
    #: The content parts as sent (API-15); None for plain text content.
    parts: list[dict[str, Any]] | None
    model: str | None
    #: Recorded assistant and tool messages (OpenAI format), before the content.
    recorded: list[dict[str, Any]] = field(default_factory=list)
    #: The Chat Completions settings the post set (an explicit null kept: it removes a default).
    settings: dict[str, Any] = field(default_factory=dict)
    #: The request as it was sent, as JSON: what an Idempotency-Key's payload check compares.
    as_sent: Mapping[str, Any] = field(default_factory=dict)
    #: RSP-2: a system message for this turn only (a Responses request's `instructions`), sent before
    #: the conversation's own system prompt and never stored as it (chat.response_settings).
    instructions: str | None = None
    #: RSP-2: the Responses settings kept on the answer, or a reference to an answer keeping the same
    #: (chat.response_settings); None: none.
    answer_settings: Mapping[str, Any] | str | None = None
    #: MEM-6: the post's own `recall` (True, False or {"max_tokens", "scope"}) over the conversation's
    #: window policy; None: the conversation's.
    recall: Any = None
    #: RSP-9: False for a `store: false` response's turn (a conversation it starts is marked unkept).
    kept: bool = True

    @property
    def has_content(self) -> bool:
        return self.text is not None

    def for_model(self) -> str | list[dict[str, Any]]:
        """The user content the window sends: the parts as sent, else the text."""
        return self.parts or self.text or ""


@dataclass(frozen=True)
class BuildWindow:
    """POST /conversations/{id}/window: the prospective message, its settings, an optional policy."""

    text: str
    parts: list[dict[str, Any]] | None
    model: str | None
    #: A window policy (WIN-3) as stored; None: the conversation's own.
    window_policy: dict[str, Any] | None
    settings: dict[str, Any] = field(default_factory=dict)

    def for_model(self) -> str | list[dict[str, Any]]:
        return self.parts or self.text


@dataclass(frozen=True)
class ConversationSettings:
    """A new conversation's settings (None: the deployment's default, or none)."""

    title: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    window_policy: dict[str, Any] | None = None
    #: API-12: the default settings (set fields only, nulls dropped); None when none were given.
    defaults: dict[str, Any] | None = None


@dataclass(frozen=True)
class CreateConversation:
    """POST /conversations: the settings and, optionally, the key naming it (API-21)."""

    settings: ConversationSettings
    key: str | None = None


@dataclass(frozen=True)
class UpdateConversation:
    """PATCH /conversations/{id} (API-12): only the fields named in `given` change, to their value in
    `values` (None clears an optional one)."""

    given: frozenset[str]
    values: ConversationSettings


@dataclass(frozen=True)
class AppendMessages:
    """POST /conversations/{id}/messages (API-18, API-22): the messages as OpenAI-format dicts."""

    messages: Sequence[dict[str, Any]]
