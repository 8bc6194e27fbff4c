"""PERF-1 and API-9: query parameters read by hand (`chat_core.http.query`) take exactly the values pydantic's
lax mode takes, and refuse the others with pydantic's own messages, so the 422s read as they did when
Powertools' validation (pydantic) checked them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from chat_core.http.query import Query, declared, read_all
from pydantic import Field, TypeAdapter, ValidationError

INTEGERS = [
    "5", " 5 ", "+5", "-5", "5.0", "5.00", "5.", ".0", "5.5", "1_000", "1__0", "_5", "5_", "1e2", "", " ",
    "abc", "0", "200", "201", "05", "5\n", "\t5", "1\u00a0", "0x10", "\u0663", "99999999999999999999999",
    "-0", "+-5", "1_0.0", "5.0e0", "1,2",
]  # fmt: skip
TEXTS = ["", "a", "ab", "abc", "abcd", "12", "1234", "12\n", "\n12", " 12", "١٢", "2024-01-02", "2024-1-02"]
BOOLEANS = ["true", "True", "TRUE", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n", " true", "", "2"]
CHOICES = ["asc", "desc", "ASC", "", "x"]


def _ours(hint: Any, raw: str) -> tuple[Any, list[tuple[str, str]]]:
    def route(value: str) -> None: ...

    route.__annotations__["value"] = hint  # the hint under test (annotations are strings here)
    parameters = declared(route, set())
    assert parameters is not None
    try:
        return read_all(parameters, {"value": raw})["value"], []
    except RequestValidationError as exc:
        return None, [(e["type"], e["msg"]) for e in exc.errors()]


def _pydantic(hint: Any, raw: str) -> tuple[Any, list[tuple[str, str]]]:
    try:
        return TypeAdapter(hint).validate_python(raw), []
    except ValidationError as exc:
        return None, [(e["type"], e["msg"]) for e in exc.errors()][:1]


def _pair(base: Any, **constraints: Any) -> tuple[Any, Any]:
    return Annotated[base, Query(**constraints)], Annotated[base, Field(**constraints)]


CASES = [
    (_pair(int, ge=1, le=200), INTEGERS),
    (_pair(int | None, ge=0, le=9_999_999_999), INTEGERS),
    (_pair(int), INTEGERS),
    (_pair(str, min_length=1, max_length=3), TEXTS),
    (_pair(str | None, min_length=2, max_length=2100), TEXTS),
    (_pair(str | None, max_length=1), TEXTS),
    (_pair(str | None, pattern=r"^\d{4}-\d{2}-\d{2}$"), TEXTS),
    (_pair(str | None, pattern=r"^\d+$"), TEXTS),
    (_pair(bool), BOOLEANS),
    (_pair(Literal["asc", "desc"]), CHOICES),
    (_pair(Literal["restore", "merge"]), ["restore", "merge", "Restore", ""]),
    (_pair(Literal["low", "medium", "high"]), ["low", "high", "Low", "max"]),
    (_pair(Literal["only"] | None), ["only", "other"]),
]


@pytest.mark.parametrize(("hints", "values"), CASES, ids=[str(c[0][1]) for c in CASES])
def test_a_query_value_is_taken_or_refused_as_pydantic_takes_or_refuses_it(
    hints: tuple[Any, Any], values: list[str]
) -> None:
    """PERF-1, API-9: the same value, or the same error type and message, for every sample."""
    ours, theirs = hints
    for raw in values:
        # Given a query value
        # When it is read by hand and by pydantic
        # Then both give the same value, or the same refusal
        assert _ours(ours, raw) == _pydantic(theirs, raw), repr(raw)


def test_every_problem_is_named_with_the_query_name_and_defaults_fill_what_is_absent() -> None:
    """PERF-1: all problems at once, each at ("query", its name or alias); absent optional values default."""

    # Given a route with an aliased parameter, a required one and an optional one
    def route(
        thing: str,
        *,
        from_: Annotated[str | None, Query(alias="from", pattern=r"^\d+$")] = None,
        key: Annotated[str, Query(min_length=1)],
        limit: Annotated[int, Query(ge=1)] = 20,
        cursor: Annotated[str | None, Query()] = None,
    ) -> None: ...

    parameters = declared(route, {"thing"})
    assert parameters is not None
    # When the query string has a bad `from` and no `key`
    with pytest.raises(RequestValidationError) as raised:
        read_all(parameters, {"from": "x", "limit": "0"})
    # Then each problem is named where the caller put it
    assert [(e["loc"], e["type"]) for e in raised.value.errors()] == [
        (("query", "from"), "string_pattern_mismatch"),
        (("query", "key"), "missing"),
        (("query", "limit"), "greater_than_equal"),
    ]
    # And with `key` given, what is absent takes its default
    assert read_all(parameters, {"key": "k"}) == {"from_": None, "key": "k", "limit": 20, "cursor": None}


def test_a_route_with_a_body_or_an_unsupported_type_is_left_to_powertools() -> None:
    """PERF-1: only path and `Query` parameters are read by hand; anything else is Powertools' to check."""

    # Given a route taking a body model, and one declaring a Query of a type this reader does not know
    def with_body(conversation_id: str, body: dict[str, Any]) -> None: ...

    def with_float(ratio: Annotated[float, Query()] = 0.5) -> None: ...

    def with_both(body: dict[str, Any], limit: Annotated[int, Query(ge=1)] = 20) -> None: ...

    # When their parameters are read
    # Then the first is not ours; the second, and a route mixing a body with this module's Query (whose
    # constraints Powertools would not see), are refused when the route is declared
    assert declared(with_body, {"conversation_id"}) is None
    with pytest.raises(TypeError, match="ratio"):
        declared(with_float, set())
    with pytest.raises(TypeError, match="declare limit with Powertools' own Query"):
        declared(with_both, set())
