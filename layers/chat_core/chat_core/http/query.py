"""Query parameters declared on a route and checked by hand, without pydantic (PERF-1).

A route declares them as it would with Powertools (`limit: Annotated[int, Query(ge=1, le=200)] = 100`),
but with this module's `Query`: `ChatResolver` then reads them from the request, converts and checks them
as pydantic's lax mode does (the same values accepted, the same messages), and passes them to the route.
A bad value raises Powertools' `RequestValidationError`, answered 422 like any other (DES-1). pydantic is a
third of a handler's cold start, and a route whose inputs are path and query parameters only never loads
it. The OpenAPI document describes these parameters as Powertools' own `Query` would
(`chat_core.http.openapi_doc`, which runs in no deployed function).
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

_INTEGER = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")
_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_FALSE = frozenset({"false", "0", "no", "off", "f", "n"})
_INT_MESSAGE = "Input should be a valid integer, unable to parse string as an integer"


@dataclass(frozen=True)
class Query:
    """A query parameter's constraints, named as Powertools' (and pydantic's) `Query` names them."""

    ge: int | None = None
    le: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    alias: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class QueryParameter:
    """One declared parameter: where it is read from, what it becomes, and what it may be."""

    name: str  # the route function's argument
    key: str  # the query string's name (the alias, if any)
    kind: Any  # int, str, bool, or a tuple of the allowed literal strings (None is never read from a query)
    required: bool
    default: Any
    query: Query

    def read(self, raw: str, errors: list[dict[str, Any]]) -> Any:
        """The value of `raw`, or None with the problem appended to `errors` (pydantic's type and wording)."""
        loc = ("query", self.key)
        if isinstance(self.kind, tuple):
            if raw in self.kind:
                return raw
            quoted = [f"'{choice}'" for choice in self.kind]
            allowed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            return _problem(errors, loc, "literal_error", f"Input should be {allowed}", raw)
        if self.kind is bool:
            lowered = raw.lower()
            if lowered in _TRUE or lowered in _FALSE:
                return lowered in _TRUE
            message = "Input should be a valid boolean, unable to interpret input"
            return _problem(errors, loc, "bool_parsing", message, raw)
        if self.kind is int:
            return self._integer(raw, loc, errors)
        return self._text(raw, loc, errors)

    def _integer(self, raw: str, loc: tuple[str, str], errors: list[dict[str, Any]]) -> Any:
        text = raw.strip()
        if not _INTEGER.fullmatch(text):
            return _problem(errors, loc, "int_parsing", _INT_MESSAGE, raw)
        value = int(text.split(".", 1)[0])
        if self.query.ge is not None and value < self.query.ge:
            message = f"Input should be greater than or equal to {self.query.ge}"
            return _problem(errors, loc, "greater_than_equal", message, raw)
        if self.query.le is not None and value > self.query.le:
            message = f"Input should be less than or equal to {self.query.le}"
            return _problem(errors, loc, "less_than_equal", message, raw)
        return value

    def _text(self, raw: str, loc: tuple[str, str], errors: list[dict[str, Any]]) -> Any:
        least, most = self.query.min_length, self.query.max_length
        if least is not None and len(raw) < least:
            message = f"String should have at least {least} character{'' if least == 1 else 's'}"
            return _problem(errors, loc, "string_too_short", message, raw)
        if most is not None and len(raw) > most:
            message = f"String should have at most {most} character{'' if most == 1 else 's'}"
            return _problem(errors, loc, "string_too_long", message, raw)
        if self.query.pattern is not None and not _matches(self.query.pattern, raw):
            message = f"String should match pattern '{self.query.pattern}'"
            return _problem(errors, loc, "string_pattern_mismatch", message, raw)
        return raw


def _problem(errors: list[dict[str, Any]], loc: tuple[str, ...], kind: str, message: str, raw: str) -> None:
    errors.append({"type": kind, "loc": loc, "msg": message, "input": raw})


def _matches(pattern: str, text: str) -> bool:
    # pydantic's regex engine (Rust's) lets `$` match at the very end only, never before a final newline.
    found = re.search(pattern, text)
    return found is not None and (not pattern.endswith("$") or found.end() == len(text))


def declared(func: Callable[..., Any], path_names: set[str]) -> list[QueryParameter] | None:
    """The query parameters `func` declares with this module's `Query`, or None when any argument other than
    a path parameter is declared otherwise (a body model, Powertools' own `Query`): Powertools checks those.
    A route mixing both is refused (TypeError): Powertools would not see this module's constraints.
    """
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # an annotation only Powertools resolves: it checks this route
        return None
    found: list[QueryParameter] = []
    others: list[str] = []
    for name, parameter in signature.parameters.items():
        if name in path_names:
            continue
        hint = hints.get(name)
        extras = typing.get_args(hint)[1:] if typing.get_origin(hint) is Annotated else ()
        query = next((extra for extra in extras if isinstance(extra, Query)), None)
        if query is None:
            others.append(name)
            continue
        kind = _kind(typing.get_args(hint)[0], func, name)
        required = parameter.default is inspect.Parameter.empty
        default = None if required else parameter.default
        found.append(QueryParameter(name, query.alias or name, kind, required, default, query))
    if not others:
        return found
    if found:
        raise TypeError(
            f"{func.__qualname__}: {', '.join(others)} need Powertools' validation, so declare "
            f"{', '.join(p.name for p in found)} with Powertools' own Query on this route"
        )
    return None


def _kind(base: Any, func: Callable[..., Any], name: str) -> Any:
    arguments = typing.get_args(base)
    if typing.get_origin(base) in (typing.Union, types.UnionType) and type(None) in arguments:
        others = [argument for argument in arguments if argument is not type(None)]
        base = others[0] if len(others) == 1 else base
    choices = typing.get_args(base)
    if typing.get_origin(base) is Literal and all(isinstance(choice, str) for choice in choices):
        return tuple(choices)
    if base in (int, str, bool):
        return base
    allowed = "int, str, bool or a Literal of strings"
    raise TypeError(f"{func.__qualname__}({name}): a Query parameter is {allowed}, optionally | None")


def read_all(parameters: list[QueryParameter], given: Mapping[str, str]) -> dict[str, Any]:
    """Each parameter's value from the request's query string; RequestValidationError naming every problem."""
    values: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    for parameter in parameters:
        raw = given.get(parameter.key)
        if raw is None:
            if parameter.required:
                _problem(errors, ("query", parameter.key), "missing", "Field required", "")
            values[parameter.name] = parameter.default
            continue
        values[parameter.name] = parameter.read(raw, errors)
    if errors:
        raise RequestValidationError(errors)
    return values


def with_query(
    func: Callable[..., Any], parameters: list[QueryParameter], query_string: Callable[[], Mapping[str, str]]
) -> Callable[..., Any]:
    """`func` called with its path parameters (as Powertools passes them) and its query parameters read."""

    @functools.wraps(func)
    def route(**path_arguments: str) -> Any:
        return func(**path_arguments, **read_all(parameters, query_string()))

    route.query_parameters = parameters  # type: ignore[attr-defined]
    return route
