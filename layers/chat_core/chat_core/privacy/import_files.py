"""PRV-3: an import's file read whole and checked: which format it is, and what each conversation becomes.

Two formats: our own export archive (`chat-history.user-export`, version 1, gzip JSON: PRV-2) and
ChatGPT's `conversations.json` (raw, gzip, or the zip ChatGPT sends: `privacy.chatgpt`). The file is
validated whole by pydantic models before anything is written; an error names where it is (a JSON pointer
into the file) and what is wrong. Each conversation becomes a `Planned`: the conversation item's
attributes and its other items (messages, branch links, summary) in their stored form, decided entirely
by the file, so a job that runs again plans exactly the same items.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from chat_core.chat.policy import count_message, counted_with
from chat_core.errors import InvalidInput
from chat_core.store.keys import SUMMARY_SK, link_sk, message_sk

ARCHIVE: Final = "chat-history.user-export"
CHATGPT: Final = "chatgpt"
_ZIP_MAGIC: Final = b"PK\x03\x04"
_GZIP_MAGIC: Final = b"\x1f\x8b"
_MAX_DETAILS: Final = 10


class ImportFileInvalid(InvalidInput):
    """The file cannot be imported; `path` is a JSON pointer into the file (empty: the file itself)."""

    code = "invalid_import_file"


@dataclass(frozen=True)
class Planned:
    """One conversation as it will be stored: `conversation` the conversation item's attributes, `items`
    (sort key, item type, attributes) of its messages, branch links and summary."""

    source: str
    conversation: dict[str, Any]
    items: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    messages: int = 0


# ------------------------------------------------------------------------------------------ the file


def read_file(data: bytes, max_bytes: int) -> tuple[str, Any]:
    """(format, parsed JSON) of an uploaded file: a zip holding conversations.json, gzip, or raw JSON."""
    if data.startswith(_ZIP_MAGIC):
        data = _from_zip(data, max_bytes)
    elif data.startswith(_GZIP_MAGIC):
        data = _gunzip(data, max_bytes)
    if len(data) > max_bytes:
        raise too_large(len(data), max_bytes)
    try:
        parsed = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ImportFileInvalid(f"the file is not JSON: {exc}", path="") from exc
    if isinstance(parsed, list):
        return CHATGPT, parsed
    if isinstance(parsed, dict) and parsed.get("format") == ARCHIVE:
        return ARCHIVE, parsed
    raise ImportFileInvalid(
        "the file is neither a chat-history export (an object with format "
        f"{ARCHIVE!r}) nor ChatGPT's conversations.json (an array of conversations)",
        path="",
    )


def too_large(size: int, limit: int) -> ImportFileInvalid:
    return ImportFileInvalid(
        f"the file holds more than {limit:,} bytes of JSON ({size:,} read); split it, the limit is "
        f"{limit:,} bytes uncompressed",
        path="",
    )


def _gunzip(data: bytes, max_bytes: int) -> bytes:
    unpacker = zlib.decompressobj(wbits=31)
    try:
        out = unpacker.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise ImportFileInvalid(f"the gzip file is damaged: {exc}", path="") from exc
    if len(out) > max_bytes:
        raise too_large(len(out), max_bytes)
    if not unpacker.eof:
        raise ImportFileInvalid("the gzip file is truncated", path="")
    return out


def _from_zip(data: bytes, max_bytes: int) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
            if not names:
                raise ImportFileInvalid("the zip file holds no conversations.json", path="")
            with archive.open(min(names, key=len)) as inner:
                out = inner.read(max_bytes + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise ImportFileInvalid(f"the zip file is damaged: {exc}", path="") from exc
    if len(out) > max_bytes:
        raise too_large(len(out), max_bytes)
    return out


def pointer(location: Sequence[int | str]) -> str:
    """A JSON pointer (RFC 6901) from pydantic's error location."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in location)


def invalid(exc: ValidationError, prefix: Sequence[int | str] = ()) -> ImportFileInvalid:
    """The first errors of a validation, each at its JSON pointer; the message names the first."""
    details = [
        {"path": pointer([*prefix, *e["loc"]]), "message": e["msg"]} for e in exc.errors()[:_MAX_DETAILS]
    ]
    first = details[0]
    where = first["path"] or "the file"
    return ImportFileInvalid(
        f"{where}: {first['message']} ({exc.error_count()} error(s) in all)",
        path=first["path"],
        errors=details,
    )


def tokens_of(message: Mapping[str, Any], model: str) -> tuple[int, str]:
    """TOK-5: an imported message's exact count with the conversation's model, as a post counts it."""
    counted = {
        k: message[k] for k in ("role", "content", "name", "tool_calls", "tool_call_id") if message.get(k)
    }
    counted.setdefault("content", "")
    return count_message(counted, model), counted_with(model)


# ----------------------------------------------------------------------------- our archive (PRV-2)

