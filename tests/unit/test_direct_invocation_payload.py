"""PERF-1 / AGT-1: the workers' direct-invocation payload `{"owner", "conversation_id"}` is checked by hand
(no pydantic at their cold start), with the same clear errors."""

from __future__ import annotations

from typing import Any

import pytest
from chat_core.errors import InvalidInput
from chat_core.http.direct import owner_and_conversation
from chat_core.store.keys import new_id


def _problems(event: Any) -> list[tuple[list[str], str]]:
    with pytest.raises(InvalidInput, match="owner") as caught:
        owner_and_conversation(event)
    return [(p["loc"], p["type"]) for p in caught.value.details["problems"]]


def test_a_well_formed_payload_names_its_conversation() -> None:
    # Given a payload with a valid owner and id / When it is parsed / Then both come back as given
    conversation_id = new_id()
    assert owner_and_conversation({"owner": "alice", "conversation_id": conversation_id}) == (
        "alice",
        conversation_id,
    )


def test_each_problem_of_a_malformed_payload_is_named() -> None:
    # Given payloads missing a field, with a number for a string, with an extra field, or not an object
    # Then each problem is listed with its field and kind
    assert _problems({"conversation_id": new_id()}) == [(["owner"], "missing")]
    assert _problems({"owner": "alice", "conversation_id": 7}) == [(["conversation_id"], "string_type")]
    assert _problems({"owner": "a", "conversation_id": new_id(), "x": 1}) == [(["x"], "extra_forbidden")]
    assert _problems(["owner"]) == [([], "dict_type")]


def test_a_blank_owner_or_an_invalid_id_is_refused() -> None:
    # Given a blank owner, then an id that is not one of ours / Then each is an input error naming its field
    with pytest.raises(InvalidInput, match="owner"):
        owner_and_conversation({"owner": " ", "conversation_id": new_id()})
    with pytest.raises(InvalidInput, match="conversation_id"):
        owner_and_conversation({"owner": "alice", "conversation_id": "../etc"})
