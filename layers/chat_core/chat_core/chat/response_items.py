"""The Responses API's items and our messages, both ways (RSP-1), and the ids the Responses routes show.

Input items become Chat Completions messages: a `message` item is a message (its `input_text` /
`output_text` parts its text, `input_image` / `input_file` parts the image and file parts a post keeps,
API-15); `function_call` items are the `tool_calls` of one assistant message (consecutive calls, and an
assistant message just before them, make one message), with the item's `call_id` as the call's id; a
`function_call_output` item is the tool message answering that id. `reasoning` items are accepted and not
sent on (a Chat Completions model has no place for them); an `item_reference` names a stored item and is
resolved by the caller (`references`); a `compaction` item (RSP-10) is the summary it carries, a
system-side item.

Stored messages (their API-1 views) become output items: a user or assistant message is a `message`
item, each tool call of an answer a `function_call` item, a tool message a `function_call_output` item.

Ids are ours and stable, derived from where a message is stored (so they need no item of their own,
and a streamed answer's ids are known before it is stored): a response is `resp_<conversation id>_<seq>`
(the seq of its answer), a message item `msg_<conversation id>_<seq>`, a call
`fc_<conversation id>_<seq>_<index>`, a call's output `fco_<conversation id>_<seq>`. Another user's id
names nothing: every read is under the caller's own keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from chat_core.chat import compaction_items
from chat_core.errors import InvalidInput
from chat_core.store.keys import seq_in_message_id

RESPONSE_PREFIX: Final = "resp_"
_ULID: Final = r"[0-9A-HJKMNP-TV-Z]{26}"
_RESPONSE_RE: Final = re.compile(rf"^resp_({_ULID})_([1-9][0-9]{{0,11}})$")
_ITEM_RE: Final = re.compile(rf"^(msg|fc|fco)_({_ULID})_([1-9][0-9]{{0,11}})(?:_([0-9]{{1,3}}))?$")
#: The item types an input may carry.
INPUT_TYPES: Final = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "item_reference",
    "compaction",
)


def response_id(conversation_id: str, seq: int) -> str:
    """The id of the response whose answer is message `seq` of `conversation_id`."""
    return f"{RESPONSE_PREFIX}{conversation_id}_{seq}"


def parse_response_id(value: str) -> tuple[str, int] | None:
    """(conversation id, answer's seq) of a response id; None when it is not one of ours."""
    found = _RESPONSE_RE.fullmatch(value)
    return (found.group(1), int(found.group(2))) if found else None


def item_id(kind: str, conversation_id: str, seq: int, index: int | None = None) -> str:
    """The id of an item: "msg", "fc" (with the call's index) or "fco" of message `seq`."""
    return f"{kind}_{conversation_id}_{seq}" + (f"_{index}" if index is not None else "")


def parse_item_id(value: str) -> tuple[str, str, int] | None:
    """(kind "msg" | "fc" | "fco", conversation id, seq) of an item id; None when it is not ours."""
    found = _ITEM_RE.fullmatch(value)
    if not found or (found.group(1) == "fc") != (found.group(4) is not None):
        return None
    return found.group(1), found.group(2), int(found.group(3))


@dataclass
class InputMessages:
    """An input as Chat Completions messages: the system/developer text apart, the rest in order, and
    the item references it named (`references`, resolved by the caller). `ids[i]` are the ids the
    items that made `messages[i]` carried (a client resending our output items sends them back)."""

    system: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    ids: list[list[str]] = field(default_factory=list)

    def add(self, message: dict[str, Any], item: Mapping[str, Any]) -> None:
        self.messages.append(message)
        self.ids.append([item["id"]] if isinstance(item.get("id"), str) else [])


def _text_part(part: Mapping[str, Any], where: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise InvalidInput(f"{where}: a text part needs a string `text`", field=where)
    return text


def _user_part(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One part of a user message, as the Chat Completions part a post keeps (API-15)."""
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": _text_part(part, where)}
    if kind == "input_image":
        if part.get("file_id") or not isinstance(part.get("image_url"), str):
            raise InvalidInput(
                f"{where}: input_image takes `image_url` (an http(s) or data: URL); file ids are not "
                "stored here",
                field=where,
            )
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail") in ("auto", "low", "high"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        if part.get("file_id") or part.get("file_url") or not isinstance(part.get("file_data"), str):
            raise InvalidInput(
                f"{where}: input_file takes `file_data` (base64 or a data: URL); file ids and URLs are not "
                "fetched here",
                field=where,
            )
        file: dict[str, Any] = {"file_data": part["file_data"]}
        if isinstance(part.get("filename"), str):
            file["filename"] = part["filename"]
        return {"type": "file", "file": file}
    raise InvalidInput(f"{where}: content parts of type {kind!r} are not taken", field=where)


def _content(item: Mapping[str, Any], role: str, where: str) -> tuple[Any, str | None]:
    """A message item's content as a message's: (content, refusal)."""
    content = item.get("content")
    if isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        raise InvalidInput(f"{where}.content: a string or a list of parts", field=f"{where}.content")
    if role == "user":
        parts = [
            _user_part(p, f"{where}.content[{i}]") for i, p in enumerate(content) if isinstance(p, Mapping)
        ]
        if len(parts) != len(content):
            raise InvalidInput(f"{where}.content: each part is an object", field=f"{where}.content")
        if all(p["type"] == "text" for p in parts):
            return "\n".join(p["text"] for p in parts), None
        return parts, None
    texts: list[str] = []
    refusals: list[str] = []
    for index, part in enumerate(content):
        spot = f"{where}.content[{index}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("input_text", "output_text", "text"):
            texts.append(_text_part(part, spot))
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            refusals.append(part["refusal"])
        else:
            raise InvalidInput(f"{spot}: parts of type {kind!r} are taken on user messages only", field=spot)
    return ("\n".join(texts) if texts or not refusals else None), ("\n".join(refusals) or None)


def _output_text(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = [
            p.get("text")
            for p in output
            if isinstance(p, Mapping) and p.get("type") in ("input_text", "output_text")
        ]
        if len(texts) == len(output) and all(isinstance(t, str) for t in texts):
            return "\n".join(str(t) for t in texts)
    raise InvalidInput(f"{where}.output: a string or a list of text parts", field=f"{where}.output")


def input_messages(value: str | Sequence[Any]) -> InputMessages:
    """RSP-1: an `input` (a string, or items) as Chat Completions messages (see the module)."""
    found = InputMessages()
    if isinstance(value, str):
        found.add({"role": "user", "content": value}, {})
        return found
    for index, item in enumerate(value):
        where = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{where}: each item is an object", field=where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in INPUT_TYPES:
            raise InvalidInput(
                f"{where}: items of type {kind!r} are not taken (taken: {', '.join(INPUT_TYPES)})",
                field=where,
            )
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                text, _ = _content(item, "system", where)
                if text:
                    found.system.append(str(text))
                continue
            if role not in ("user", "assistant"):
                raise InvalidInput(
                    f"{where}.role: user, assistant, system or developer", field=f"{where}.role"
                )
            content, refusal = _content(item, str(role), where)
            message: dict[str, Any] = {"role": role, "content": content}
            if refusal is not None:
                message["refusal"] = refusal
            found.add(message, item)
        elif kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            arguments = item.get("arguments", "")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                raise InvalidInput(f"{where}: a function_call needs `call_id` and `name`", field=where)
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            last = found.messages[-1] if found.messages else None
            if last is not None and last["role"] == "assistant" and not last.get("refusal"):
                last.setdefault("tool_calls", []).append(call)
                if last.get("content") == "":
                    last["content"] = None
                if isinstance(item.get("id"), str):
                    found.ids[-1].append(item["id"])
            else:
                found.add({"role": "assistant", "content": None, "tool_calls": [call]}, item)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidInput(f"{where}: a function_call_output needs `call_id`", field=where)
            output = _output_text(item.get("output"), where)
            found.add({"role": "tool", "tool_call_id": call_id, "content": output}, item)
        elif kind == "compaction":
            # RSP-10: the summary it carries, expanded as a system-side item (it stands for what it folded).
            found.system.append(compaction_items.expand(item.get("encrypted_content"), where))
        elif kind == "item_reference":
            if not isinstance(item.get("id"), str):
                raise InvalidInput(f"{where}: an item_reference needs `id`", field=where)
            found.references.append(item["id"])
        # reasoning: accepted, not sent on (see the module)
    return found


# --- stored messages -> items -----------------------------------------------------------------------


def _status(view: Mapping[str, Any]) -> str:
    return "incomplete" if view.get("status") == "incomplete" else "completed"


def _input_parts(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts = view.get("content_parts")
    if not parts:
        return [{"type": "input_text", "text": view.get("content") or ""}]
    shown: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            shown.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url":
            image = part.get("image_url") or {}
            shown.append(
                {
                    "type": "input_image",
                    "image_url": image.get("url"),
                    "detail": image.get("detail") or "auto",
                }
            )
        elif kind == "file":
            file = part.get("file") or {}
            shown.append(
                {"type": "input_file", **{k: v for k, v in file.items() if k in ("file_data", "filename")}}
            )
        else:
            shown.append(dict(part))
    return shown


def message_items(view: Mapping[str, Any]) -> list[dict[str, Any]]:
    """RSP-1: the items of one stored message (its API-1 view), in order."""
    where = (str(view["conversation_id"]), seq_in_message_id(str(view["message_id"])) or 0)
    role = view.get("role")
    if role == "tool":
        return [
            {
                "type": "function_call_output",
                "id": item_id("fco", *where),
                "call_id": view.get("tool_call_id"),
                "output": view.get("content") or "",
                "status": "completed",
            }
        ]
    if role == "user":
        return [
            {
                "type": "message",
                "id": item_id("msg", *where),
                "role": "user",
                "status": "completed",
                "content": _input_parts(view),
            }
        ]
    items: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    if view.get("refusal"):
        content.append({"type": "refusal", "refusal": view["refusal"]})
    if view.get("content"):
        annotations = list(view.get("annotations") or [])
        content.append(
            {"type": "output_text", "text": view["content"], "annotations": annotations, "logprobs": []}
        )
    if content or not view.get("tool_calls"):
        if not content:
            content.append({"type": "output_text", "text": "", "annotations": [], "logprobs": []})
        items.append(
            {
                "type": "message",
                "id": item_id("msg", *where),
                "role": "assistant",
                "status": _status(view),
                "content": content,
            }
        )
    for index, call in enumerate(view.get("tool_calls") or []):
        function = call.get("function") or {}
        items.append(
            {
                "type": "function_call",
                "id": item_id("fc", *where, index),
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments") or "",
                "status": _status(view),
            }
        )
    return items


def items_of(views: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The items of stored messages, in order."""
    return [item for view in views for item in message_items(view)]


def pick_item(view: Mapping[str, Any], item_id: str) -> dict[str, Any] | None:
    """The item `item_id` of a stored message, or None when the message has no such item."""
    return next((item for item in message_items(view) if item["id"] == item_id), None)