_Open = ConfigDict(extra="allow")
#: Attributes of the other account's conversation item an import does not carry over: its ids, its
#: deletion, the turn in flight, its name (API-21 names stay with their account), the turn log's start.
_DROPPED_CONVERSATION: Final = frozenset(
    {
        "conversation_id",
        "owner",
        "deleted_at",
        "open_turn",
        "slot_parents",
        "conversation_key",
        "unkept",
        "log_from",
    }
)
#: Attributes of a message that belong to the other account's stream and turn log, not to the message.
_DROPPED_MESSAGE: Final = frozenset({"seq", "conversation_id", "log", "pending_totals", "charges", "uc"})


class ArchiveConversationItem(BaseModel):
    model_config = _Open
    created_at: str
    updated_at: str | None = None
    model: str = Field(min_length=1)
    active_leaf: int | None = None


class ArchiveMessage(BaseModel):
    model_config = _Open
    seq: int = Field(ge=1)
    message_id: str = Field(min_length=1)
    role: Literal["system", "user", "assistant", "tool"]
    created_at: str
    content: str | None = None
    parent_seq: int | None = Field(default=None, ge=0)
    tokens: int | None = None
    tokens_encoding: str | None = None


class ArchiveConversation(BaseModel):
    model_config = _Open
    conversation_id: str
    conversation: ArchiveConversationItem
    messages: list[ArchiveMessage]
    links: list[dict[str, Any]] = []
    summary: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _tree(self) -> ArchiveConversation:
        seqs = [m.seq for m in self.messages]
        if len(set(seqs)) != len(seqs):
            raise ValueError("two messages have the same seq")
        known = set(seqs)
        for m in self.messages:
            parent = m.seq - 1 if m.parent_seq is None else m.parent_seq
            if parent >= m.seq or (parent and parent not in known):
                raise ValueError(f"message seq {m.seq} follows seq {parent}, which is not an earlier message")
        leaf = self.conversation.active_leaf
        if leaf is not None and leaf not in known:
            raise ValueError(f"the conversation's active_leaf {leaf} is not one of its messages")
        return self


class ArchiveHeader(BaseModel):
    model_config = _Open
    format: Literal["chat-history.user-export"]
    version: int

    @field_validator("version")
    @classmethod
    def _known(cls, version: int) -> int:
        if version != 1:
            raise ValueError(f"version {version} is not one this service reads (it reads version 1)")
        return version


class Archive(ArchiveHeader):
    user_id: str
    exported_at: str
    conversations: list[ArchiveConversation]


def plan_archive(parsed: Any) -> list[Planned]:
    """Every conversation of a PRV-2 archive, its items as they were stored. The version is checked
    first, so a file of another version is refused for that, not for what the version changed."""
    try:
        ArchiveHeader.model_validate(parsed)
        archive = Archive.model_validate(parsed)
    except ValidationError as exc:
        raise invalid(exc) from exc
    return [_plan_conversation(n, c) for n, c in enumerate(archive.conversations)]


def _plan_conversation(number: int, entry: ArchiveConversation) -> Planned:
    item = entry.conversation.model_dump(exclude_none=True)
    conversation = {k: v for k, v in item.items() if k not in _DROPPED_CONVERSATION}
    conversation.setdefault("updated_at", conversation["created_at"])
    model = entry.conversation.model
    encoding = counted_with(model)
    items: list[tuple[str, str, dict[str, Any]]] = []
    for message in entry.messages:
        attributes = {
            k: v for k, v in message.model_dump(exclude_none=True).items() if k not in _DROPPED_MESSAGE
        }
        attributes["seq"] = message.seq
        if isinstance(attributes.get("parts"), str):
            attributes["parts"] = _without_blobs(attributes["parts"])
        if message.tokens is None or message.tokens_encoding != encoding:
            # Counted with another tokenizer (or not at all): counted again, as a post of this model would.
            attributes["tokens"], attributes["tokens_encoding"] = tokens_of(attributes, model)
        if attributes.get("cost_status") is not None and message.role == "assistant":
            attributes["uc"] = True  # spent by the other account: never added to this one's usage
        items.append((message_sk(message.seq), "message", attributes))
    for link in entry.links:
        parent, child = int(link["parent_seq"]), int(link["child_seq"])
        items.append((link_sk(parent, child), "branch_link", {"parent_seq": parent, "child_seq": child}))
    if entry.summary is not None:
        summary = {k: v for k, v in entry.summary.items() if k != "conversation_id"}
        items.append((SUMMARY_SK, "summary", summary))
    return Planned(f"/conversations/{number}", conversation, items, len(entry.messages))


def _without_blobs(parts_json: str) -> str:
    """Content parts kept in S3 (API-17) are references in the archive, not bytes: each becomes a text
    part saying what it was (docs/user-data.md)."""
    try:
        parts = json.loads(parts_json)
    except ValueError:
        return parts_json
    if not isinstance(parts, list):
        return parts_json
    kept = []
    for part in parts:
        blob = part.get("blob") if isinstance(part, dict) else None
        if isinstance(blob, dict):
            what = f"{blob.get('media_type', 'attachment')}, {blob.get('bytes', '?')} bytes"
            kept.append(
                {"type": "text", "text": f"[{part.get('type', 'attachment')} not in the export: {what}]"}
            )
        else:
            kept.append(part)
    return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))


def message_count(planned: Sequence[Planned]) -> int:
    return sum(p.messages for p in planned)
