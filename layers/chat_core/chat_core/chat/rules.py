"""What every operation on a conversation checks first: content, ids, the open turn's pending tool calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from chat_core.chat.attachments import MAX_ATTACHMENT_BYTES, offloaded, part_bytes
from chat_core.engine.turnlog import TurnState
from chat_core.errors import (
    ConversationNotFound,
    InvalidInput,
    InvariantBroken,
    MessageTooLong,
    PayloadTooLarge,
)
from chat_core.settings import Settings, get_settings
from chat_core.store.keys import is_valid_id
from chat_core.store.records import ConversationRecord, MessageRecord


def now_iso() -> str:
    """ISO 8601 UTC with microseconds, fixed width so string order is time order."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_content(content: str, settings: Settings | None = None) -> str:
    """API-3: 1..max_content_chars characters, checked before any I/O."""
    limit = (settings or get_settings()).max_content_chars
    if len(content) > limit:
        raise MessageTooLong(
            f"content has {len(content)} characters; the limit is {limit}", length=len(content), limit=limit
        )
    if not content:
        raise InvalidInput("content must not be empty", field="content")
    return content


#: API-15: content parts stored with their message (one DynamoDB item, 400 KB at most) may take this much
#: JSON; with a blob bucket, larger binary parts go to S3 (API-17) up to MAX_ATTACHMENT_BYTES a message.
MAX_PARTS_BYTES = 256 * 1024
_URL_SCHEMES = ("https://", "http://", "data:")


def check_parts(
    text: str, parts: Sequence[Mapping[str, Any]] | None, settings: Settings | None = None
) -> None:
    """API-3 and API-15 before any I/O: the text within its limit (it may be empty when there are other
    parts), at least one part, image URLs http(s) or data:, the parts kept inline within MAX_PARTS_BYTES
    and, with a blob bucket, all of them within MAX_ATTACHMENT_BYTES (API-17)."""
    if parts is None:
        check_content(text, settings)
        return
    if not parts:
        raise InvalidInput("content must not be an empty list", field="content")
    if text or all(part.get("type") == "text" for part in parts):
        check_content(text, settings)
    for index, part in enumerate(parts):
        url = (part.get("image_url") or {}).get("url") if part.get("type") == "image_url" else None
        if url is not None and not url.startswith(_URL_SCHEMES):
            raise InvalidInput(
                f"content[{index}].image_url.url must be an http(s) or data: URL", field="content"
            )
    settings = settings or get_settings()
    sizes = [part_bytes(part) for part in parts]  # each part's JSON measured once (up to 5 MiB)
    size = sum(sizes)
    inline = sum(n for part, n in zip(parts, sizes, strict=True) if not offloaded(part, settings, n))
    if settings.blob_bucket and size > MAX_ATTACHMENT_BYTES:
        raise PayloadTooLarge(
            f"content parts take {size} bytes; one message's parts may take at most "
            f"{MAX_ATTACHMENT_BYTES}: send larger images and files by URL",
            field="content",
            size=size,
            limit=MAX_ATTACHMENT_BYTES,
        )
    if inline > MAX_PARTS_BYTES:
        where = (
            "parts without binary data are stored with the message"
            if settings.blob_bucket
            else "without a blob bucket (BLOB_BUCKET) parts are stored with the message"
        )
        raise PayloadTooLarge(
            f"content parts take {inline} bytes stored inline; at most {MAX_PARTS_BYTES} fit ({where}): "
            "send large images and files by URL",
            field="content",
            size=inline,
            limit=MAX_PARTS_BYTES,
        )


def check_id(conversation_id: str) -> str:
    # A malformed id can name no conversation: same answer as an unknown one, before any I/O.
    if not is_valid_id(conversation_id):
        raise ConversationNotFound(f"conversation {conversation_id!r} not found")
    return conversation_id


def not_found(conversation_id: str) -> ConversationNotFound:
    return ConversationNotFound(f"conversation {conversation_id!r} not found")


def conversation_of(conversation: ConversationRecord | None, conversation_id: str = "") -> ConversationRecord:
    """The conversation a history read found; a read that found none is the caller's 404."""
    if conversation is None:
        raise not_found(conversation_id)
    return conversation


def required[T](value: T | None, what: str) -> T:
    """`value`, which the code reaching here has already made sure of (InvariantBroken if not)."""
    if value is None:
        raise InvariantBroken(f"internal error: {what} is missing")
    return value


def pending_calls(
    conversation: ConversationRecord, messages: Sequence[MessageRecord] = ()
) -> tuple[TurnState | None, list[dict[str, str]]]:
    """The open turn and its pending tool calls: the conversation item's, unless a newer reply stored
    on its own (its totals still pending) says what the turn's state became."""
    held: Any = conversation.open_turn
    for message in reversed(messages):
        pending = message.pending_totals
        if isinstance(pending, dict) and "open_turn" in pending:
            held = pending["open_turn"]
            break
    state = TurnState.from_json(held)
    return state, (list(state.pending) if state is not None else [])
