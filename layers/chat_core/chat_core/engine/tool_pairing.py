"""Agent tool messages (OpenAI format): size caps and the pairing of every tool result with a pending call.

An agent records an assistant message with `tool_calls` and then one `tool` message per call, each
naming the call it answers with `tool_call_id`. The rules checked here, before anything is written:

- a tool result answers a call that is pending at that point (asked by the model's last answer or by an
  assistant message earlier in the same post) and answers it once; anything else is an orphan (422);
- an assistant message may not come while calls are still unanswered, and a post may not end with
  calls unanswered (422): the OpenAI format needs every call answered before the conversation goes on;
- arguments, results and the post's recorded messages stay under their size caps (422).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from chat_core.errors import InvalidInput, OrphanToolResult, ToolPayloadTooLarge, ToolResultsMissing

#: One call's `function.arguments` (a JSON string), UTF-8 bytes.
MAX_TOOL_ARGUMENTS_BYTES: Final = 32 * 1024
#: All calls of one assistant message together: keeps the message item far below DynamoDB's 400 KB.
MAX_MESSAGE_TOOL_CALLS_BYTES: Final = 128 * 1024
#: One tool result's `content`, UTF-8 bytes.
MAX_TOOL_RESULT_BYTES: Final = 32 * 1024
#: The text of an assistant message an agent records.
MAX_ASSISTANT_TEXT_BYTES: Final = 64 * 1024
#: Messages and tool calls one post may record: with their events they fit one TransactWrite (100 items).
MAX_RECORDED_MESSAGES: Final = 30
MAX_RECORDED_TOOL_CALLS: Final = 30
#: Everything one post records (contents and arguments).
MAX_RECORDED_BYTES: Final = 192 * 1024


def _bytes(text: str | None) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if text else 0


def _calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [call for call in message.get("tool_calls") or [] if isinstance(call, Mapping)]


def _function(call: Mapping[str, Any]) -> Mapping[str, Any]:
    function = call.get("function")
    return function if isinstance(function, Mapping) else {}


def check_sizes(messages: Sequence[Mapping[str, Any]]) -> None:
    """Size caps of recorded messages, checked before any I/O (ToolPayloadTooLarge, 422)."""
    if len(messages) > MAX_RECORDED_MESSAGES:
        raise ToolPayloadTooLarge(
            f"messages has {len(messages)} entries; one post records at most {MAX_RECORDED_MESSAGES}",
            field="messages",
        )
    total = 0
    calls = 0
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.get("role") == "tool":
            size = _bytes(message.get("content"))
            if size > MAX_TOOL_RESULT_BYTES:
                raise ToolPayloadTooLarge(
                    f"{where}.content has {size} bytes; a tool result may have at most "
                    f"{MAX_TOOL_RESULT_BYTES}",
                    field=f"{where}.content",
                )
            total += size
            continue
        text = _bytes(message.get("content"))
        if text > MAX_ASSISTANT_TEXT_BYTES:
            raise ToolPayloadTooLarge(
                f"{where}.content has {text} bytes; a recorded assistant message may have at most "
                f"{MAX_ASSISTANT_TEXT_BYTES}",
                field=f"{where}.content",
            )
        in_message = 0
        for number, call in enumerate(_calls(message)):
            size = _bytes(_function(call).get("arguments"))
            if size > MAX_TOOL_ARGUMENTS_BYTES:
                raise ToolPayloadTooLarge(
                    f"{where}.tool_calls[{number}].function.arguments has {size} bytes; the limit is "
                    f"{MAX_TOOL_ARGUMENTS_BYTES}",
                    field=f"{where}.tool_calls[{number}].function.arguments",
                )
            in_message += size + _bytes(str(_function(call).get("name") or ""))
            calls += 1
        if in_message > MAX_MESSAGE_TOOL_CALLS_BYTES:
            raise ToolPayloadTooLarge(
                f"{where}.tool_calls have {in_message} bytes together; the limit is "
                f"{MAX_MESSAGE_TOOL_CALLS_BYTES}",
                field=f"{where}.tool_calls",
            )
        total += text + in_message
    if calls > MAX_RECORDED_TOOL_CALLS:
        raise ToolPayloadTooLarge(
            f"messages ask for {calls} tool calls; one post records at most {MAX_RECORDED_TOOL_CALLS}",
            field="messages",
        )
    if total > MAX_RECORDED_BYTES:
        raise ToolPayloadTooLarge(
            f"messages have {total} bytes of content and arguments; one post records at most "
            f"{MAX_RECORDED_BYTES}",
            field="messages",
        )


def pair_results(
    messages: Sequence[Mapping[str, Any]], pending: Sequence[Mapping[str, str]]
) -> list[str | None]:
    """Check that every tool result answers a pending call, in order; return each message's tool name.

    `pending` are the calls still unanswered before this post ([{"id", "name"}]). The returned list has,
    for each message, the function name of the call a tool result answers (None for assistant messages).
    Raises OrphanToolResult or ToolResultsMissing (422).
    """
    open_calls: dict[str, str] = {str(c["id"]): str(c.get("name") or "") for c in pending}
    names: list[str | None] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in open_calls:
                waiting = ", ".join(sorted(open_calls)) or "none"
                raise OrphanToolResult(
                    f"{where} answers tool call {call_id!r}, which is not pending (pending calls: {waiting})",
                    field=f"{where}.tool_call_id",
                )
            names.append(open_calls.pop(call_id))
            continue
        if open_calls:
            raise ToolResultsMissing(
                f"{where} is an assistant message but tool calls {', '.join(sorted(open_calls))} have no "
                f"result yet; send one tool message per call right after the call",
                field=where,
            )
        ids = [str(call.get("id")) for call in _calls(message)]
        if len(set(ids)) != len(ids):
            raise InvalidInput(f"{where}.tool_calls repeats a call id", field=f"{where}.tool_calls")
        open_calls = {str(call.get("id")): str(_function(call).get("name") or "") for call in _calls(message)}
        names.append(None)
    if open_calls:
        raise ToolResultsMissing(
            f"tool calls {', '.join(sorted(open_calls))} have no result; send one tool message per call "
            f"(role tool, tool_call_id) in the same post",
            field="messages",
        )
    return names


def open_calls(history: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The calls of the newest assistant message with `tool_calls` in `history` (oldest first) that no
    later tool message answers ([{"id", "name"}])."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.get("role") == "assistant" and _calls(message):
            answered = {str(m.get("tool_call_id")) for m in history[index + 1 :] if m.get("role") == "tool"}
            return [
                {"id": str(call.get("id")), "name": str(_function(call).get("name") or "")}
                for call in _calls(message)
                if str(call.get("id")) not in answered
            ]
    return []


def pair_appended(
    messages: Sequence[Mapping[str, Any]], pending: Sequence[Mapping[str, str]]
) -> list[str | None]:
    """API-18 append: every tool result answers a call still open at that point (the path's newest
    unanswered calls, or those of an appended assistant message), once; unlike a post, calls may stay
    unanswered for a later append (a window leaves an incomplete group out). Returns each message's tool
    name (None for other messages); raises OrphanToolResult (422)."""
    waiting: dict[str, str] = {str(c["id"]): str(c.get("name") or "") for c in pending}
    names: list[str | None] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in waiting:
                listed = ", ".join(sorted(waiting)) or "none"
                raise OrphanToolResult(
                    f"{where} answers tool call {call_id!r}, which is not open (open calls: {listed})",
                    field=f"{where}.tool_call_id",
                )
            names.append(waiting.pop(call_id))
            continue
        calls = _calls(message)
        if calls:
            ids = [str(call.get("id")) for call in calls]
            if len(set(ids)) != len(ids):
                raise InvalidInput(f"{where}.tool_calls repeats a call id", field=f"{where}.tool_calls")
            waiting = {str(call.get("id")): str(_function(call).get("name") or "") for call in calls}
        names.append(None)
    return names
