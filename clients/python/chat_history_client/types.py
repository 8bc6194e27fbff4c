"""Typed results. Each keeps the API's whole JSON object in `raw`, so a field this version of the client
does not know yet is still there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Message:
    """A stored message (the API's message object)."""

    message_id: str
    conversation_id: str
    role: str
    content: str | None
    status: str = "ok"
    created_at: str | None = None
    parent_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Message:
        return cls(
            message_id=data["message_id"],
            conversation_id=data.get("conversation_id", ""),
            role=data["role"],
            content=data.get("content"),
            status=data.get("status", "ok"),
            created_at=data.get("created_at"),
            parent_id=data.get("parent_id"),
            tool_calls=data.get("tool_calls"),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            model=data.get("model"),
            usage=data.get("usage"),
            metadata=data.get("metadata"),
            raw=data,
        )


@dataclass(frozen=True)
class Conversation:
    """A conversation's settings and totals (the API's conversation object)."""

    conversation_id: str
    key: str | None = None
    title: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    message_count: int = 0
    turn_count: int = 0
    created_at: str | None = None
    updated_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Conversation:
        return cls(
            conversation_id=data["conversation_id"],
            key=data.get("key"),
            title=data.get("title"),
            model=data.get("model"),
            system_prompt=data.get("system_prompt"),
            message_count=int(data.get("message_count") or 0),
            turn_count=int(data.get("turn_count") or 0),
            created_at=data.get("created_at"),
            updated_at=data.get("updated_at"),
            raw=data,
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing; pass `next_cursor` back for the next (None on the last page)."""

    items: list[T]
    next_cursor: str | None


@dataclass(frozen=True)
class PostResult:
    """What `POST /messages` (and edit, regenerate) answered: the question stored (None for a
    regeneration) and the model's answer."""

    conversation_id: str
    user_message: Message | None
    assistant_message: Message
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> PostResult:
        user = data.get("user_message")
        return cls(
            conversation_id=data["conversation_id"],
            user_message=Message.from_api(user) if user else None,
            assistant_message=Message.from_api(data["assistant_message"]),
            raw=data,
        )


@dataclass(frozen=True)
class UserExport:
    """An export of a user's data (PRV-2): `status` "queued" until the archive is written, then "done"
    with `url` (a presigned GET of the gzip JSON archive, valid `expires_in` seconds) and `counts`."""

    export_id: str
    user_id: str
    status: str
    url: str | None = None
    expires_in: int | None = None
    counts: dict[str, Any] | None = None
    size: int | None = None
    requested_at: str | None = None
    finished_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def done(self) -> bool:
        return self.status == "done"

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> UserExport:
        return cls(
            export_id=data["export_id"],
            user_id=data["user_id"],
            status=data["status"],
            url=data.get("url"),
            expires_in=data.get("expires_in"),
            counts=data.get("counts"),
            size=data.get("bytes"),
            requested_at=data.get("requested_at"),
            finished_at=data.get("finished_at"),
            raw=data,
        )


@dataclass(frozen=True)
class ErasureReceipt:
    """A user's erasure (PRV-1): its progress (`status`, `phase`, `counts` so far) and, once `status` is
    "done", the receipt: who asked, when, when it finished, what was erased. `status` "none": never
    asked."""

    user_id: str
    status: str
    phase: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    requested_by: str | None = None
    requested_at: str | None = None
    finished_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def done(self) -> bool:
        return self.status == "done"

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> ErasureReceipt:
        return cls(
            user_id=data["user_id"],
            status=data["status"],
            phase=data.get("phase"),
            counts=dict(data.get("counts") or {}),
            requested_by=data.get("requested_by"),
            requested_at=data.get("requested_at"),
            finished_at=data.get("finished_at"),
            raw=data,
        )


@dataclass(frozen=True)
class UserImport:
    """An import into a user's account (PRV-3): `status` "awaiting_upload", "queued", "running", then
    "done" with `conversation_ids` (the conversations made) or "failed" with `error` (`code`, `message`,
    `path`: a JSON pointer into the file). `progress` counts conversations and messages done."""

    import_id: str
    user_id: str
    status: str
    format: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    conversation_ids: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    upload: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def done(self) -> bool:
        """Finished, either way: "done" or "failed"."""
        return self.status in ("done", "failed")

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> UserImport:
        return cls(
            import_id=data["import_id"],
            user_id=data["user_id"],
            status=data["status"],
            format=data.get("format"),
            progress=dict(data.get("progress") or {}),
            conversation_ids=list(data.get("conversation_ids") or []),
            error=data.get("error"),
            upload=data.get("upload"),
            raw=data,
        )
