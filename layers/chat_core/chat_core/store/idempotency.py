"""Powertools Idempotency records in the service's own table (API-6), built from the same settings."""

from __future__ import annotations

import boto3
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from chat_core.settings import Settings, get_settings

# Every record of the post function lives under this one partition key (sort key = hashed key):
# DynamoDB's per-partition throughput (~1000 writes/s) bounds idempotent posts per second.
IDEMPOTENCY_PK = "IDEMPOTENCY#post_message"


def persistence_layer(settings: Settings | None = None) -> DynamoDBPersistenceLayer:
    """A persistence layer on the single table: pk/sk keys, records expire through the table's TTL."""
    settings = settings or get_settings()
    client = boto3.client("dynamodb", region_name=settings.region, endpoint_url=settings.dynamodb_endpoint)
    return DynamoDBPersistenceLayer(
        table_name=settings.table_name,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value=IDEMPOTENCY_PK,
        expiry_attr="expires_at",
        boto3_client=client,
    )
