"""TOK-8: tool definitions cost prompt tokens as OpenAI bills them (the cookbook's rule and its example)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from chat_core.engine.tokens import count_chat_tokens, count_tool_tokens

# The example of OpenAI's cookbook ("How to count tokens with tiktoken", section 7), with the prompt
# token counts the OpenAI API reported for it there.
COOKBOOK_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "The city and state, e.g. San Francisco, CA",
                    },
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]
COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful assistant that can answer to questions about the weather.",
    },
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.mark.parametrize(
    ("model", "api_prompt_tokens"),
    [("gpt-4o", 101), ("gpt-4o-mini", 101), ("gpt-4", 105), ("gpt-3.5-turbo", 105)],
)
def test_the_cookbook_example_counts_what_the_api_billed(model: str, api_prompt_tokens: int) -> None:
    """TOK-8: messages plus tools equal the prompt tokens OpenAI's API reported for the same request."""
    total = count_chat_tokens(COOKBOOK_MESSAGES, model=model) + count_tool_tokens(COOKBOOK_TOOLS, model)
    assert total == api_prompt_tokens


def test_no_tools_cost_nothing() -> None:
    assert count_tool_tokens(None, "gpt-4o") == 0
    assert count_tool_tokens([], "gpt-4o") == 0


def test_every_part_of_a_definition_counts() -> None:
    """TOK-8: a longer description, another property, another enum value or a nested schema all cost more."""
    base = count_tool_tokens(COOKBOOK_TOOLS, "gpt-4o")
    changes = []
    described = copy.deepcopy(COOKBOOK_TOOLS)
    described[0]["function"]["description"] += " and the forecast for the next three days"
    changes.append(described)
    more = copy.deepcopy(COOKBOOK_TOOLS)
    more[0]["function"]["parameters"]["properties"]["days"] = {"type": "integer", "description": "Days ahead"}
    changes.append(more)
    enum = copy.deepcopy(COOKBOOK_TOOLS)
    enum[0]["function"]["parameters"]["properties"]["unit"]["enum"].append("kelvin")
    changes.append(enum)
    nested = copy.deepcopy(COOKBOOK_TOOLS)
    nested[0]["function"]["parameters"]["properties"]["location"] = {
        "type": "object",
        "description": "Where",
        "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    }
    changes.append(nested)
    for tools in changes:
        assert count_tool_tokens(tools, "gpt-4o") > base
    # And two tools cost more than one, with one shared end
    two = [*COOKBOOK_TOOLS, {"type": "function", "function": {"name": "get_time"}}]
    assert base < count_tool_tokens(two, "gpt-4o") < 2 * base


def test_a_trailing_period_is_not_billed() -> None:
    """TOK-8: the cookbook drops a description's trailing period (the rendering ends the line itself)."""
    with_period = copy.deepcopy(COOKBOOK_TOOLS)
    with_period[0]["function"]["description"] += "."
    assert count_tool_tokens(with_period, "gpt-4o") == count_tool_tokens(COOKBOOK_TOOLS, "gpt-4o")
