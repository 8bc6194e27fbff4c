"""API-11, API-12, TOK-8: the Chat Completions settings of a post and of a conversation's defaults reach the
model as given (the reply size lowered to the model's limit), tools let a real model call them, and the
window keeps room for the tools and the reply. The model is a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from chat_core.engine.tokens import count_tool_tokens

from tests.support import functions as api
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}


def _sent(standin: OpenAIStandin) -> dict[str, Any]:
    body: dict[str, Any] = standin.requests[-1].json
    return body


def test_every_per_turn_setting_reaches_the_model_verbatim(standin_llm: OpenAIStandin) -> None:
    """API-11: what a post sets is in the model's request, exactly as given, and nothing else is added."""
    settings: dict[str, Any] = {
        "tools": [WEATHER, TIME],
        "tool_choice": "none",
        "parallel_tool_calls": False,
        "temperature": 0.3,
        "top_p": 0.9,
        "max_completion_tokens": 300,
        "stop": ["END", "STOP"],
        "seed": 42,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
        },
        "reasoning_effort": "low",
        "user": "end-user-7",
        "metadata": {"team": "search", "run": "nightly"},
    }
    # When a user posts with every per-turn setting
    body = {"content": "What should I wear?", "model": "gpt-4o", **settings}
    answer = api.invoke("post_message", api.events.post_message(body))
    # Then the turn is stored and the model received each setting as given, besides model and messages
    assert answer.status == 201, answer.body
    sent = _sent(standin_llm)
    assert {key: sent[key] for key in settings} == settings
    assert set(sent) == {*settings, "model", "messages"}
    # And a post without settings sends none (they were this turn's, not the conversation's)
    again = api.post("And tomorrow?", answer.body["conversation_id"])
    assert again.status == 201, again.body
    assert set(_sent(standin_llm)) == {"model", "messages"}


