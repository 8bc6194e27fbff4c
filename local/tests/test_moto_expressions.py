"""LOC-2: the local store answers UpdateItems as moto itself does once expressions are parsed once per text
and validated in one pass per check (`chat_local.moto_expressions`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from chat_local import moto_expressions, moto_fidelity
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from tests.support.table import create_table

TABLE = "expressions"

#: Actions on a few attributes, some of which fail on some items (a number added to a string, a
#: missing path, a set of the wrong type): errors are compared too.
ACTIONS = (
    ("SET", "#a = :s"),
    ("SET", "#n = if_not_exists(#n, :zero) + :one"),
    ("SET", "#n = #n - :one"),
    ("SET", "#l = list_append(if_not_exists(#l, :empty), :list)"),
    ("SET", "#l = list_append(:list, #l)"),
    ("SET", "#m = if_not_exists(#m, :map)"),
    ("SET", "#m.#k = :s"),
    ("SET", "#a = #b"),
    ("SET", "#b = :one"),
    ("REMOVE", "#a"),
    ("REMOVE", "#l[0]"),
    ("REMOVE", "#m.#k"),
    ("ADD", "#set :set"),
    ("ADD", "#n :one"),
    ("DELETE", "#set :set"),
)
NAMES = {"#a": "a", "#b": "b", "#n": "n", "#l": "l", "#m": "m", "#k": "k", "#set": "tags"}
VALUES = {
    ":s": {"S": "text"},
    ":zero": {"N": "0"},
    ":one": {"N": "1"},
    ":empty": {"L": []},
    ":list": {"L": [{"S": "x"}, {"N": "2"}]},
    ":map": {"M": {"k": {"S": "v"}}},
    ":set": {"SS": ["red", "blue"]},
}


def _expression(actions: list[tuple[str, str]]) -> str:
    clauses: dict[str, list[str]] = {}
    for verb, action in actions:
        clauses.setdefault(verb, []).append(action)
    return " ".join(f"{verb} {', '.join(parts)}" for verb, parts in clauses.items())


def _used(expression: str, table: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k in expression}


@contextmanager
def _moto_as_released() -> Iterator[None]:
    """moto's own parse and walk, for as long as the block runs."""
    parser = moto_expressions.expressions.UpdateExpressionParser
    walker = moto_expressions.ast_nodes.DepthFirstTraverser
    ours = (parser.__dict__["make"], walker.traverse)
    parser.make = moto_expressions._original_make
    walker.traverse = moto_expressions._original_traverse
    try:
        yield
    finally:
        parser.make, walker.traverse = ours


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """moto with the local store's changes, the fake credentials and region of tests.support.fake_aws."""
    moto_fidelity.install()
    with mock_aws():
        create_table(TABLE)  # template.yaml's table: its keys, index and stream
        yield boto3.client("dynamodb", region_name="us-east-1")


def _apply(client: Any, sk: str, steps: list[str]) -> list[Any]:
    """Each expression applied in turn to one item: the item after each, or the error's code and text
    (or moto's AssertionError, raised as released on a few paths, e.g. list_append of a missing list)."""
    outcomes: list[Any] = []
    for expression in steps:
        try:
            answer = client.update_item(
                TableName=TABLE,
                Key={"pk": {"S": "p"}, "sk": {"S": sk}},
                UpdateExpression=expression,
                ExpressionAttributeNames=_used(expression, NAMES),
                ExpressionAttributeValues=_used(expression, VALUES),
                ReturnValues="ALL_NEW",
            )
            outcomes.append(answer["Attributes"])
        except ClientError as error:
            outcomes.append((error.response["Error"]["Code"], error.response["Error"]["Message"]))
        except AssertionError as error:  # moto's own assertion on some paths it does not support
            outcomes.append(("AssertionError", str(error)))
    return outcomes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=4, unique_by=lambda a: a[1].split()[0]),
        min_size=1,
        max_size=6,
    )
)
def test_updates_answer_what_moto_itself_answers(client: Any, steps: list[list[tuple[str, str]]]) -> None:
    """LOC-2: a run of UpdateItems on one item, then the same run on another item with moto's own parse
    and walk: the same items after every step, and the same errors where a step fails."""
    # Given a run of update expressions (some repeat a text seen before, some fail on the item)
    expressions = [_expression(actions) for actions in steps]
    tag = str(abs(hash(tuple(expressions))))
    # When the run is applied through the local store's moto, and again through moto as released
    ours = _apply(client, f"ours-{tag}", expressions)
    with _moto_as_released():
        theirs = _apply(client, f"moto-{tag}", expressions)
    # Then every step answered the same (the key aside)
    strip = [{k: v for k, v in o.items() if k != "sk"} if isinstance(o, dict) else o for o in ours]
    assert strip == [{k: v for k, v in o.items() if k != "sk"} if isinstance(o, dict) else o for o in theirs]


def test_one_expression_text_on_two_items_keeps_each_items_values(client: Any) -> None:
    """LOC-2: the parsed expression kept for a text is never changed by using it: the second item's update
    sees its own values, not the first's."""
    # Given one expression text
    expression = (
        "SET #l = list_append(if_not_exists(#l, :empty), :list), #n = if_not_exists(#n, :zero) + :one"
    )
    names = _used(expression, NAMES)

    def update(sk: str, values: dict[str, Any]) -> dict[str, Any]:
        answer = client.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "p"}, "sk": {"S": sk}},
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={":empty": {"L": []}, ":zero": {"N": "0"}, **values},
            ReturnValues="ALL_NEW",
        )
        return answer["Attributes"]

    # When it updates one item twice and another item once, with other values
    update("first", {":list": {"L": [{"S": "a"}]}, ":one": {"N": "1"}})
    first = update("first", {":list": {"L": [{"S": "b"}]}, ":one": {"N": "1"}})
    second = update("second", {":list": {"L": [{"S": "z"}]}, ":one": {"N": "5"}})
    # Then each item holds what its own updates wrote
    assert (first["l"], first["n"]) == ({"L": [{"S": "a"}, {"S": "b"}]}, {"N": "2"})
    assert (second["l"], second["n"]) == ({"L": [{"S": "z"}]}, {"N": "5"})


def test_a_text_that_does_not_parse_fails_every_time(client: Any) -> None:
    """LOC-2: a broken expression is not kept: each use raises moto's parse error again."""
    for _ in range(2):
        with pytest.raises(Exception, match=r"Invalid UpdateExpression|Syntax error"):
            moto_expressions.expressions.UpdateExpressionParser.make("SET a = = b")
