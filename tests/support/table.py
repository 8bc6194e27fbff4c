"""The DynamoDB table of template.yaml, created in moto from the template itself so tests cannot drift."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import boto3
import yaml

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that reads CloudFormation short-form tags (!Ref, !Sub, !GetAtt, ...) as plain data."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _cfn_tag)


@lru_cache(maxsize=1)
def template() -> dict[str, Any]:
    """template.yaml as a dict (CloudFormation tags become {"Ref": ...} / {"Fn::X": ...})."""
    with TEMPLATE.open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_CfnLoader)


def table_properties() -> dict[str, Any]:
    """Properties of the template's `Table` resource."""
    resource = template()["Resources"]["Table"]
    assert resource["Type"] == "AWS::DynamoDB::Table"
    return dict(resource["Properties"])


def create_table(name: str, region: str = "us-east-1") -> None:
    """Create `name` with exactly the template's keys, indexes, billing, stream and TTL (inside mock_aws)."""
    props = table_properties()
    client = boto3.client("dynamodb", region_name=region)
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