def test_a_model_offered_tools_calls_them_and_the_agent_loop_completes(standin_llm: OpenAIStandin) -> None:
    """API-11: with `tools` on the post a real model can answer with tool_calls; without them it cannot."""
    # Given a post without tools: the model answers in text
    plain = api.post("Weather in Paris?")
    assert plain.body["assistant_message"]["content"]
    conversation_id = plain.body["conversation_id"]
    # When the user offers a tool
    asked = api.post("Weather in Paris?", conversation_id, tools=[WEATHER])
    # Then the model calls it, and the call waits for its result
    assert asked.status == 201, asked.body
    call = asked.body["assistant_message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert _sent(standin_llm)["tools"] == [WEATHER]
    assert api.detail(conversation_id).body["pending_tool_calls"][0]["id"] == call["id"]
    # And the result, posted with the same tools, gets the model's final answer
    result = {"role": "tool", "tool_call_id": call["id"], "content": '{"c": 18}'}
    final = api.invoke(
        "post_message",
        api.events.post_message(
            {"conversation_id": conversation_id, "messages": [result], "tools": [WEATHER]}
        ),
    )
    assert final.status == 201, final.body
    assert final.body["assistant_message"]["content"]
    assert _sent(standin_llm)["messages"][-1] == result
    # And a forced choice names the tool the model must call
    forced = api.post(
        "What time is it?", conversation_id, tools=[WEATHER, TIME], tool_choice=_named("get_time")
    )
    assert forced.body["assistant_message"]["tool_calls"][0]["function"]["name"] == "get_time"


def _named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def test_the_reply_size_is_lowered_to_the_models_limit(standin_llm: OpenAIStandin) -> None:
    """API-11, WIN-4: a reply size above what the model can produce is sent as the model's limit."""
    # When a post on gpt-4 (4,096 output tokens) asks for 100,000
    answer = api.post("Write a novel.", model="gpt-4", max_tokens=100_000)
    # Then the model is asked for 4,096, under the name the caller used
    assert answer.status == 201, answer.body
    sent = _sent(standin_llm)
    assert sent["max_tokens"] == 4096
    assert "max_completion_tokens" not in sent
    # And the window route says so before a post
    window = api.window(answer.body["conversation_id"], "next", max_completion_tokens=100_000)
    assert window.body["settings"] == {"max_completion_tokens": 4096}
    assert window.body["stats"]["reply_tokens"] == 4096
    assert window.body["stats"]["reply_tokens_clamped"] is True


def test_tools_and_the_reply_take_their_room_out_of_the_window(standin_llm: OpenAIStandin) -> None:
    """TOK-8, API-11: a window sent with tools keeps room for their tokens and for the reply size."""
    # Given a conversation on a model with an 8,192-token context (unknown models) and long messages
    created = api.create(model="tiny-model", window_policy={"max_messages": 50, "method": "exact"})
    conversation_id = created.body["conversation_id"]
    for n in range(4):
        assert api.post(f"Chapter {n}: " + "the river runs on " * 220, conversation_id).status == 201
    plain = api.window(conversation_id, "next").body["stats"]
    assert plain["dropped_count"] == 0
    # When the window carries a large tool and a 2,048-token reply
    field = {"type": "string", "description": "One field of the archived record, kept verbatim. " * 4}
    properties = {f"field_{n}": field for n in range(80)}
    big = {
        "type": "function",
        "function": {
            "name": "archive",
            "description": "Keeps the text.",
            "parameters": {"type": "object", "properties": properties},
        },
    }
    window = api.window(conversation_id, "next", tools=[big], max_tokens=2048).body
    # Then the tools are counted as the model bills them, and older history makes room for them
    stats = window["stats"]
    assert stats["tool_tokens"] == count_tool_tokens([big], "tiny-model") > 3000
    assert stats["dropped_count"] > 0
    assert {d["reason"] for d in stats["dropped"]} == {"token_budget"}
    assert stats["tokens_used"] + stats["tool_tokens"] <= 8192 - 2048
    assert window["settings"]["tools"] == [big]


def test_conversation_defaults_apply_to_every_post_and_a_post_overrides_them(
    standin_llm: OpenAIStandin,
) -> None:
    """API-12: defaults set at creation and by PATCH; a post's fields win key by key; null leaves one out."""
    # Given a conversation with default settings
    defaults = {"temperature": 0.2, "seed": 7, "tools": [WEATHER], "tool_choice": "none"}
    created = api.create(title="defaults", defaults=defaults)
    assert created.status == 201, created.body
    assert created.body["defaults"] == defaults
    conversation_id = created.body["conversation_id"]
    # When a post sets nothing, the defaults are sent
    assert api.post("hi", conversation_id).status == 201
    sent = _sent(standin_llm)
    assert {key: sent.get(key) for key in defaults} == defaults
    # When a post overrides one and clears another
    assert api.post("hi again", conversation_id, temperature=0.9, seed=None).status == 201
    sent = _sent(standin_llm)
    assert sent["temperature"] == 0.9
    assert "seed" not in sent
    assert sent["tools"] == [WEATHER]
    # When the defaults are replaced by PATCH, the next post sends the new ones only
    patched = api.update(conversation_id, defaults={"top_p": 0.5})
    assert patched.status == 200, patched.body
    assert patched.body["defaults"] == {"top_p": 0.5}
    assert api.post("third", conversation_id).status == 201
    assert {key for key in _sent(standin_llm) if key not in ("model", "messages")} == {"top_p"}
    # And PATCH with null removes them
    assert api.update(conversation_id, defaults=None).body["defaults"] is None
    assert api.post("fourth", conversation_id).status == 201
    assert set(_sent(standin_llm)) == {"model", "messages"}
    assert api.detail(conversation_id).body["defaults"] is None


def test_patch_changes_title_system_prompt_model_and_policy(standin_llm: OpenAIStandin) -> None:
    """API-12: PATCH changes what it names, counts a new system prompt once, and the next post uses it."""
    created = api.create(title="old", system_prompt="Be long-winded.", model="gpt-4o")
    conversation_id = created.body["conversation_id"]
    assert api.post("hi", conversation_id).status == 201
    # When the title, system prompt and model change
    patched = api.update(conversation_id, title="new", system_prompt="Be brief.", model="gpt-4o-mini")
    assert patched.status == 200, patched.body
    body = patched.body
    assert (body["title"], body["system_prompt"], body["model"]) == ("new", "Be brief.", "gpt-4o-mini")
    assert body["message_count"] == 2
    # Then the next post sends the new prompt to the new model
    assert api.post("again", conversation_id).status == 201
    sent = _sent(standin_llm)
    assert sent["model"] == "gpt-4o-mini"
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    # And clearing the system prompt and setting a policy take effect
    cleared = api.update(conversation_id, system_prompt=None, window_policy={"max_messages": 2})
    assert cleared.body["system_prompt"] is None
    assert cleared.body["window_policy"] == {"max_messages": 2, "method": "exact"}
    assert api.post("third", conversation_id).status == 201
    # (the cap counts the current message)
    assert [m["role"] for m in _sent(standin_llm)["messages"]] == ["assistant", "user"]
    # And the listing shows the new title first
    assert api.listing().body["items"][0]["title"] == "new"


@pytest.mark.parametrize(
    ("fields", "code", "named"),
    [
        ({"temprature": 0.2}, "validation_error", "temprature"),
        ({"temperature": 3}, "validation_error", "temperature"),
        ({"tool_choice": "auto"}, "invalid_settings", "tool_choice"),
        ({"parallel_tool_calls": True}, "invalid_settings", "parallel_tool_calls"),
        ({"tools": [WEATHER], "tool_choice": _named("get_time")}, "invalid_settings", "get_time"),
        ({"tools": [WEATHER, WEATHER]}, "invalid_settings", "get_weather"),
        ({"max_tokens": 10, "max_completion_tokens": 10}, "validation_error", "max_completion_tokens"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "validation_error", "stop"),
        ({"metadata": {"k": 1}}, "validation_error", "metadata"),
        ({"tools": [{**WEATHER, "function": {"name": "bad name"}}]}, "validation_error", "name"),
        ({"response_format": {"type": "json_schema"}}, "validation_error", "json_schema"),
    ],
)
def test_bad_settings_are_refused_naming_the_field_and_nothing_is_stored(
    standin_llm: OpenAIStandin, fields: dict[str, Any], code: str, named: str
) -> None:
    """API-11, API-5: unknown or inconsistent settings answer 422 naming them; nothing is written."""
    first = api.post("hi")
    conversation_id = first.body["conversation_id"]
    calls = len(standin_llm.requests)
    # When a post carries bad settings (on an existing conversation and on a new one)
    for answer in (api.post("again", conversation_id, **fields), api.post("new", **fields)):
        # Then it is refused with 422 naming the field, and the model is not called
        assert answer.status == 422, answer.body
        assert answer.error_code == code
        assert named in str(answer.body), answer.body
    assert len(standin_llm.requests) == calls
    assert api.detail(conversation_id).body["message_count"] == 2
    assert len(api.listing().body["items"]) == 1


def test_patch_refuses_bad_input_and_other_users(standin_llm: OpenAIStandin) -> None:
    """API-12, API-7: PATCH answers 404 across users, 422 for nothing to change or bad defaults."""
    conversation_id = api.create(title="mine").body["conversation_id"]
    assert api.update(conversation_id, user="mallory", title="x").status == 404
    assert api.update("no-such-conversation", title="x").status == 404
    assert api.update(conversation_id).status == 422
    assert api.update(conversation_id, model=None).status == 422
    refused = api.update(conversation_id, defaults={"tool_choice": "required"})
    assert (refused.status, refused.error_code) == (422, "invalid_settings")
    assert api.detail(conversation_id).body["title"] == "mine"
    api.delete(conversation_id)
    assert api.update(conversation_id, title="x").status == 404


def _materialised(value: Any) -> Any:
    """A value the SDK's TypeAdapter returned, its lazy iterables read (reading them validates them)."""
    if isinstance(value, dict):
        return {key: _materialised(item) for key, item in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    return [_materialised(item) for item in value]


def _request_schema_problems(body: dict[str, Any]) -> list[str]:
    """What in `body` the pinned `openai` SDK's Chat Completions request types do not accept."""
    from openai.types.chat import completion_create_params as params
    from openai.types.chat.chat_completion_message_param import ChatCompletionMessageParam
    from pydantic import TypeAdapter, ValidationError

    problems = []
    known = (
        params.CompletionCreateParamsBase.__required_keys__
        | params.CompletionCreateParamsBase.__optional_keys__
    )
    problems += [f"unknown request field {key!r}" for key in body if key not in known]
    by_role = {
        typing.get_args(typing.get_type_hints(typed)["role"])[0]: typed
        for typed in typing.get_args(ChatCompletionMessageParam)
    }
    for index, message in enumerate(body.get("messages", [])):
        typed = by_role[message["role"]]
        allowed = typed.__required_keys__ | typed.__optional_keys__
        problems += [f"messages[{index}] has unknown key {key!r}" for key in message if key not in allowed]
    try:
        _materialised(TypeAdapter(params.CompletionCreateParamsNonStreaming).validate_python(body))
    except ValidationError as exc:
        problems.append(str(exc))
    return problems


def test_every_request_the_model_receives_is_a_valid_chat_completions_request(
    standin_llm: OpenAIStandin,
) -> None:
    """API-11: the provider's request bodies validate against the Chat Completions request types of the
    pinned `openai` SDK (field names, message shapes, tool definitions, settings)."""
    created = api.create(system_prompt="Be brief.", defaults={"temperature": 0.5, "tools": [WEATHER]})
    conversation_id = created.body["conversation_id"]
    asked = api.post(
        "Weather in Oslo?", conversation_id, seed=3, stop="END", response_format={"type": "text"}
    )
    call = asked.body["assistant_message"]["tool_calls"][0]
    result = {"role": "tool", "tool_call_id": call["id"], "content": "12 C"}
    api.invoke(
        "post_message", api.events.post_message({"conversation_id": conversation_id, "messages": [result]})
    )
    api.post("Thanks", conversation_id, tool_choice="none", max_completion_tokens=50, reasoning_effort="low")
    bodies = [request.json for request in standin_llm.requests]
    assert len(bodies) == 3
    for body in bodies:
        assert _request_schema_problems(body) == []
    # And the check does find what is not a valid request
    assert _request_schema_problems({**bodies[0], "temprature": 1})
    assert _request_schema_problems({**bodies[0], "messages": [{"role": "user", "content": 5}]})
