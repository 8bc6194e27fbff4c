"""LOC-2: the local store builds an item as moto does, and refuses the same items with the same error,
once each attribute is sized once instead of again at every later one (`chat_local.moto_items`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from chat_local import moto_fidelity, moto_items
from hypothesis import example, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

from tests.support.table import create_table


@pytest.fixture(autouse=True)
def _installed() -> None:
    moto_fidelity.install()


@pytest.fixture
def dynamodb_table() -> Iterator[Any]:
    """The template's table in moto, as boto3's resource API sees it (the tests' fake AWS environment)."""
    with mock_aws():
        create_table("items")
        yield boto3.resource("dynamodb", region_name="us-east-1").Table("items")


_text = st.text(max_size=8)
_scalar = st.one_of(
    st.fixed_dictionaries({"S": _text}),
    st.fixed_dictionaries({"N": st.integers().map(str)}),
    st.fixed_dictionaries({"BOOL": st.booleans()}),
    st.fixed_dictionaries({"NULL": st.just(True)}),
    st.fixed_dictionaries({"B": st.binary(max_size=8)}),
    st.fixed_dictionaries({"SS": st.lists(_text, min_size=1, max_size=3, unique=True)}),
)
_values = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.fixed_dictionaries({"M": st.dictionaries(_text, inner, max_size=3)}),
        st.fixed_dictionaries({"L": st.lists(inner, max_size=3)}),
    ),
    max_leaves=6,
)
#: Items near moto's limit: small attributes around one large string whose length is drawn close to what
#: puts the whole item at the limit (below, at, just past), wherever it falls among the others.
_near_limit = st.tuples(
    st.dictionaries(st.text(min_size=1, max_size=6), _values, max_size=6),
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=0, max_value=6),
)


def _outcome(init: Any, attrs: dict[str, Any]) -> tuple[str, Any]:
    """What moto's Item.__init__ (`init`) makes of `attrs`: the error's type and text, or the attributes
    as stored (names, values, order) and whether later assignments are still size-checked."""
    item = Item.__new__(Item)
    try:
        init(item, DynamoType({"S": "pk"}), DynamoType({"S": "sk"}), attrs)
    except Exception as error:  # the outcome compared is the error itself
        return "error", (type(error).__name__, str(error))
    return "item", ([(k, v.to_json()) for k, v in item.attrs.items()], type(item.attrs) is LimitedSizeDict)


def _with_large_string(attrs: dict[str, Any], delta: int, position: int) -> dict[str, Any]:
    """`attrs` with a string attribute "big" inserted at `position`, sized so the item's total is moto's
    limit plus `delta` bytes."""
    small = sum(len(k.encode()) + DynamoType(v).size() for k, v in attrs.items())
    length = max(moto_items.MAX_ITEM_BYTES + delta - small - len(b"big"), 0)
    pairs = list(attrs.items())
    pairs.insert(min(position, len(pairs)), ("big", {"S": "x" * length}))
    return dict(pairs)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_text, _values, max_size=8))
def test_an_item_is_built_as_moto_builds_it(attrs: dict[str, Any]) -> None:
    assert _outcome(Item.__init__, attrs) == _outcome(moto_items.original_init, attrs)


@settings(max_examples=40, deadline=None)
@given(_near_limit)
@example(({}, 0, 0))  # exactly at the limit: stored
@example(({}, 1, 0))  # one byte past it: refused
@example(({"a": {"S": "1"}, "b": {"N": "2"}}, 1, 1))  # refused at an attribute in the middle
def test_an_item_at_the_size_limit_is_refused_exactly_when_moto_refuses_it(
    case: tuple[Any, int, int],
) -> None:
    attrs = _with_large_string(*case)
    assert _outcome(Item.__init__, attrs) == _outcome(moto_items.original_init, attrs)


def test_an_item_past_400_kb_is_refused_through_the_api_and_one_within_it_is_stored(
    dynamodb_table: Any,
) -> None:
    """Through boto3, as the service's writes reach the store: a 404 KB item is stored whole, a 406 KB
    one is refused with DynamoDB's message, and an UpdateItem taking a stored item past the limit is
    refused too (the later assignments moto still checks)."""
    table = dynamodb_table
    table.put_item(Item={"pk": "p", "sk": "fits", "body": "x" * 404_000})
    assert len(table.get_item(Key={"pk": "p", "sk": "fits"})["Item"]["body"]) == 404_000
    with pytest.raises(table.meta.client.exceptions.ClientError, match="Item size has exceeded"):
        table.put_item(Item={"pk": "p", "sk": "past", "body": "x" * 406_000})
    assert "Item" not in table.get_item(Key={"pk": "p", "sk": "past"})
    with pytest.raises(table.meta.client.exceptions.ClientError, match="size"):
        table.update_item(
            Key={"pk": "p", "sk": "fits"},
            UpdateExpression="SET more = :m",
            ExpressionAttributeValues={":m": "y" * 2_000},
        )
