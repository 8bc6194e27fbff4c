"""The offline model's answer to a fact extraction request (MEM-37): deterministic, from a few phrasings.

The extraction prompt (chat_core.chat.facts) starts its system message with FACTS_PROMPT_MARKER and
sends a JSON object: the owner's current facts and the new messages. The offline model reads the user's
sentences for "my name is X", "I live in X", "I work as X", "I prefer X", "I like X" and "I no longer
like X" and answers operations as a real model would: a new fact, an update of the current fact about
the same thing (a contradiction supersedes), or a delete. Enough to drive the pipeline in tests and over
the local server without a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

FACTS_PROMPT_MARKER: Final = "[fact extraction]"

#: (pattern, fact text template, kind, subject prefix: a current fact starting with it is the same thing)
_RULES: Final = (
    (re.compile(r"\bmy name is ([^,;]+)", re.I), "The user's name is {}", "fact", "The user's name is "),
    (re.compile(r"\bi live in ([^,;]+)", re.I), "The user lives in {}", "fact", "The user lives in "),
    (
        re.compile(r"\bi work as (?:an? )?([^,;]+)", re.I),
        "The user works as {}",
        "fact",
        "The user works as ",
    ),
    (re.compile(r"\bi prefer ([^,;]+)", re.I), "The user prefers {}", "preference", "The user prefers "),
    (re.compile(r"\bi (?:like|love) ([^,;]+)", re.I), "The user likes {}", "preference", None),
)
_UNLIKE: Final = re.compile(r"\bi (?:no longer|don't|do not) like ([^,;]+)", re.I)


def is_extraction(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a request is the fact extraction prompt."""
    first = messages[0] if messages else {}
    content = first.get("content")
    return (
        first.get("role") == "system" and isinstance(content, str) and content.startswith(FACTS_PROMPT_MARKER)
    )


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"[.!?\n]+", text) if s.strip()]


def answer(messages: Sequence[Mapping[str, Any]]) -> str:
    """The operations (JSON) for the extraction request `messages`."""
    try:
        request = json.loads(str(messages[-1].get("content") or ""))
    except ValueError:
        return json.dumps({"operations": []})
    current = {
        str(f["id"]): str(f["text"])
        for f in request.get("current_facts", [])
        if isinstance(f, Mapping) and "id" in f and "text" in f
    }
    operations: list[dict[str, Any]] = []
    touched: set[str] = set()
    texts = {t.lower() for t in current.values()}
    for message in request.get("messages", []):
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        source = str(message.get("id"))
        for sentence in _sentences(str(message.get("text") or "")):
            unliked = _UNLIKE.search(sentence)
            if unliked:
                gone = f"The user likes {unliked.group(1).strip()}".lower()
                for fact_id, text in current.items():
                    if text.lower() == gone and fact_id not in touched:
                        touched.add(fact_id)
                        operations.append({"op": "delete", "id": fact_id, "sources": [source]})
                continue
            for pattern, template, kind, subject in _RULES:
                found = pattern.search(sentence)
                if not found:
                    continue
                text = template.format(found.group(1).strip()[:120])
                if text.lower() in texts:
                    continue
                same = [
                    i for i, t in current.items() if subject and t.startswith(subject) and i not in touched
                ]
                if same:
                    touched.add(same[0])
                    operations.append(
                        {"op": "update", "id": same[0], "text": text, "kind": kind, "sources": [source]}
                    )
                else:
                    operations.append({"op": "add", "text": text, "kind": kind, "sources": [source]})
                texts.add(text.lower())
    return json.dumps({"operations": operations})
