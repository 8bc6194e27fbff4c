"""moto reads a request without redoing work whose outcome is already known.

Installed with `moto_fidelity` (the local server and the tests). Parsed parameters, dispatch and answers
are moto's own; only repeated work goes:

1. moto's JSON parser walks every member of every DynamoDB attribute value in a request (an item, a key,
   expression values, a transaction's or a batch's items) against the service model, and builds a copy.
   For strings, numbers (strings on the wire), booleans and nulls, and sets, lists and maps of them, that
   walk hands back what JSON gave it; it changes only binary (B, BS: base64 decoded to bytes), and drops
   a member that is null or not in the model. A value of the first kind is now taken as JSON gave it;
   any other (binary anywhere inside it, a null, an unknown member, a malformed value) goes through
   moto's walk as before.
2. Before every action moto listed the handler class's functions (`inspect.getmembers` over about two
   hundred members) to check the action is one of them. The names are kept per class and listed again
   when a class of its MRO gains or loses an attribute.
"""

from __future__ import annotations

import importlib
from typing import Any

# moto's request parser is excluded from moto's typing (`# type: ignore` at its top): used as Any here.
parse: Any = importlib.import_module("moto.core.parse")
responses: Any = importlib.import_module("moto.core.responses")

#: An attribute value's members that moto's JSON walk hands back unchanged, and its sets of strings.
_SCALARS = frozenset({"S", "N", "BOOL", "NULL"})
_STRING_SETS = frozenset({"SS", "NS"})

_original_parse_structure: Any = None
_original_method_names: Any = None
_method_names_by_class: dict[type, tuple[tuple[int, ...], frozenset[str]]] = {}


def parsed_as_given(value: Any) -> bool:
    """True when moto's JSON walk would answer an attribute value equal to `value` itself."""
    if type(value) is not dict or len(value) != 1:
        return False
    ((tag, inner),) = value.items()
    if inner is None:
        return False
    if tag in _SCALARS:
        return True
    if tag in _STRING_SETS:
        return type(inner) is list
    if tag == "M":
        return type(inner) is dict and all(parsed_as_given(v) for v in inner.values())
    if tag == "L":
        return type(inner) is list and all(parsed_as_given(v) for v in inner)
    return False


def _parse_structure(self: Any, shape: Any, value: Any) -> Any:
    if (
        shape.name == "AttributeValue"
        and self.MAP_TYPE is dict
        and self.operation_model.service_model.service_name == "dynamodb"
        and parsed_as_given(value)
    ):
        return value
    return _original_parse_structure(self, shape, value)


def method_names(clazz: type) -> frozenset[str]:
    """The names of `clazz`'s functions (moto's `method_names_from_class`), listed once per change."""
    stamp = tuple(len(vars(c)) for c in clazz.__mro__)
    known = _method_names_by_class.get(clazz)
    if known is not None and known[0] == stamp:
        return known[1]
    names = frozenset(_original_method_names(clazz))
    _method_names_by_class[clazz] = (stamp, names)
    return names


def install() -> None:
    """Apply both changes (idempotent; process-wide; the caller holds moto_fidelity's lock)."""
    global _original_parse_structure, _original_method_names
    if _original_parse_structure is None:
        _original_parse_structure = parse.BaseJSONParser._parse_structure
        parse.BaseJSONParser._parse_structure = _parse_structure
    if _original_method_names is None:
        _original_method_names = responses.method_names_from_class
        responses.method_names_from_class = method_names
