"""The payload of a worker invoked directly rather than by its event source: `{"owner", "conversation_id"}`
(the summarizer brings one conversation's summary up to date, the purge finishes one expired
conversation). Checked by hand: the workers' usual events are stream batches, and pydantic would be a
fifth of their cold start for this one rare payload (PERF-1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chat_core.errors import InvalidInput
from chat_core.store.keys import is_valid_id, is_valid_owner

FIELDS = ("owner", "conversation_id")
EXPECTED = 'expected {"owner": "...", "conversation_id": "..."} or a DynamoDB stream event'


def owner_and_conversation(event: Any) -> tuple[str, str]:
    """The (owner, conversation_id) of a direct invocation; InvalidInput naming each problem otherwise."""
    if not isinstance(event, Mapping):
        raise InvalidInput(EXPECTED, problems=[{"loc": [], "msg": "not a JSON object", "type": "dict_type"}])
    problems: list[dict[str, Any]] = [
        {"loc": [name], "msg": "Field required", "type": "missing"} for name in FIELDS if name not in event
    ]
    problems += [
        {"loc": [name], "msg": "Input should be a valid string", "type": "string_type"}
        for name in FIELDS
        if name in event and not isinstance(event[name], str)
    ]
    problems += [
        {"loc": [str(name)], "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}
        for name in event
        if name not in FIELDS
    ]
    if problems:
        raise InvalidInput(EXPECTED, problems=problems)
    owner, conversation_id = event["owner"], event["conversation_id"]
    if not is_valid_owner(owner):
        raise InvalidInput("owner must be a non-blank identity without control characters", field="owner")
    if not is_valid_id(conversation_id):
        raise InvalidInput("conversation_id is not a valid id", field="conversation_id")
    return owner, conversation_id
