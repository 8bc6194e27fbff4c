"""TOK-8: the prompt tokens a request's tool definitions cost, as OpenAI's chat format bills them.

A model never sees `tools` as JSON: the provider renders the definitions into the prompt. OpenAI's
cookbook ("How to count tokens with tiktoken", section 7) gives the rule its API bills by, for flat
parameter schemas: per function a fixed start, the text "name:description" (a trailing period
dropped), and for its parameters a start plus, per property, a key cost, "name:type:description" and
its enum values; one fixed end for the whole list. The constants below are the cookbook's.

Beyond the cookbook: a property whose schema nests (`items`, `properties`, `anyOf`, ...) also counts
the compact JSON of that nested schema as text, so a rich schema is never counted as free; that part
is an estimate of how the provider renders it, not a billed figure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from chat_core.engine.tokens.chat_format import FAMILY_FORMATS
from chat_core.engine.tokens.encodings import count_tokens, encoding_for_model


class ToolFraming(NamedTuple):
    """The cookbook's per-encoding constants."""

    func_init: int
    prop_init: int
    prop_key: int
    enum_init: int
    enum_item: int
    func_end: int


#: gpt-4o, gpt-4o-mini and the later o200k models.
O200K_FRAMING: Final = ToolFraming(7, 3, 3, -3, 3, 12)
#: gpt-3.5-turbo and gpt-4 (cl100k).
CL100K_FRAMING: Final = ToolFraming(10, 3, 3, -3, 3, 12)

#: Schema keys the cookbook's rule renders itself; the rest of a property's schema is nested detail.
_RENDERED: Final = frozenset({"type", "description", "enum"})


def framing_for(encoding: str) -> ToolFraming:
    return CL100K_FRAMING if encoding == "cl100k_base" else O200K_FRAMING


def count_tool_tokens(tools: Sequence[Mapping[str, Any]] | None, model: str | None = None) -> int:
    """TOK-8: prompt tokens of `tools` (Chat Completions `tools`: [{"type": "function", "function":
    {"name", "description"?, "parameters"?}}]) for `model`; 0 without tools."""
    if not tools:
        return 0
    encoding = encoding_for_model(model)

    def text(value: str) -> int:
        return int(count_tokens(value, encoding=encoding))

    family = FAMILY_FORMATS.get(encoding)
    if family is not None:
        return family.tools(tools, text)  # an open family: its template's rendering of the definitions
    framing = framing_for(encoding)

    total = 0
    for tool in tools:
        function = tool.get("function") or {}
        total += framing.func_init
        description = _strip_period(str(function.get("description") or ""))
        total += text(f"{function.get('name', '')}:{description}")
        parameters = function.get("parameters") or {}
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        if isinstance(properties, Mapping) and properties:
            total += framing.prop_init
            for name, schema in properties.items():
                total += framing.prop_key + _property_tokens(str(name), schema, framing, text)
    return total + framing.func_end


def _property_tokens(name: str, schema: Any, framing: ToolFraming, text: Callable[[str], int]) -> int:
    if not isinstance(schema, Mapping):
        return text(f"{name}::")
    tokens = 0
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        tokens += framing.enum_init
        for item in enum:
            tokens += framing.enum_item + text(item if isinstance(item, str) else json.dumps(item))
    kind = schema.get("type", "")
    kind_text = kind if isinstance(kind, str) else json.dumps(kind, separators=(",", ":"))
    description = _strip_period(str(schema.get("description") or ""))
    tokens += text(f"{name}:{kind_text}:{description}")
    nested = {k: v for k, v in schema.items() if k not in _RENDERED}
    if nested:
        tokens += text(json.dumps(nested, separators=(",", ":"), ensure_ascii=False, sort_keys=True))
    return tokens


def _strip_period(description: str) -> str:
    return description[:-1] if description.endswith(".") else description
