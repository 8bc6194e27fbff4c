"""TOK-5 across models: a stored message records the tokenizer its `tokens` were counted with, so a window
for the same model reuses the count and a window for another model recounts it (engine.tokens.stored)."""

from __future__ import annotations

import pytest
from chat_core.engine import tokens
from chat_core.store import conversations as store

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def test_a_posted_turn_stores_the_tokenizer_of_its_counts(standin_llm: OpenAIStandin) -> None:
    # Given a conversation with one turn
    answer = api.post("How many tokens is this?")
    assert answer.status == 201, answer.body
    conversation_id = answer.body["conversation_id"]
    model = answer.body["assistant_message"]["model"]
    # When its messages are read back from the table
    for message in (answer.body["user_message"], answer.body["assistant_message"]):
        item = store.find_message("alice", conversation_id, message["message_id"])
        assert item is not None
        # Then each says which tokenizer its stored count is, the one its model maps to
        assert item.tokens_encoding == tokens.encoding_for_model(model)
        assert item.tokens > 0
    # And the wire does not show it
    assert "tokens_encoding" not in answer.body["assistant_message"]
