"""The single table: base PynamoDB model, key attributes, and binding to settings (name, region, endpoint)."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import DiscriminatorAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from chat_core.settings import Settings, get_settings


class Gsi1(GlobalSecondaryIndex["TableItem"]):
    """Sparse index: only items that set gsi1pk/gsi1sk appear (live conversations, by updated_at)."""

    class Meta:
        index_name = "gsi1"
        projection = AllProjection()

    gsi1pk = UnicodeAttribute(hash_key=True)
    gsi1sk = UnicodeAttribute(range_key=True)


class TableItem(Model):
    """Every item of the table. Subclasses set a `discriminator=` and key builders as classmethods."""

    class Meta:
        table_name = "chat-history"
        region = "us-east-1"
        host: str | None = None
        max_retry_attempts = 3
        base_backoff_ms = 25

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)
    item_type = DiscriminatorAttribute(attr_name="type")
    gsi1pk = UnicodeAttribute(null=True)
    gsi1sk = UnicodeAttribute(null=True)
    expires_at = TTLAttribute(null=True)

    gsi1 = Gsi1()


_bound: Settings | None = None


def bind(settings: Settings | None = None) -> Settings:
    """Point the models at the configured table (idempotent; re-binds when settings change)."""
    global _bound
    settings = settings or get_settings()
    if _bound == settings:
        return settings
    meta: Any = TableItem.Meta
    meta.table_name = settings.table_name
    meta.region = settings.region
    meta.host = settings.dynamodb_endpoint
    TableItem._connection = None
    _bound = settings
    return settings


def connection(settings: Settings | None = None) -> Connection:
    """A low-level connection for TransactWrite built from the same settings as the models."""
    settings = bind(settings)
    return Connection(region=settings.region, host=settings.dynamodb_endpoint)
