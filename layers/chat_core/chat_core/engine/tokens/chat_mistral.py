"""Chat-format counts of Mistral's SentencePiece tokenizers, as mistral-common's instruct tokenizers build
a prompt (versions v1, v2, v3 and v7; tests/unit/test_tokens_mistral_sp.py checks them against
`encode_chat_completion` of each version).

A prompt is `<s>` and then each message; a text run is encoded on its own (SentencePiece adds its
word-start marker to each run), control tokens count one each:

- v1: a user turn is the text `[INST] {content} [/INST]` (no control tokens), a reply `{content}</s>`;
  no tools.
- v2, v3, v7: `[INST]{content}[/INST]`, a reply `{content without trailing spaces}</s>`, tool calls
  `[TOOL_CALLS]{json}</s>`, a tool result `[TOOL_RESULTS]{json}[/TOOL_RESULTS]` and the tool
  definitions `[AVAILABLE_TOOLS]{json}[/AVAILABLE_TOOLS]` (before the last user turn). v2's JSON has
  the call's name and arguments and the result's name and content; v3's the call id too, and the
  result's content and call id. v7 writes a result as `[TOOL_RESULTS]{call id}[TOOL_CONTENT]{content}
  [/TOOL_RESULTS]` and a reply may carry text and calls together.
- The system prompt: v7 gives it its own turn, `[SYSTEM_PROMPT]{content}[/SYSTEM_PROMPT]`; v1 to v3
  fold it into a user turn as `{system}\\n\\n{content}` (the first user turn for v1, the last one for
  v2 and v3), counted here as the system text plus its two newline tokens. The user text that
  follows then starts without SentencePiece's word-start marker, which changes its first word's
  count (by -1 to +3 on the test corpora's 2,770 words, by 0 for 55% of them, more than 1 for 2%):
  the one place where the sum over messages can count fewer tokens than the prompt.

Other differences from mistral-common, all on the side of counting more: it merges consecutive
messages of one role into one turn (joined by a blank line) where they are counted as separate
turns here, and v2 leaves out tool calls and results that come before the last user turn. A `name`
field costs nothing (v2 writes a tool result's name into its JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from chat_core.engine.tokens.chat_families import (
    NON_TEXT_PART_TOKENS,
    FamilyChatFormat,
    TextCounter,
    calls_of,
    content_text,
    role_of,
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_value(text: str, *, normalise: bool) -> Any:
    """A tool call's arguments or a tool result's content as mistral-common parses it (its normaliser
    turns an empty value into {})."""
    if normalise and not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _call_payload(
    message: Mapping[str, Any], calls: list[tuple[str, str, str]], version: str
) -> list[dict[str, Any]]:
    """The tool calls as mistral-common writes them: name and parsed arguments, and from v3 the call id."""
    payload = [
        {"name": name, "arguments": _json_value(arguments, normalise=True)} for _, name, arguments in calls
    ]
    if version != "v2":
        raw = message.get("tool_calls") or ()
        ids = [call.get("id") if isinstance(call, Mapping) else None for call in raw]
        for call, call_id in zip(payload, ids, strict=False):
            if isinstance(call_id, str) and call_id and call_id != "null":
                call["id"] = call_id
    return payload


def _message_counter(version: str) -> Callable[[Mapping[str, Any], TextCounter], int]:
    def count(message: Mapping[str, Any], text: TextCounter) -> int:
        role = role_of(message)
        content, other = content_text(message.get("content"))
        extra = other * NON_TEXT_PART_TOKENS
        if role == "system" or role == "developer":
            if version == "v7":
                return 2 + text(content) + extra  # [SYSTEM_PROMPT] ... [/SYSTEM_PROMPT]
            return (text(content) + 2 if content else 0) + extra  # "{system}\n\n" inside a user turn
        if role == "assistant":
            calls = calls_of(message) if version != "v1" else []
            reply = content if version == "v1" else content.rstrip(" ")
            total = 1 + extra  # </s>
            if reply and (version == "v7" or not calls):  # v7 writes both; v2/v3 refuse a reply with calls
                total += text(reply)
            if calls:
                total += 1 + text(_dumps(_call_payload(message, calls, version)))  # [TOOL_CALLS] ...
            return total
        if role == "tool":
            call_id = message.get("tool_call_id")
            if version == "v7":  # [TOOL_RESULTS]{call id}[TOOL_CONTENT]{content}[/TOOL_RESULTS]
                return 3 + text(call_id if isinstance(call_id, str) else "") + text(content) + extra
            value = _json_value(content, normalise=True)
            if version in ("v1", "v2"):
                result: Any = [{"name": message.get("name"), "content": value}]
            else:
                result = {"content": value, "call_id": call_id}
            return 2 + text(_dumps(result)) + extra  # [TOOL_RESULTS] ... [/TOOL_RESULTS]
        if version == "v1":
            return text(f"[INST] {content} [/INST]") + extra
        return 2 + text(content) + extra  # [INST] ... [/INST]

    return count


def _tools_counter(version: str) -> Callable[[Sequence[Mapping[str, Any]], TextCounter], int]:
    def count(tools: Sequence[Mapping[str, Any]], text: TextCounter) -> int:
        if version == "v1" or not tools:
            return 0  # v1 has no tools: mistral-common leaves them out of the prompt
        rendered = []
        for tool in tools:
            function = tool.get("function") or {}
            rendered.append(
                {
                    "type": tool.get("type") or "function",
                    "function": {
                        "name": function.get("name") or "",
                        "description": function.get("description") or "",
                        "parameters": function.get("parameters") or {},
                    },
                }
            )
        return 2 + text(_dumps(rendered))  # [AVAILABLE_TOOLS] ... [/AVAILABLE_TOOLS]

    return count


#: The chat formats of the SentencePiece tokenizers, by tokenizer name (families.SENTENCEPIECE_SPECS).
MISTRAL_SP_FORMATS: Final[dict[str, FamilyChatFormat]] = {
    f"mistral_sp_{version}": FamilyChatFormat(
        f"mistral_sp_{version}", _message_counter(version), lambda t: 1, _tools_counter(version), True
    )
    for version in ("v1", "v2", "v3", "v7")
}
