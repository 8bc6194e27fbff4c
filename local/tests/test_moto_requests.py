"""LOC-2: the local store reads requests as moto itself does once attribute values are taken as JSON gave
them where moto's walk changes nothing, and action names are listed once per class
(`chat_local.moto_requests`)."""

from __future__ import annotations

import base64
import json
from typing import Any

import boto3
import pytest
from chat_local import moto_fidelity, moto_requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core.utils import get_service_model
from moto.dynamodb.responses import DynamoHandler

from tests.support.table import create_table


@pytest.fixture(autouse=True)
def _installed() -> None:
    moto_fidelity.install()


#: Attribute values as a client may send them: well formed (binary included), and not (a null member, an
#: unknown member, two members, a set that is not a list, a scalar where a map or a list belongs).
_text = st.text(max_size=6)
_blob = st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode())
_scalar = st.one_of(
    st.fixed_dictionaries({"S": _text}),
    st.fixed_dictionaries({"N": st.integers().map(str)}),
    st.fixed_dictionaries({"BOOL": st.booleans()}),
    st.fixed_dictionaries({"NULL": st.just(True)}),
    st.fixed_dictionaries({"B": _blob}),
    st.fixed_dictionaries({"SS": st.lists(_text, max_size=3)}),
    st.fixed_dictionaries({"NS": st.lists(st.integers().map(str), max_size=3)}),
    st.fixed_dictionaries({"BS": st.lists(_blob, max_size=3)}),
    st.fixed_dictionaries({"S": st.none()}),
    st.fixed_dictionaries({"X": _text}),
    st.fixed_dictionaries({"S": _text, "N": st.just("1")}),
    st.fixed_dictionaries({"SS": _text}),
    st.fixed_dictionaries({"M": _text}),
)
ATTRIBUTE_VALUES = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.fixed_dictionaries({"M": st.dictionaries(_text, inner, max_size=3)}),
        st.fixed_dictionaries({"L": st.lists(inner, max_size=3)}),
    ),
    max_leaves=8,
)


def _parse(operation: str, body: dict[str, Any], *, as_moto: bool) -> Any:
    """moto's JSON parser on `body` as DynamoHandler runs it: with this module's change, or without."""
    model = get_service_model("dynamodb").operation_model(operation)
    parser = moto_requests.parse.JSONParser(model, map_type=DynamoHandler.PROTOCOL_PARSER_MAP_TYPE)
    if as_moto:
        walk = moto_requests._original_parse_structure
        parser._parse_structure = lambda shape, value: walk(parser, shape, value)
    request = {"method": "POST", "values": {}, "headers": {}, "body": json.dumps(body).encode()}
    try:
        return ("parsed", parser.parse({**request, "url_path": "/", "url_params": {}}))
    except Exception as error:  # moto's own failure on a malformed value: compared by type
        return ("raised", type(error))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    item=st.dictionaries(_text, ATTRIBUTE_VALUES, max_size=4),
    values=st.dictionaries(_text.map(lambda t: f":{t}"), ATTRIBUTE_VALUES, max_size=3),
)
def test_attribute_values_are_parsed_as_moto_parses_them(
    item: dict[str, Any], values: dict[str, Any]
) -> None:
    """LOC-2: an item, a key, expression values and a transaction's items parse to what moto's walk gives,
    binary decoded and malformed values treated as moto treats them."""
    # Given requests that carry the same attribute values in each place DynamoDB takes them
    requests = {
        "PutItem": {"TableName": "t", "Item": item, "ExpressionAttributeValues": values},
        "Query": {"TableName": "t", "ExclusiveStartKey": item, "ExpressionAttributeValues": values},
        "TransactWriteItems": {"TransactItems": [{"Put": {"TableName": "t", "Item": item}}]},
        "BatchWriteItem": {"RequestItems": {"t": [{"PutRequest": {"Item": item}}]}},
    }
    for operation, body in requests.items():
        # When each is parsed with the change and with moto's own walk
        ours = _parse(operation, body, as_moto=False)
        theirs = _parse(operation, body, as_moto=True)
        # Then both give the same parameters (bytes where moto decodes binary), or fail alike
        assert ours == theirs, operation
        assert repr(ours) == repr(theirs), operation


def test_binary_nested_in_maps_and_lists_is_stored_and_read_back_as_sent() -> None:
    """LOC-2: an item whose maps and lists hold binary, strings and numbers reads back exactly."""
    with mock_aws():
        # Given a table of the local store
        create_table("requests")  # template.yaml's table
        client = boto3.client("dynamodb", region_name="us-east-1")
        item = {
            "pk": {"S": "p"},
            "sk": {"S": "s"},
            "deep": {"M": {"blob": {"B": b"\x00\xff"}, "list": {"L": [{"BS": [b"a", b"b"]}, {"N": "7"}]}}},
            "plain": {"M": {"text": {"S": "tea"}, "flags": {"L": [{"BOOL": True}, {"NULL": True}]}}},
        }
        # When it is written and read back
        client.put_item(TableName="requests", Item=item)
        read = client.get_item(TableName="requests", Key={"pk": {"S": "p"}, "sk": {"S": "s"}})["Item"]
        # Then every value is as sent, the binary as bytes
        assert read == item


def test_action_names_follow_a_class_that_gains_or_loses_a_function() -> None:
    """LOC-2: the names moto checks an action against are the class's functions, after any change."""

    class Handler:
        def first(self) -> None: ...

    # Given the names listed once for a class
    assert moto_requests.method_names(Handler) == {"first"}
    # When the class gains a function, then loses one
    Handler.second = lambda self: None  # type: ignore[attr-defined]
    gained = moto_requests.method_names(Handler)
    del Handler.first
    lost = moto_requests.method_names(Handler)
    # Then each listing is what moto's own would give
    assert gained == {"first", "second"}
    assert lost == {"second"}
    listed_by_moto = moto_requests._original_method_names(DynamoHandler)
    assert moto_requests.method_names(DynamoHandler) == set(listed_by_moto)
