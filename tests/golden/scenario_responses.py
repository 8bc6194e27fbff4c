"""The golden scenario of the Responses and Conversations routes (RSP-2, RSP-3, RSP-5, RSP-6): a
success and the typical errors of each, recorded like every other family (test_golden_answers.py)."""

from __future__ import annotations

from tests.golden.recording import BOB, Recorder


def responses(rec: Recorder) -> None:
    rec.family = "responses"
    made = rec.call(
        "POST",
        "/v1/responses",
        "a response that starts a conversation",
        json_body={"model": "standin-model", "input": "Say hi", "instructions": "Be brief."},
    )
    first = made.json()["id"]
    conversation_id = made.json()["conversation"]["id"]
    rec.call(
        "POST",
        "/v1/responses",
        "a response that continues it",
        json_body={"model": "standin-model", "input": "Again", "previous_response_id": first},
    )
    rec.call(
        "POST",
        "/v1/responses",
        "streamed: the Responses events",
        json_body={
            "model": "standin-model",
            "input": "Stream this",
            "conversation": conversation_id,
            "stream": True,
        },
        stream=True,
    )
    rec.call(
        "POST", "/v1/responses", "400: an unsupported parameter", json_body={"input": "x", "background": True}
    )
    rec.call(
        "POST",
        "/v1/responses",
        "400: previous_response_id and conversation",
        json_body={"input": "x", "previous_response_id": first, "conversation": conversation_id},
    )
    rec.call(
        "POST",
        "/v1/responses",
        "404: another user's response",
        user=BOB,
        json_body={"input": "x", "previous_response_id": first},
    )
    rec.call("GET", "/v1/responses/{response_id}", "a stored response", path={"response_id": first})
    rec.call(
        "GET", "/v1/responses/{response_id}", "404: another user's", user=BOB, path={"response_id": first}
    )
    rec.call(
        "GET",
        "/v1/responses/{response_id}/input_items",
        "its input items",
        path={"response_id": first},
        params={"order": "asc"},
    )
    rec.call(
        "POST",
        "/v1/responses/input_tokens",
        "the input counted with its context",
        json_body={"model": "standin-model", "input": "How long?", "previous_response_id": first},
    )
    rec.call(
        "POST",
        "/v1/responses/compact",
        "the conversation compacted up to a response (RSP-10)",
        json_body={"model": "standin-model", "previous_response_id": first},
    )
    rec.call("POST", "/v1/responses/compact", "400: no model", json_body={"input": "x"})
    rec.call("DELETE", "/v1/responses/{response_id}", "deleted", path={"response_id": first})
    rec.call("DELETE", "/v1/responses/{response_id}", "404: deleted already", path={"response_id": first})
    conversations(rec)


def conversations(rec: Recorder) -> None:
    made = rec.call(
        "POST",
        "/v1/conversations",
        "a conversation with an item and metadata",
        json_body={
            "items": [{"type": "message", "role": "user", "content": "Hello"}],
            "metadata": {"k": "v"},
        },
    )
    conversation_id = made.json()["id"]
    where = {"conversation_id": conversation_id}
    rec.call(
        "POST",
        "/v1/conversations",
        "400: 17 metadata keys",
        json_body={"metadata": {str(i): "v" for i in range(17)}},
    )
    rec.call("GET", "/v1/conversations/{conversation_id}", "the conversation", path=where)
    rec.call("GET", "/v1/conversations/{conversation_id}", "404: another user's", user=BOB, path=where)
    rec.call(
        "POST",
        "/v1/conversations/{conversation_id}",
        "new metadata",
        path=where,
        json_body={"metadata": {"k": "w"}},
    )
    added = rec.call(
        "POST",
        "/v1/conversations/{conversation_id}/items",
        "items added",
        path=where,
        json_body={
            "items": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}
            ]
        },
    )
    item_id = added.json()["data"][0]["id"]
    rec.call(
        "GET", "/v1/conversations/{conversation_id}/items", "its items", path=where, params={"limit": 10}
    )
    item = {**where, "item_id": item_id}
    rec.call("GET", "/v1/conversations/{conversation_id}/items/{item_id}", "one item", path=item)
    rec.call("DELETE", "/v1/conversations/{conversation_id}/items/{item_id}", "an item deleted", path=item)
    rec.call("GET", "/v1/conversations/{conversation_id}/items/{item_id}", "404: a deleted item", path=item)
    rec.call("DELETE", "/v1/conversations/{conversation_id}", "deleted", path=where)
    rec.call("GET", "/v1/conversations/{conversation_id}", "404: deleted", path=where)
