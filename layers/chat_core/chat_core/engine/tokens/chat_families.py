"""Chat-format counts of the open families: what each family's chat template adds around messages.

A template renders messages into one text with special tokens between the parts; the tokenizer
splits at the special tokens (one token each) and encodes each text run between them on its own. A
message's count here is its special tokens plus the exact tokens of the text runs it contributes,
so the sum over messages plus `priming` equals the prompt the template builds
(tests/unit/test_tokens_families.py checks it against the templates the families publish, rendered
and tokenized by the reference library; scripts/family_reference.py makes that data).

- qwen2: `<|im_start|>{role}\\n{content}<|im_end|>\\n`, reply primed by `<|im_start|>assistant\\n`.
  Tool results are wrapped in `<tool_response>` inside a user turn, tool calls in `<tool_call>`.
  (Qwen2.5's template adds a default system prompt when a conversation has none; Qwen3's does not:
  the count is Qwen3's.)
- llama3 / llama4: `<|start_header_id|>{role}<|end_header_id|>\\n\\n{content|trim}<|eot_id|>`, one
  `<|begin_of_text|>`, reply primed by the assistant header (Llama 4 names its tokens differently,
  same count). The published template trims the content; Meta's own llama_models encoder does not,
  so the two differ only for content with leading or trailing whitespace.
- deepseek_v3: `<｜begin▁of▁sentence｜>{system}`, `<｜User｜>{content}`,
  `<｜Assistant｜>{content}<｜end▁of▁sentence｜>`, reply primed by `<｜Assistant｜>`.
- mistral_tekken: `<s>[INST]{content}[/INST]{reply}</s>` (system prompt in `[SYSTEM_PROMPT]`, as the
  later tekken formats have it; mistral-common's v3 format, Mistral NeMo's, folds it into the last
  user turn instead: 2 tokens fewer per system message).

A `name` field is not rendered by any of these templates, so it costs nothing. Tool calls, tool
results and tool definitions follow each template where it renders them; where a family's template
does not (DeepSeek's and Llama's tool definitions) the JSON text of the definitions is counted, an
estimate of what the provider adds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from chat_core.errors import InvalidInput

TextCounter = Callable[[str], int]

# Images, audio and files in a content list are not text; each counts as a flat 85 tokens (the base
# cost of one low-detail image in OpenAI's vision pricing) so budgets see them, not as their real cost.
NON_TEXT_PART_TOKENS: Final = 85
TEXT_PART_TYPES: Final = frozenset({"text", "input_text", "output_text", "refusal"})


def content_text(content: Any) -> tuple[str, int]:
    """A message's content as the text a template renders, and the number of non-text parts in it."""
    if content is None:
        return "", 0
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list | tuple):
        texts: list[str] = []
        other = 0
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                if part.get("type", "text") in TEXT_PART_TYPES:
                    text = part.get("text", part.get("refusal"))
                    if text is not None:
                        texts.append(as_text(text, "content part text"))
                else:
                    other += 1
            else:
                raise InvalidInput(f"a content part must be an object or a string, got {type(part).__name__}")
        return "".join(texts), other
    raise InvalidInput(
        f"message content must be a string, a list of content parts or null, got {type(content).__name__}"
    )


def as_text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")


def _tojson(value: Any, **kwargs: Any) -> str:
    # The templates' `tojson` filter as the reference library defines it (non-ASCII kept).
    return json.dumps(value, ensure_ascii=False, **kwargs)


