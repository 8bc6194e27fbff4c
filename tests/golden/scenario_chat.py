"""The golden scenario, chat half: conversations, messages and branches, the OpenAI-compatible routes,
usage and budgets (see test_golden_answers.py)."""

from __future__ import annotations

from tests.golden.recording import ADMIN_GROUP, ALICE, BOB, CAROL, Recorder
from tests.support.openai_standin import OpenAIStandin


def conversations(rec: Recorder) -> dict[str, str]:
    rec.family = "conversations"
    created = rec.call(
        "POST",
        "/conversations",
        "create with a title, a system prompt and defaults",
        json_body={"title": "Golden", "system_prompt": "Be brief.", "defaults": {"temperature": 0.5}},
    ).json()
    conversation_id = created["conversation_id"]
    rec.call("POST", "/conversations", "create with an empty body", json_body={})
    rec.call("POST", "/conversations", "400: a body that is not JSON", content=b"{not json")
    rec.call("POST", "/conversations", "422: an unknown field", json_body={"colour": "red"})
    rec.call("POST", "/conversations", "401: no identity", user=None, json_body={})
    rec.call("POST", "/conversations", "create with a key", json_body={"key": "golden-key", "title": "Keyed"})
    rec.call("POST", "/conversations", "409: the key is taken", json_body={"key": "golden-key"})
    rec.call("GET", "/conversations", "list (limit 2: a page and a cursor)", params={"limit": 2})
    rec.call("GET", "/conversations", "search by title", params={"q": "Gold"})
    rec.call("GET", "/conversations", "422: limit out of range", params={"limit": 0})
    rec.call("GET", "/conversations", "400: a cursor that is not one", params={"cursor": "nonsense"})
    rec.call("GET", "/conversations", "another user sees none", user=BOB)
    path = {"conversation_id": conversation_id}
    rec.call("GET", "/conversations/{conversation_id}", "detail", path=path)
    rec.call("GET", "/conversations/{conversation_id}", "404: another user's", path=path, user=BOB)
    rec.call(
        "GET",
        "/conversations/{conversation_id}",
        "404: no such conversation",
        path={"conversation_id": "nope"},
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}",
        "rename, change the defaults and the window policy",
        path=path,
        json_body={
            "title": "Golden 2",
            "defaults": {"temperature": 0.2},
            "window_policy": {"max_messages": 20},
        },
    )
    rec.call("PATCH", "/conversations/{conversation_id}", "400: not JSON", path=path, content=b"[")
    rec.call(
        "PATCH", "/conversations/{conversation_id}", "422: a bad field", path=path, json_body={"title": 3}
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"title": "Mine"},
    )
    key = {"key": "golden-by-key"}
    rec.call("GET", "/conversation-keys/{key}", "404: no conversation has the key yet", path=key)
    rec.call("PUT", "/conversation-keys/{key}", "create by key", path=key, json_body={"title": "By key"})
    rec.call(
        "PUT", "/conversation-keys/{key}", "the same key again: the same conversation", path=key, json_body={}
    )
    rec.call("PUT", "/conversation-keys/{key}", "400: not JSON", path=key, content=b"{")
    rec.call("GET", "/conversation-keys/{key}", "read by key", path=key)
    rec.call("GET", "/conversation-keys/{key}", "404: another user's key", path=key, user=BOB)
    doomed = rec.call("POST", "/conversations", "create one to delete", json_body={"title": "Doomed"}).json()
    gone = {"conversation_id": doomed["conversation_id"]}
    rec.call("DELETE", "/conversations/{conversation_id}", "404: another user's", path=gone, user=BOB)
    rec.call("DELETE", "/conversations/{conversation_id}", "delete", path=gone)
    rec.call("DELETE", "/conversations/{conversation_id}", "404: already deleted", path=gone)
    rec.call("GET", "/conversations/{conversation_id}", "404: deleted", path=gone)
    return {"conversation_id": conversation_id}


