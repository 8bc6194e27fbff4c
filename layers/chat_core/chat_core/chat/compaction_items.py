"""The `compaction` item's content (RSP-10): a summary and the range it covers, self-contained, so an
input that carries it back is expanded without reading the store. Opaque to clients, not encrypted: it
holds only the caller's own conversation, which the caller may read anyway."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Final

from chat_core.chat.summary_window import summary_content
from chat_core.errors import InvalidInput

#: The version of the content's layout: a later layout can still expand an older one.
CONTENT_VERSION: Final = 1


def encode(conversation_id: str, from_seq: int, to_seq: int, text: str) -> str:
    """A compaction item's `encrypted_content`."""
    body = {
        "v": CONTENT_VERSION,
        "conversation": conversation_id,
        "from": from_seq,
        "to": to_seq,
        "text": text,
    }
    return base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode()


def expand(content: Any, where: str) -> str:
    """The system-side text a compaction item stands for, as a window carries a summary."""
    try:
        body = json.loads(base64.urlsafe_b64decode(str(content).encode()))
        return summary_content(int(body["from"]), int(body["to"]), str(body["text"]))
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"{where}: encrypted_content is not a compaction this service made", field=where
        ) from exc
