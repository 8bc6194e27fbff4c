"""Request bodies of the memory item routes (MEM-20..29) as pydantic models, validated at the edge."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from chat_core.chat.memory_kv import (
    MAX_DEPTH,
    MAX_KEY_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAMESPACES_LIMIT,
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_TTL_MINUTES,
)

#: A namespace label, as LangGraph allows it: no "." (labels are joined by "." in query strings), no NUL;
#: anything else (a newline, trailing spaces) is part of the label.
Label = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LABEL_CHARS, pattern=r"^[^.\x00]+$")]
Key = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_KEY_CHARS, pattern=r"^[^\x00-\x1f\x7f]+$")
]


class _Strict(BaseModel):
    """Unknown fields are an error; models are built when first used (cold start)."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class MemoryPutIn(_Strict):
    """PUT /memory/items: one memory, created or replaced."""

    namespace: list[Label] = Field(
        min_length=1, max_length=MAX_DEPTH, description='Its labels, e.g. ["users", "alice"]'
    )
    key: Key
    value: dict[str, Any] = Field(description="A JSON object (64 KiB at most as compact JSON)")
    ttl: float | None = Field(
        default=None, gt=0, le=MAX_TTL_MINUTES, description="Minutes until it expires (null: never)"
    )


class MemorySearchIn(_Strict):
    """POST /memory/items/search: LangGraph's search(namespace_prefix, query=, filter=, limit=, offset=)."""

    namespace_prefix: list[Label] = Field(default_factory=list, max_length=MAX_DEPTH)
    query: str | None = Field(default=None, min_length=1, max_length=MAX_QUERY_CHARS)
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Field values to match; operators $eq $ne $gt $gte $lt $lte; infinity and NaN as "
        '{"$numberDouble": "Infinity" | "-Infinity" | "NaN"}',
    )
    limit: int = Field(default=10, ge=1, le=MAX_SEARCH_LIMIT)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    refresh_ttl: bool = True


#: A label of a namespace condition: a label, or "*" for any one label.
Pattern = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LABEL_CHARS, pattern=r"^[^.\x00]+$")]


class MemoryNamespacesIn(_Strict):
    """POST /memory/items/namespaces: LangGraph's list_namespaces(prefix=, suffix=, max_depth=, limit=,
    offset=)."""

    prefix: list[Pattern] | None = Field(default=None, max_length=MAX_DEPTH)
    suffix: list[Pattern] | None = Field(default=None, max_length=MAX_DEPTH)
    max_depth: int | None = Field(default=None, ge=1, le=MAX_DEPTH)
    limit: int = Field(default=100, ge=1, le=MAX_NAMESPACES_LIMIT)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
