"""What the memory item routes answer (MEM-20..23), as pydantic models: their names are schema names of
the OpenAPI document; `chat_core.http.route_answers` says which route answers which."""

from typing import Any

from pydantic import Field

from chat_core.http.answers import AnswerModel


class MemoryItemOut(AnswerModel):
    """One memory: its namespace and key, its JSON object, its times; `ttl` (minutes) and `expires_at`
    are null without a TTL."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str
    ttl: float | None = None
    expires_at: str | None = None


class MemorySearchItemOut(MemoryItemOut):
    """A search result: `score` is the share of the query's terms the value holds (null without a query)."""

    score: float | None = None


class MemorySearchOut(AnswerModel):
    items: list[MemorySearchItemOut]
    truncated: bool = Field(description="More memories were under the prefix than one search reads")


class MemoryNamespacesOut(AnswerModel):
    namespaces: list[list[str]]
