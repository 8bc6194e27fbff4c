"""The DynamoDB table of template.yaml, created in moto from the template itself so tests cannot drift."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from chat_local.template import load_yaml

from tests.support import aws_clients

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@lru_cache(maxsize=1)
def template() -> dict[str, Any]:
    """template.yaml as a dict, read as the local server reads it (CloudFormation tags in long form)."""
    return load_yaml(TEMPLATE)


def table_properties() -> dict[str, Any]:
    """Properties of the template's `Table` resource."""
    resource = template()["Resources"]["Table"]
    assert resource["Type"] == "AWS::DynamoDB::Table"
    return dict(resource["Properties"])


def create_table(name: str, region: str = "us-east-1") -> None:
    """Create `name` with exactly the template's keys, indexes, billing, stream and TTL (inside mock_aws)."""
    props = table_properties()
    client = aws_clients.client("dynamodb", region)
    kwargs: dict[str, Any] = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PROVISIONED"),
    }
    if props.get("GlobalSecondaryIndexes"):
        kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    stream = props.get("StreamSpecification")
    if stream:
        kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
    client.create_table(**kwargs)
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
        )
