"""Large content parts (API-17): what goes to S3, what the item keeps, and what the model gets back.

A part whose JSON is over BLOB_INLINE_BYTES and that carries binary data (an image as a `data:` URL,
`input_audio.data`, `file.file_data`) is stored in the blob bucket; the message keeps the part without
that value plus a reference:

    {"type": "image_url", "image_url": {"detail": "high"},
     "blob": {"sha256": "...", "bytes": 734512, "media_type": "image/png", "encoding": "base64",
              "prefix": "data:image/png;base64,"}}

`sha256` is the digest of the value as the client sent it (it names the object and lets a resent history
match, API-13); base64 that re-encodes to exactly what was sent is stored decoded (a presigned URL then
serves the image itself), anything else as the text it was. Before a model call the value is put back,
byte for byte, so the model always receives the part as it was posted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from chat_core.settings import Settings, get_settings
from chat_core.store import blobs

#: The most a message's parts may take when large ones go to S3: under Lambda's 6 MB request payload.
MAX_ATTACHMENT_BYTES: Final = 5 * 1024 * 1024

#: part type -> (object holding the binary value, the value's key)
_BINARY_FIELDS: Final = {
    "image_url": ("image_url", "url"),
    "input_audio": ("input_audio", "data"),
    "file": ("file", "file_data"),
}
_DATA_URL = re.compile(r"^data:(?P<type>[^;,]*)(?P<params>(;[^;,]*)*);base64,", re.IGNORECASE)


def part_bytes(part: Mapping[str, Any]) -> int:
    return len(json.dumps(part, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _binary_value(part: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(holder key, value key, value) of a part's binary data, or None (text, http(s) URLs, file ids)."""
    fields = _BINARY_FIELDS.get(str(part.get("type")))
    holder = part.get(fields[0]) if fields else None
    if fields is None or not isinstance(holder, Mapping):
        return None
    value = holder.get(fields[1])
    if not isinstance(value, str) or not value:
        return None
    if fields[0] == "image_url" and not value.lower().startswith("data:"):
        return None
    return fields[0], fields[1], value


def offloaded(part: Mapping[str, Any], settings: Settings | None = None, size: int | None = None) -> bool:
    """Whether this part goes to S3 when stored (`size`: its part_bytes, when already measured)."""
    settings = settings or get_settings()
    return bool(
        settings.blob_bucket
        and (part_bytes(part) if size is None else size) > settings.blob_inline_bytes
        and _binary_value(part) is not None
    )


def _encode(part: Mapping[str, Any], value: str) -> tuple[bytes, dict[str, Any]]:
    """The object's bytes and the reference's description of how to rebuild `value` from them."""
    match = _DATA_URL.match(value)
    prefix = match.group(0) if match else ""
    media_type = (match.group("type") if match else "") or ""
    if not media_type and part.get("type") == "input_audio":
        media_type = f"audio/{(part.get('input_audio') or {}).get('format') or 'wav'}"
    payload = value[len(prefix) :]
    try:
        decoded = base64.b64decode(payload, validate=True)
        exact = base64.b64encode(decoded).decode("ascii") == payload
    except (binascii.Error, ValueError):
        exact = False
    if exact:
        return decoded, {
            "media_type": media_type or "application/octet-stream",
            "encoding": "base64",
            "prefix": prefix,
        }
    return value.encode("utf-8"), {
        "media_type": "text/plain; charset=utf-8",
        "encoding": "text",
        "prefix": "",
    }


def _decode(data: bytes, reference: Mapping[str, Any]) -> str:
    if reference.get("encoding") == "base64":
        return str(reference.get("prefix") or "") + base64.b64encode(data).decode("ascii")
    return data.decode("utf-8")