def _calls(message: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(type, name, arguments text) of each tool call of a message (the pre-tools function_call too)."""
    raw = message.get("tool_calls") or ()
    if not isinstance(raw, list | tuple):
        raise InvalidInput(f"tool_calls must be a list, got {type(raw).__name__}")
    calls = list(raw)
    if message.get("function_call"):
        calls.append({"type": "function", "function": message["function_call"]})
    out: list[tuple[str, str, str]] = []
    for call in calls:
        if not isinstance(call, Mapping):
            raise InvalidInput(f"a tool call must be an object, got {type(call).__name__}")
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise InvalidInput(f"a tool call's function must be an object, got {type(function).__name__}")
        arguments = function.get("arguments") or ""
        if isinstance(arguments, Mapping | list):
            arguments = _tojson(arguments)
        out.append(
            (
                str(call.get("type") or "function"),
                as_text(function.get("name") or "", "tool call name"),
                as_text(arguments, "tool call arguments"),
            )
        )
    return out


def _role(message: Mapping[str, Any]) -> str:
    if not isinstance(message, Mapping):
        raise InvalidInput(f"a message must be a JSON object, got {type(message).__name__}")
    return as_text(message.get("role") or "", "role")


calls_of = _calls
role_of = _role


# ------------------------------------------------------------------------------------------ families


# Qwen3's special tokens that its template writes (each one token, and a boundary between text runs).
_QWEN_SPECIALS: Final = r"(<\|im_start\|>|<\|im_end\|>|</?tool_call>|</?tool_response>|</?think>)"


def _template_count(pieces: Sequence[tuple[str, bool]], specials: str, text: TextCounter) -> int:
    """Tokens of a rendered turn: pieces are (text, written by the template); in the template's own
    text the special tokens count one each and cut the text runs, which are encoded one by one."""
    runs = [""]
    count = 0
    for piece, literal in pieces:
        if not literal:
            runs[-1] += piece
            continue
        for index, part in enumerate(re.split(specials, piece)):  # re caches the compiled pattern
            if index % 2:
                count += 1
                runs.append("")
            else:
                runs[-1] += part
    return count + sum(text(run) for run in runs if run)


def _qwen_message(message: Mapping[str, Any], text: TextCounter) -> int:
    role = _role(message)
    content, other = content_text(message.get("content"))
    extra = other * NON_TEXT_PART_TOKENS
    if role == "tool":
        pieces = [("<|im_start|>user\n<tool_response>\n", True), (content, False)]
        return (
            _template_count([*pieces, ("\n</tool_response><|im_end|>\n", True)], _QWEN_SPECIALS, text) + extra
        )
    pieces = [("<|im_start|>", True), (f"{role}\n{content}", False)]
    for index, (_, name, arguments) in enumerate(_calls(message)):
        if index or content:
            pieces.append(("\n", True))
        pieces += [('<tool_call>\n{"name": "', True), (name, False), ('", "arguments": ', True)]
        pieces += [(arguments, False), ("}\n</tool_call>", True)]
    pieces.append(("<|im_end|>\n", True))
    return _template_count(pieces, _QWEN_SPECIALS, text) + extra


_QWEN_TOOLS_HEAD: Final = (
    "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_QWEN_TOOLS_TAIL: Final = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call><|im_end|>\n"
)


def _qwen_tools(tools: Sequence[Mapping[str, Any]], text: TextCounter) -> int:
    # The tools go into the system turn; counted as that turn without a system prompt of its own.
    pieces = [(_QWEN_TOOLS_HEAD, True)] + [("\n" + _tojson(tool), False) for tool in tools]
    return _template_count([*pieces, (_QWEN_TOOLS_TAIL, True)], _QWEN_SPECIALS, text)


def _llama_message(message: Mapping[str, Any], text: TextCounter) -> int:
    role = _role(message)
    content, other = content_text(message.get("content"))
    for _, name, arguments in _calls(message):
        # Llama 3.1's JSON tool-call format; the shipped template does not render calls (an estimate).
        content += f'{{"name": "{name}", "parameters": {arguments}}}'
    # <|start_header_id|>, <|end_header_id|>, <|eot_id|>; the role; "\n\n" + trimmed content as one run
    return 3 + text(role) + text("\n\n" + content.strip()) + other * NON_TEXT_PART_TOKENS


def _json_tools(tools: Sequence[Mapping[str, Any]], text: TextCounter) -> int:
    return text("\n\n".join(_tojson(tool, indent=4) for tool in tools))


def _deepseek_message(message: Mapping[str, Any], text: TextCounter) -> int:
    role = _role(message)
    content, other = content_text(message.get("content"))
    extra = other * NON_TEXT_PART_TOKENS
    if role == "system":
        return text(content) + extra  # system prompts go first, bare, after <｜begin▁of▁sentence｜>
    if role == "user":
        return 1 + text(content) + extra  # <｜User｜>
    if role == "tool":
        return (
            3 + text(content) + extra
        )  # <｜tool▁output▁begin｜> ... <｜tool▁output▁end｜>, outputs begin/end
    calls = _calls(message)
    total = 2 + text(content) + extra  # <｜Assistant｜> ... <｜end▁of▁sentence｜>
    if calls:
        total += 2  # <｜tool▁calls▁begin｜> ... <｜tool▁calls▁end｜>
        for index, (kind, name, arguments) in enumerate(calls):
            # ["\n"]<｜tool▁call▁begin｜>{type}<｜tool▁sep｜>{name}\n```json\n{arguments}\n```
            # <｜tool▁call▁end｜>
            total += 3 + (1 if index else 0) + text(kind) + text(f"{name}\n```json\n{arguments}\n```")
    return total


def _tekken_message(message: Mapping[str, Any], text: TextCounter) -> int:
    role = _role(message)
    content, other = content_text(message.get("content"))
    extra = other * NON_TEXT_PART_TOKENS
    if role == "assistant":
        total = text(content) + 1 + extra  # {reply}</s>
        calls = _calls(message)
        if calls:
            payload = [{"name": name, "arguments": json_or_text(arguments)} for _, name, arguments in calls]
            total += 1 + text(_tojson(payload))  # [TOOL_CALLS]
        return total
    if role == "tool":
        return 2 + text(content) + extra  # [TOOL_RESULTS] ... [/TOOL_RESULTS]
    return 2 + text(content) + extra  # [INST] ... [/INST], or [SYSTEM_PROMPT] ... [/SYSTEM_PROMPT]


def _tekken_tools(tools: Sequence[Mapping[str, Any]], text: TextCounter) -> int:
    return 2 + text(_tojson(list(tools)))  # [AVAILABLE_TOOLS] ... [/AVAILABLE_TOOLS]


def json_or_text(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


class FamilyChatFormat(NamedTuple):
    """One family's chat template, as counts."""

    name: str
    message: Callable[[Mapping[str, Any], TextCounter], int]
    #: Tokens once per prompt: the begin-of-text token and the header that primes the reply.
    priming: Callable[[TextCounter], int]
    tools: Callable[[Sequence[Mapping[str, Any]], TextCounter], int]
    #: True where the count follows the family's published template; False where it is an estimate.
    tools_exact: bool = False


CHAT_FORMATS: Final[dict[str, FamilyChatFormat]] = {
    "qwen2": FamilyChatFormat("qwen2", _qwen_message, lambda t: 1 + t("assistant\n"), _qwen_tools, True),
    "llama3": FamilyChatFormat(
        "llama3", _llama_message, lambda t: 3 + t("assistant") + t("\n\n"), _json_tools
    ),
    "llama4": FamilyChatFormat(
        "llama4", _llama_message, lambda t: 3 + t("assistant") + t("\n\n"), _json_tools
    ),
    "deepseek_v3": FamilyChatFormat("deepseek_v3", _deepseek_message, lambda t: 2, _json_tools),
    "mistral_tekken": FamilyChatFormat("mistral_tekken", _tekken_message, lambda t: 1, _tekken_tools),
}