def messages(rec: Recorder, standin: OpenAIStandin) -> None:
    rec.family = "messages"
    first = rec.call(
        "POST", "/messages", "a post that starts a conversation", json_body={"content": "Hello there"}
    ).json()
    conversation_id = first["conversation_id"]
    path = {"conversation_id": conversation_id}
    second = rec.call(
        "POST",
        "/messages",
        "a post to it with an Idempotency-Key",
        json_body={"conversation_id": conversation_id, "content": "Second line", "temperature": 0.1},
        headers={"Idempotency-Key": "golden-post-1"},
    ).json()
    rec.call(
        "POST",
        "/messages",
        "the same key again: the first answer replayed",
        json_body={"conversation_id": conversation_id, "content": "Second line", "temperature": 0.1},
        headers={"Idempotency-Key": "golden-post-1"},
    )
    rec.call("POST", "/messages", "400: not JSON", content=b"{")
    rec.call("POST", "/messages", "422: content too long", json_body={"content": "x" * 5001})
    rec.call("POST", "/messages", "422: an unknown field", json_body={"content": "hi", "colour": 1})
    rec.call(
        "POST",
        "/messages",
        "422: tool_choice without tools",
        json_body={"content": "hi", "tool_choice": "auto"},
    )
    rec.call(
        "POST",
        "/messages",
        "404: another user's conversation",
        user=BOB,
        json_body={"conversation_id": conversation_id, "content": "hi"},
    )
    standin.set_mode("error500")
    try:
        rec.call(
            "POST",
            "/messages",
            "502: the model failed (both messages stored)",
            json_body={"conversation_id": conversation_id, "content": "Will fail"},
        )
    finally:
        standin.set_mode("ok")
    # The second post's user message and the answer to it: the branch points below
    user_id = second["user_message"]["message_id"]
    assistant_id = second["assistant_message"]["message_id"]
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages",
        "append a user, an assistant and a system message, no model call",
        path=path,
        json_body={
            "messages": [
                {"role": "user", "content": "Appended question"},
                {"role": "assistant", "content": "Appended answer", "model": "standin-model"},
                {"role": "system", "content": "Appended note"},
            ]
        },
        headers={"Idempotency-Key": "golden-append-1"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages",
        "422: a tool result that answers no call",
        path=path,
        json_body={"messages": [{"role": "tool", "tool_call_id": "call_x", "content": "42"}]},
    )
    rec.call("POST", "/conversations/{conversation_id}/messages", "400: not JSON", path=path, content=b"{")
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"messages": [{"role": "user", "content": "x"}]},
    )
    message = {"conversation_id": conversation_id, "message_id": assistant_id}
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}/messages/{message_id}",
        "pin",
        path=message,
        json_body={"pinned": True},
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}/messages/{message_id}",
        "422: pinned is not a boolean",
        path=message,
        json_body={"pinned": "yes"},
    )
    rec.call(
        "PATCH",
        "/conversations/{conversation_id}/messages/{message_id}",
        "404: another user's",
        path=message,
        user=BOB,
        json_body={"pinned": False},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/window",
        "the window the next post would use",
        path=path,
        json_body={"content": "What next?"},
    )
    rec.call("POST", "/conversations/{conversation_id}/window", "422: no content", path=path, json_body={})
    rec.call(
        "POST",
        "/conversations/{conversation_id}/window",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"content": "x"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/edit",
        "edit a user message: a new branch",
        path={"conversation_id": conversation_id, "message_id": user_id},
        json_body={"content": "Second line, edited"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/edit",
        "400: only a user message can be edited",
        path=message,
        json_body={"content": "no"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/edit",
        "404: another user's",
        path=message,
        user=BOB,
        json_body={"content": "no"},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "regenerate an answer",
        path=message,
        json_body={},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "400: only an answer can be regenerated",
        path={"conversation_id": conversation_id, "message_id": user_id},
        json_body={},
    )
    rec.call(
        "POST",
        "/conversations/{conversation_id}/messages/{message_id}/regenerate",
        "404: another user's",
        path=message,
        user=BOB,
        json_body={},
    )
    rec.call(
        "PUT",
        "/conversations/{conversation_id}/active",
        "switch back to the first branch",
        path=path,
        json_body={"message_id": assistant_id},
    )
    rec.call(
        "PUT",
        "/conversations/{conversation_id}/active",
        "404: no such message",
        path=path,
        json_body={"message_id": "nope"},
    )
    rec.call("PUT", "/conversations/{conversation_id}/active", "422: no message_id", path=path, json_body={})
    rec.call(
        "PUT",
        "/conversations/{conversation_id}/active",
        "404: another user's",
        path=path,
        user=BOB,
        json_body={"message_id": assistant_id},
    )
    rec.call("GET", "/conversations/{conversation_id}/tree", "every message of every branch", path=path)
    rec.call("GET", "/conversations/{conversation_id}/tree", "a page of 2", path=path, params={"limit": 2})
    rec.call("GET", "/conversations/{conversation_id}/tree", "404: another user's", path=path, user=BOB)
    rec.call("GET", "/conversations/{conversation_id}", "detail after the branches", path=path)
    rec.call("GET", "/conversations/{conversation_id}/events", "the turn log", path=path)
    rec.call("GET", "/conversations/{conversation_id}/events", "a page of 2", path=path, params={"limit": 2})
    rec.call("GET", "/conversations/{conversation_id}/events", "404: another user's", path=path, user=BOB)
    rec.call(
        "GET",
        "/conversations/{conversation_id}/events",
        "422: limit out of range",
        path=path,
        params={"limit": -1},
    )
    rec.call(
        "DELETE",
        "/conversations/{conversation_id}/messages/{message_id}",
        "404: another user's",
        path=message,
        user=BOB,
    )
    rec.call(
        "DELETE", "/conversations/{conversation_id}/messages/{message_id}", "delete a message", path=message
    )
    rec.call(
        "DELETE",
        "/conversations/{conversation_id}/messages/{message_id}",
        "404: no such message",
        path={"conversation_id": conversation_id, "message_id": "nope"},
    )


def openai(rec: Recorder, standin: OpenAIStandin) -> None:
    rec.family = "openai"
    rec.call("GET", "/v1/models", "the configured models")
    rec.call("GET", "/v1/models", "401: no identity", user=None)
    plain = rec.call(
        "POST",
        "/v1/chat/completions",
        "a completion that starts a conversation",
        json_body={"model": "standin-model", "messages": [{"role": "user", "content": "Say hi"}]},
    )
    conversation_id = plain.headers.get("x-conversation-id", "")
    rec.call(
        "POST",
        "/v1/chat/completions",
        "the whole history resent, named by the header",
        headers={"X-Conversation-Id": conversation_id},
        json_body={
            "model": "standin-model",
            "messages": [
                {"role": "user", "content": "Say hi"},
                {"role": "assistant", "content": plain.json()["choices"][0]["message"]["content"]},
                {"role": "user", "content": "Again"},
            ],
        },
    )
    rec.call(
        "POST",
        "/v1/chat/completions",
        "streamed, with usage last",
        json_body={
            "model": "standin-model",
            "conversation": conversation_id,
            "messages": [{"role": "user", "content": "Stream this please"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        stream=True,
    )
    standin.set_mode("stream_cut")
    try:
        rec.call(
            "POST",
            "/v1/chat/completions",
            "streamed, the model's stream breaks: the mid-stream error event",
            json_body={
                "model": "standin-model",
                "messages": [{"role": "user", "content": "Break in the middle of this"}],
                "stream": True,
            },
            stream=True,
        )
    finally:
        standin.set_mode("ok")
    rec.call("POST", "/v1/chat/completions", "400: not JSON", content=b"{")
    rec.call("POST", "/v1/chat/completions", "400: no messages", json_body={"model": "standin-model"})
    rec.call(
        "POST",
        "/v1/chat/completions",
        "404: another user's conversation",
        user=BOB,
        json_body={
            "model": "standin-model",
            "conversation": conversation_id,
            "messages": [{"role": "user", "content": "x"}],
        },
    )
    standin.set_mode("error500")
    try:
        rec.call(
            "POST",
            "/v1/chat/completions",
            "502: the model failed",
            json_body={"model": "standin-model", "messages": [{"role": "user", "content": "fail"}]},
        )
    finally:
        standin.set_mode("ok")


def usage(rec: Recorder) -> None:
    rec.family = "usage"
    rec.call("GET", "/usage", "the caller's usage this day and month", settled=True)
    rec.call("GET", "/usage", "422: a date that is not one", params={"from": "yesterday"})
    rec.call("GET", "/usage", "403: another user's, not an administrator", params={"user": BOB})
    rec.call(
        "GET",
        "/usage",
        "an administrator reads another user's",
        groups=ADMIN_GROUP,
        user=BOB,
        params={"user": ALICE},
    )
    budget = {"user_id": CAROL}
    rec.call(
        "PUT",
        "/budgets/{user_id}",
        "403: not an administrator",
        path=budget,
        json_body={"daily_tokens": 1},
    )
    rec.call(
        "PUT",
        "/budgets/{user_id}",
        "an administrator sets a tiny daily limit",
        path=budget,
        groups=ADMIN_GROUP,
        json_body={"daily_tokens": 1, "monthly_usd": None},
    )
    rec.call("PUT", "/budgets/{user_id}", "400: not JSON", path=budget, groups=ADMIN_GROUP, content=b"{")
    rec.call(
        "PUT",
        "/budgets/{user_id}",
        "422: a negative limit",
        path=budget,
        groups=ADMIN_GROUP,
        json_body={"daily_tokens": -1},
    )
    rec.call("POST", "/messages", "the limited user's first post", user=CAROL, json_body={"content": "One"})
    rec.call(
        "POST",
        "/messages",
        "429: over the daily limit",
        user=CAROL,
        json_body={"content": "Two"},
        settled=True,
    )
    rec.call(
        "POST",
        "/v1/chat/completions",
        "429: over the daily limit, OpenAI's shape",
        user=CAROL,
        json_body={"model": "standin-model", "messages": [{"role": "user", "content": "Three"}]},
    )
    rec.call("GET", "/usage", "the limited user's usage and budget", user=CAROL, settled=True)