def store_parts(
    owner: str, conversation_id: str, parts: Sequence[Mapping[str, Any]], settings: Settings | None = None
) -> list[dict[str, Any]]:
    """The parts as the message item keeps them: large binary values written to S3 first (API-17)."""
    settings = settings or get_settings()
    stored: list[dict[str, Any]] = []
    for part in parts:
        found = _binary_value(part) if offloaded(part, settings) else None
        if found is None:
            stored.append(dict(part))
            continue
        holder, key, value = found
        digest = hashlib.sha256(value.encode("utf-8")).hexdigest()
        data, reference = _encode(part, value)
        blobs.put(blobs.blob_key(owner, conversation_id, digest), data, reference["media_type"], settings)
        kept = {name: item for name, item in part.items() if name != holder}
        kept[holder] = {name: item for name, item in dict(part[holder]).items() if name != key}
        kept["blob"] = {"sha256": digest, "bytes": len(data), **reference}
        stored.append(kept)
    return stored


def has_blobs(parts: Any) -> bool:
    return isinstance(parts, list) and any(isinstance(p, Mapping) and "blob" in p for p in parts)


def restore_part(
    owner: str, conversation_id: str, part: Mapping[str, Any], read: dict[str, bytes] | None = None
) -> dict[str, Any]:
    """A stored part with its value read back from S3, exactly as it was posted (`read`: objects already
    read for this window, by digest)."""
    reference = part.get("blob")
    fields = _BINARY_FIELDS.get(str(part.get("type")))
    if not isinstance(reference, Mapping) or fields is None:
        return dict(part)
    holder, key = fields
    digest = str(reference["sha256"])
    read = {} if read is None else read
    if digest not in read:
        read[digest] = blobs.get(blobs.blob_key(owner, conversation_id, digest))
    restored = {name: item for name, item in part.items() if name != "blob"}
    restored[holder] = {**dict(part.get(holder) or {}), key: _decode(read[digest], reference)}
    return restored


def restore_messages(
    owner: str, conversation_id: str, messages: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The window's messages with every stored large part read back (one GetObject per object; an image
    posted twice is read once, each part keeping its own other fields)."""
    if not any(has_blobs(message.get("content")) for message in messages):
        return list(messages)
    read: dict[str, bytes] = {}
    restored: list[Mapping[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not has_blobs(content):
            restored.append(message)
            continue
        parts = [
            restore_part(owner, conversation_id, part, read) if "blob" in part else part for part in content
        ]
        restored.append({**message, "content": parts})
    return restored


def view_parts(parts: Sequence[Mapping[str, Any]], owner: str, conversation_id: str) -> list[dict[str, Any]]:
    """The parts as the API shows them: a stored large part keeps its reference, with a presigned GET URL
    for the object (valid BLOB_URL_SECONDS) instead of the bytes."""
    shown: list[dict[str, Any]] = []
    for part in parts:
        reference = part.get("blob")
        if not isinstance(reference, Mapping):
            shown.append(dict(part))
            continue
        url = blobs.presign(blobs.blob_key(owner, conversation_id, str(reference.get("sha256"))))
        view = {
            "sha256": reference.get("sha256"),
            "bytes": reference.get("bytes"),
            "media_type": reference.get("media_type"),
        }
        if url is not None:
            view["url"] = url
            view["expires_in"] = get_settings().blob_url_seconds
        shown.append({**{k: v for k, v in part.items() if k != "blob"}, "blob": view})
    return shown


def same_part(sent: Any, stored: Any) -> bool:
    """A part a client resends (API-13's tail rule) equals the stored one: values in S3 by their digest."""
    if not isinstance(stored, Mapping) or "blob" not in stored:
        return bool(sent == stored)
    if not isinstance(sent, Mapping):
        return False
    found = _binary_value(sent)
    if found is None:
        return False
    holder, key, value = found
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()
    rest_sent = {k: v for k, v in sent.items() if k != holder}
    rest_stored = {k: v for k, v in stored.items() if k not in (holder, "blob")}
    holder_sent = {k: v for k, v in dict(sent[holder]).items() if k != key}
    return bool(
        digest == (stored.get("blob") or {}).get("sha256")
        and rest_sent == rest_stored
        and holder_sent == dict(stored.get(holder) or {})
    )


def same_parts(sent: Any, stored: Sequence[Any] | None) -> bool:
    if not isinstance(sent, list) or stored is None or len(sent) != len(stored):
        return False
    return all(same_part(a, b) for a, b in zip(sent, stored, strict=True))
