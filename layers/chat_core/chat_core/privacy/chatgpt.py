"""PRV-3: ChatGPT's `conversations.json` as our conversations: its `mapping` tree as branches.

Each ChatGPT conversation is a tree of nodes (`mapping`: id -> {parent, children, message}); the path from
the root to `current_node` is what ChatGPT shows. Every node with a message worth keeping becomes one of
our messages, numbered in depth-first order (the first child of a node follows it, later children — an
edited question, a regenerated answer — are branches: `parent_seq` and a branch link), and the active
path ends at `current_node`. What is skipped, and how tool use maps, is in docs/user-data.md:

- a node without a message (the root), a message ChatGPT hides (`is_visually_hidden_from_conversation`),
  memory context (`model_editable_context`) and a message with no text: skipped, their children
  attached to the nearest kept ancestor;
- an assistant message addressed to a tool (`recipient` not "all") whose child is a tool message: an
  assistant message with one tool call (name: the recipient, arguments: its text), and that child the
  tool result (`tool_call_id` the call's); a tool message with no call before it, or an addressed
  message with no tool answer, becomes a plain assistant message (so no call or result is orphaned);
- images (`image_asset_pointer` parts): the export holds no image bytes, so a text placeholder naming
  the asset and its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError, model_validator

from chat_core.privacy.import_files import Planned, invalid, tokens_of
from chat_core.store.keys import derived_id, link_sk, message_sk

_Open = ConfigDict(extra="allow")
_SKIPPED_TYPES: Final = frozenset({"model_editable_context"})
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")


class Author(BaseModel):
    model_config = _Open
    role: Literal["system", "user", "assistant", "tool"]
    name: str | None = None


class Content(BaseModel):
    model_config = _Open
    content_type: str
    parts: list[Any] | None = None
    text: str | None = None


class GptMessage(BaseModel):
    model_config = _Open
    author: Author
    create_time: float | None = None
    content: Content
    metadata: dict[str, Any] = {}
    recipient: str | None = "all"


class Node(BaseModel):
    model_config = _Open
    id: str | None = None
    parent: str | None = None
    children: list[str] = []
    message: GptMessage | None = None


class GptConversation(BaseModel):
    model_config = _Open
    title: str | None = None
    create_time: float | None = None
    update_time: float | None = None
    mapping: dict[str, Node]
    current_node: str | None = None

    @model_validator(mode="after")
    def _tree(self) -> GptConversation:
        mapping = self.mapping
        if not mapping:
            raise ValueError("mapping is empty")
        for key, node in mapping.items():
            if node.parent is not None and node.parent not in mapping:
                raise ValueError(f"mapping/{key}/parent names {node.parent!r}, which is not in the mapping")
            for child in node.children:
                if child not in mapping:
                    raise ValueError(f"mapping/{key}/children names {child!r}, which is not in the mapping")
        for key in mapping:
            seen = {key}
            parent = mapping[key].parent
            while parent is not None:
                if parent in seen:
                    raise ValueError(
                        f"mapping/{key}: following its parents comes back to {parent!r} (a cycle)"
                    )
                seen.add(parent)
                parent = mapping[parent].parent
        if self.current_node is not None and self.current_node not in mapping:
            raise ValueError(f"current_node {self.current_node!r} is not in the mapping")
        return self


class GptExport(RootModel[list[GptConversation]]):
    pass


def plan(parsed: Any, seed: str, default_model: str) -> list[Planned]:
    """Every conversation of a ChatGPT export. `seed` (the job) makes the message ids the same on every
    run of the job; `default_model` names the model of a conversation whose messages name none."""
    try:
        export = GptExport.model_validate(parsed)
    except ValidationError as exc:
        raise invalid(exc) from exc
    return [_conversation(n, c, f"{seed}|{n}", default_model) for n, c in enumerate(export.root)]


def _iso(seconds: float | None, fallback: str) -> str:
    if seconds is None:
        return fallback
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    kind = part.get("content_type")
    if kind == "image_asset_pointer":
        size = f", {part.get('width')}x{part.get('height')}" if part.get("width") else ""
        return f"[image {part.get('asset_pointer', '')}{size}: not in ChatGPT's export]"
    if isinstance(part.get("text"), str):
        return str(part["text"])
    return f"[{kind or 'attachment'}: not in ChatGPT's export]"


def _text(message: GptMessage) -> str:
    content = message.content
    extra = content.model_extra or {}
    if content.content_type == "user_editable_context":
        return "\n".join(str(extra[k]) for k in ("user_profile", "user_instructions") if extra.get(k))
    if content.parts is not None:
        return "\n".join(t for t in (_part_text(p) for p in content.parts) if t)
    if content.content_type == "tether_quote":
        source = " ".join(str(extra[k]) for k in ("title", "url") if extra.get(k))
        return "\n".join(t for t in (content.text, source and f"({source})") if t)
    if content.text is not None:
        return content.text
    if content.content_type == "thoughts":
        thoughts = extra.get("thoughts") or []
        return "\n".join(str(t.get("content", "")) for t in thoughts if isinstance(t, Mapping))
    for name in ("result", "content"):
        if isinstance(extra.get(name), str):
            return str(extra[name])
    return ""


def _kept(node: Node) -> bool:
    message = node.message
    if message is None or message.metadata.get("is_visually_hidden_from_conversation"):
        return False
    if message.content.content_type in _SKIPPED_TYPES:
        return False
    addressed = message.author.role == "assistant" and message.recipient not in (None, "all")
    return bool(_text(message).strip()) or addressed


def _conversation(number: int, conversation: GptConversation, seed: str, default_model: str) -> Planned:
    mapping = conversation.mapping
    created = _iso(conversation.create_time, "1970-01-01T00:00:00.000000Z")
    order = {key: n for n, key in enumerate(mapping)}

    def children(key: str | None) -> list[str]:
        listed = mapping[key].children if key is not None else []
        found = [k for k, n in mapping.items() if n.parent == key]
        return sorted(found, key=lambda k: (listed.index(k) if k in listed else len(listed), order[k]))

    # Depth first from the roots; each kept node remembers the nearest kept ancestor.
    kept: list[tuple[str, str | None]] = []
    stack: list[tuple[str, str | None]] = [(k, None) for k in reversed(children(None))]
    while stack:
        key, above = stack.pop()
        here = key if _kept(mapping[key]) else above
        if here == key:
            kept.append((key, above))
        stack += [(child, here) for child in reversed(children(key))]
    seq_of = {key: n for n, (key, _) in enumerate(kept, start=1)}
    kept_children: dict[str | None, list[str]] = {}
    for key, above in kept:
        kept_children.setdefault(above, []).append(key)

    said = {key: m for key, _ in kept if (m := mapping[key].message) is not None}

    def is_call(key: str) -> bool:
        message = said[key]
        addressed = message.author.role == "assistant" and message.recipient not in (None, "all")
        return addressed and any(said[k].author.role == "tool" for k in kept_children.get(key, []))

    items: list[tuple[str, str, dict[str, Any]]] = []
    model = default_model
    leaf = _leaf(conversation, seq_of)
    on_path = _path(leaf, kept, seq_of)
    branched = False
    pending: list[dict[str, Any]] = []
    for key, above in kept:
        message = said[key]
        seq = seq_of[key]
        parent = seq_of[above] if above is not None else 0
        text = _text(message)
        attributes: dict[str, Any] = {
            "message_id": derived_id(
                int((message.create_time or conversation.create_time or 0) * 1000), f"{seed}|{key}", seq
            ),
            "seq": seq,
            "role": message.author.role,
            "content": text,
            "status": "ok",
            "created_at": _iso(message.create_time, created),
        }
        source: dict[str, Any] = {"node_id": key, "content_type": message.content.content_type}
        slug = message.metadata.get("model_slug")
        if message.author.role == "assistant" and isinstance(slug, str) and slug:
            attributes["model"] = slug
            if seq in on_path:
                model = slug
        if message.recipient not in (None, "all"):
            source["recipient"] = message.recipient
        if message.author.name:
            source["author_name"] = message.author.name
        if message.author.role == "assistant" and is_call(key):
            name = _TOOL_NAME.sub("_", str(message.recipient))[:64]
            function = {"name": name, "arguments": text}
            call = {"id": f"call_{_TOOL_NAME.sub('_', key)[:40]}", "type": "function", "function": function}
            attributes |= {"content": None, "tool_calls": [call]}
        elif message.author.role == "tool":
            if above is not None and is_call(above):
                attributes["tool_call_id"] = f"call_{_TOOL_NAME.sub('_', above)[:40]}"
                attributes["name"] = _TOOL_NAME.sub("_", message.author.name or "tool")[:64]
            else:
                attributes["role"] = "assistant"
                attributes["content"] = f"[{message.author.name or 'tool'} output]\n{text}"
        if parent != seq - 1:
            branched = True
            attributes["parent_seq"] = parent
            items.append((link_sk(parent, seq), "branch_link", {"parent_seq": parent, "child_seq": seq}))
        attributes["metadata"] = {"chatgpt": source}
        pending.append(attributes)
    for attributes in pending:
        attributes["tokens"], attributes["tokens_encoding"] = tokens_of(attributes, model)
        for name in ("tool_calls", "metadata"):
            if name in attributes:
                attributes[name] = json.dumps(attributes[name], ensure_ascii=False, separators=(",", ":"))
        items.append((message_sk(attributes["seq"]), "message", attributes))
    count = len(kept)
    item: dict[str, Any] = {
        "title": conversation.title or None,
        "model": model,
        "created_at": created,
        "updated_at": _iso(conversation.update_time, created),
        "next_seq": count + 1,
        "message_count": count,
    }
    if branched or (leaf and leaf != count):
        item["active_leaf"] = leaf
    return Planned(f"/{number}", item, items, count)


def _leaf(conversation: GptConversation, seq_of: Mapping[str, int]) -> int:
    """The seq the active path ends at: `current_node`, or its nearest kept ancestor."""
    key = conversation.current_node
    while key is not None and key not in seq_of:
        key = conversation.mapping[key].parent
    return seq_of[key] if key is not None else len(seq_of)


def _path(leaf: int, kept: list[tuple[str, str | None]], seq_of: Mapping[str, int]) -> set[int]:
    above = {seq_of[k]: (seq_of[a] if a is not None else 0) for k, a in kept}
    path, seq = set(), leaf
    while seq:
        path.add(seq)
        seq = above[seq]
    return path
