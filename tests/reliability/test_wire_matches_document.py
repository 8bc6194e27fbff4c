"""API-9: the OpenAPI document and the wire agree. Every route is called on the local server (real HTTP,
stand-in model) in the situations a user meets (success, replay, tool calls, model failure, each refusal)
and every answer is checked against `/openapi.json`: its status is documented for that operation, and its
JSON body validates against the documented schema with no field the document does not name."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.reliability

PROVIDER_RESPONSES = Path(__file__).resolve().parents[1] / "data" / "provider_responses"


def _resolve(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def undocumented_fields(
    value: Any, schema: Mapping[str, Any], components: Mapping[str, Any], where: str = "$"
) -> list[str]:
    """Where `value` carries a field that no documented object schema names (the models accept unknown
    fields so clients stay forward compatible; the document must still name every field we send)."""
    schema = _resolve(schema, components)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        found = [undocumented_fields(value, option, components, where) for option in options]
        return min(found, key=len)
    if isinstance(value, dict) and "properties" in schema:
        problems = [f"{where}.{key}" for key in value if key not in schema["properties"]]
        for key, item in value.items():
            if key in schema["properties"]:
                problems += undocumented_fields(item, schema["properties"][key], components, f"{where}.{key}")
        return problems
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        problems = []
        for index, item in enumerate(value):
            problems += undocumented_fields(item, schema["items"], components, f"{where}[{index}]")
        return problems
    return []


class WireChecker:
    """Checks each answer against the document; collects what it saw so the test can show coverage."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document
        self.components = document.get("components", {}).get("schemas", {})
        self.routes = [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), path) for path in document["paths"]
        ]
        self.seen: set[tuple[str, str, int]] = set()

    def operation(self, method: str, url_path: str) -> tuple[str, Mapping[str, Any]]:
        matches = [template for pattern, template in self.routes if pattern.match(url_path)]
        # The most specific template: the one with the fewest parameters.
        matches.sort(key=lambda template: template.count("{"))
        for template in matches:
            operation = self.document["paths"][template].get(method.lower())
            if operation is not None:
                return template, operation
        raise AssertionError(f"{method} {url_path} is not in the document")

    def check(self, response: httpx.Response) -> None:
        request = response.request
        template, operation = self.operation(request.method, request.url.path)
        status = response.status_code
        responses = operation["responses"]
        documented = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX")
        assert documented is not None, (
            f"{request.method} {template} answered {status}, which its document does not list "
            f"({sorted(responses)}): {response.text[:300]}"
        )
        self.seen.add((request.method, template, status))
        content = documented.get("content") or {}
        if status == 204 or not response.content:
            assert not content or status != 204, f"{request.method} {template} {status} documents a body"
            return
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        assert media_type in content, (
            f"{request.method} {template} {status} sent {media_type}; the document says {sorted(content)}"
        )
        if media_type != "application/json":
            return
        schema = content[media_type]["schema"]
        body = response.json()
        validator = jsonschema.Draft202012Validator(
            {**schema, "components": {"schemas": self.components}}
            if "$ref" not in schema
            else {"$ref": schema["$ref"], "components": {"schemas": self.components}}
        )
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]
        assert not errors, f"{request.method} {template} {status} breaks its schema: {errors[:5]}\n{body}"
        extra = undocumented_fields(body, schema, self.components)
        assert not extra, f"{request.method} {template} {status} sends undocumented fields: {extra}\n{body}"
        for name in documented.get("headers", {}):
            if documented["headers"][name].get("required"):
                assert name in response.headers, f"{request.method} {template} {status} lacks {name}"


@pytest.fixture
def wire(rel_server: ServerProcess) -> Iterator[tuple[httpx.Client, WireChecker]]:
    document = httpx.get(f"{rel_server.url}/openapi.json", timeout=30).json()
    checker = WireChecker(document)
    client = httpx.Client(
        base_url=rel_server.url,
        headers={"X-User-Id": f"wire-{uuid.uuid4().hex[:8]}"},
        timeout=60.0,
        event_hooks={"response": [lambda r: r.read(), checker.check]},
    )
    with client:
        yield client, checker


def test_every_answer_of_every_route_is_documented(
    wire: tuple[httpx.Client, WireChecker], rel_model: OpenAIStandin
) -> None:
    client, checker = wire
    # Conversations: create, a turn, a turn that asks for a tool, its result, pin, reads, window, events.
    created = client.post("/conversations", json={"title": "wire", "system_prompt": "Be brief."})
    assert created.status_code == 201
    conversation_id = created.json()["conversation_id"]
    first = client.post(
        "/messages",
        json={"conversation_id": conversation_id, "content": "hello"},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert first.status_code == 201
    rel_model.configure(mode="tool_call")
    asked = client.post("/messages", json={"conversation_id": conversation_id, "content": "weather?"})
    assert asked.status_code == 201
    assert asked.json()["assistant_message"]["tool_calls"]
    call = asked.json()["assistant_message"]["tool_calls"][0]
    waiting = client.get(f"/conversations/{conversation_id}")
    assert waiting.json()["pending_tool_calls"]
    rel_model.configure(mode="ok")
    answered = client.post(
        "/messages",
        json={
            "conversation_id": conversation_id,
            "messages": [{"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"c": 21})}],
        },
    )
    assert answered.status_code == 201
    assert answered.json()["messages"]
    # Settings and tools on a post and as the conversation's defaults (API-11, API-12).
    tool = {
        "type": "function",
        "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
    }
    patched = client.patch(
        f"/conversations/{conversation_id}", json={"title": "wire 2", "defaults": {"temperature": 0.1}}
    )
    assert patched.status_code == 200
    assert patched.json()["defaults"] == {"temperature": 0.1}
    assert client.patch(f"/conversations/{conversation_id}", json={}).status_code == 422
    assert client.patch(f"/conversations/{uuid.uuid4()}", json={"title": "x"}).status_code == 404
    windowed = client.post(
        f"/conversations/{conversation_id}/window",
        json={"content": "next", "tools": [tool], "max_tokens": 50},
    )
    assert windowed.status_code == 200
    assert windowed.json()["settings"]["tools"] == [tool]
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    with_parts = client.post(
        "/messages",
        json={"conversation_id": conversation_id, "content": [{"type": "text", "text": "this?"}, image]},
    )
    assert with_parts.status_code == 201
    assert with_parts.json()["user_message"]["content_parts"][1] == image
    # A large image kept in the blob bucket is shown by reference (API-17), here and in the detail.
    large = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "iVBORw0K" * 4096}}
    with_blob = client.post("/messages", json={"conversation_id": conversation_id, "content": [large]})
    assert with_blob.status_code == 201
    assert with_blob.json()["user_message"]["content_parts"][0]["blob"]["url"]
    refused = client.post(
        "/messages", json={"conversation_id": conversation_id, "content": "x", "tool_choice": "auto"}
    )
    assert refused.status_code == 422
    message_id = first.json()["user_message"]["message_id"]
    pinned = client.patch(f"/conversations/{conversation_id}/messages/{message_id}", json={"pinned": True})
    assert pinned.status_code == 200
    assert pinned.json()["pinned"] is True
    assert client.get("/conversations", params={"limit": 1}).status_code == 200
    assert client.get(f"/conversations/{conversation_id}", params={"limit": 2}).status_code == 200
    assert (
        client.post(f"/conversations/{conversation_id}/window", json={"content": "next"}).status_code == 200
    )
    assert client.get(f"/conversations/{conversation_id}/events", params={"limit": 3}).status_code == 200
    # The model refuses, then answers with citations, audio and a legacy function_call (API-10).
    for name in ("refusal", "annotations_audio_function_call", "length_null_content"):
        canned = json.loads((PROVIDER_RESPONSES / f"{name}.json").read_text(encoding="utf-8"))
        rel_model.configure(mode="canned", canned=canned)
        answer = client.post("/messages", json={"conversation_id": conversation_id, "content": name})
        assert answer.status_code == 201
    rel_model.configure(mode="ok")
    assert client.get(f"/conversations/{conversation_id}", params={"limit": 3}).status_code == 200
    # The model fails: 502 with the turn stored as an error.
    rel_model.configure(mode="error500")
    failed = client.post("/messages", json={"conversation_id": conversation_id, "content": "again"})
    assert failed.status_code == 502
    assert failed.json()["assistant_message"]["error"]
    rel_model.configure(mode="ok")
    # Refusals: no identity, malformed JSON, wrong media type, unknown field, too long, unknown id, too big.
    assert client.get("/conversations", headers={"X-User-Id": ""}).status_code == 401
    bad_json = client.post("/messages", content=b"{", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400
    assert client.post("/messages", content=b"hi", headers={"content-type": "text/plain"}).status_code == 415
    assert client.post("/conversations", json={"titel": "typo"}).status_code == 422
    assert client.post("/messages", json={"content": "x" * 5001}).status_code == 422
    assert client.get(f"/conversations/{uuid.uuid4()}").status_code == 404
    assert client.post("/messages", json={"content": "x" * 6_400_000}).status_code == 413
    assert client.get("/conversations", params={"cursor": "not-a-cursor"}).status_code == 400
    # Dialogue memory: entries (new, then a replay), history, prompt, export, import (new and not empty).
    world = f"w-{uuid.uuid4().hex[:8]}"
    entry = {"participant_id": "ann", "role": "character", "content": "hi", "game_tick": 10, "entry_id": "e1"}
    body = {"participants": ["ann", "bob"], "entry": entry}
    assert client.post(f"/worlds/{world}/dialogues/entries", json=body).status_code == 201
    assert client.post(f"/worlds/{world}/dialogues/entries", json=body).status_code == 200
    assert client.get(f"/worlds/{world}/history", params={"participants": "ann,bob"}).status_code == 200
    prompt = client.post(
        f"/worlds/{world}/prompt",
        json={"participants": ["ann", "bob"], "system_prompt": "You are Bob.", "ai_participant": "bob"},
    )
    assert prompt.status_code == 200
    exported = client.get(f"/worlds/{world}/export")
    assert exported.status_code == 200
    copy_world = f"w-{uuid.uuid4().hex[:8]}"
    ndjson = {"content-type": "application/x-ndjson"}
    assert (
        client.post(f"/worlds/{copy_world}/import", content=exported.content, headers=ndjson).status_code
        == 201
    )
    assert (
        client.post(f"/worlds/{copy_world}/import", content=exported.content, headers=ndjson).status_code
        == 409
    )
    # DLG-2: the caller's worlds and a world's dialogues.
    assert world in [w["world_id"] for w in client.get("/worlds").json()["items"]]
    assert client.get(f"/worlds/{world}/dialogues").json()["items"][0]["participants"] == ["ann", "bob"]
    # DLG-3: history for one participant, and what it witnessed.
    assert (
        client.get(f"/worlds/{world}/history", params={"participants": "ann,bob", "for": "bob"}).status_code
        == 200
    )
    assert client.get(f"/worlds/{world}/history", params={"for": "bob"}).status_code == 200
    # DLG-6: export to S3 and import it back as a job through presigned URLs.
    to_s3 = client.post(f"/worlds/{world}/exports")
    assert to_s3.status_code == 201
    packed = httpx.get(to_s3.json()["url"], timeout=30).content
    job_world = f"w-{uuid.uuid4().hex[:8]}"
    job = client.post(f"/worlds/{job_world}/imports")
    assert job.status_code == 202
    job_id = job.json()["job_id"]
    assert httpx.put(job.json()["upload_url"], content=packed, timeout=30).status_code == 200
    assert client.post(f"/worlds/{job_world}/imports/{job_id}/start").status_code == 202
    deadline = time.monotonic() + 60
    while client.get(f"/worlds/{job_world}/imports/{job_id}").json()["status"] != "done":
        assert time.monotonic() < deadline, "the import job did not finish"
        time.sleep(0.1)
    # DLG-5: save at a tick, list, load, revert.
    saved = client.post(f"/worlds/{world}/saves", json={"save_id": "s1", "game_tick": 5})
    assert saved.status_code == 201
    assert client.get(f"/worlds/{world}/saves").status_code == 200
    assert client.post(f"/worlds/{world}/saves/s1/load").status_code == 200
    assert client.delete(f"/worlds/{world}/saves/s1/load").status_code == 200
    assert client.delete(f"/worlds/{world}/saves/s1/load").status_code == 404
    # DLG-4: delete an entry, a dialogue, a world; then the world is gone (404) and closed to writes (409).
    entry_route = f"/worlds/{copy_world}/dialogues/ann+bob/entries/e1"
    assert client.delete(entry_route).status_code == 200
    assert client.delete(entry_route).status_code == 404
    assert client.delete(f"/worlds/{copy_world}/dialogues/ann+bob").status_code == 200
    assert client.delete(f"/worlds/{world}").status_code == 200
    assert client.delete(f"/worlds/{world}").status_code == 404
    assert client.get(f"/worlds/{world}/history", params={"participants": "ann,bob"}).status_code == 404
    assert client.post(f"/worlds/{world}/dialogues/entries", json=body).status_code == 409
    # CON-1: the console's page and files; 404 for a name it does not have.
    for path in ("/console", "/console/console.js", "/console/console.css"):
        assert client.get(path).status_code == 200
    assert client.get("/console/missing.js").status_code == 404
    # The OpenAI-compatible routes (API-13): a turn, its errors in OpenAI's shape, the model list.
    turn = client.post(
        "/v1/chat/completions",
        json={"model": "standin-model", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert turn.status_code == 200
    assert turn.json()["conversation"] == turn.headers["x-conversation-id"]
    assert (
        client.post(
            "/v1/chat/completions",
            json={
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "conversation": str(uuid.uuid4()),
            },
        ).status_code
        == 404
    )
    assert client.post("/v1/chat/completions", json={"model": "m", "messages": []}).status_code == 400
    rel_model.configure(mode="error500")
    assert (
        client.post(
            "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        ).status_code
        == 502
    )
    rel_model.configure(mode="ok")
    assert client.get("/v1/models").status_code == 200
    assert client.get("/v1/models", headers={"X-User-Id": ""}).status_code == 401
    # The Responses and Conversations routes (RSP-1..RSP-6): a success and a refusal of each.
    made = client.post("/v1/responses", json={"model": "standin-model", "input": "hi"})
    assert made.status_code == 200, made.text
    response_id = made.json()["id"]
    assert client.post("/v1/responses", json={"input": "x", "background": True}).status_code == 400
    assert client.get(f"/v1/responses/{response_id}").status_code == 200
    assert client.get(f"/v1/responses/{response_id}/input_items").status_code == 200
    counted = client.post(
        "/v1/responses/input_tokens",
        json={"model": "standin-model", "input": "more", "previous_response_id": response_id},
    )
    assert counted.status_code == 200
    compacted = client.post(
        "/v1/responses/compact", json={"model": "standin-model", "previous_response_id": response_id}
    )
    assert compacted.status_code == 200, compacted.text
    assert client.post("/v1/responses/compact", json={"input": "no model"}).status_code == 400
    assert client.delete(f"/v1/responses/{response_id}").status_code == 200
    assert client.get(f"/v1/responses/{response_id}").status_code == 404
    assert client.delete(f"/v1/responses/{response_id}").status_code == 404
    opened = client.post(
        "/v1/conversations", json={"items": [{"type": "message", "role": "user", "content": "hello"}]}
    )
    assert opened.status_code == 200, opened.text
    v1 = f"/v1/conversations/{opened.json()['id']}"
    assert client.get(v1).status_code == 200
    assert client.post(v1, json={"metadata": {"topic": "wire"}}).status_code == 200
    added = client.post(
        f"{v1}/items",
        json={
            "items": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
            ]
        },
    )
    assert added.status_code == 200, added.text
    item_id = added.json()["data"][0]["id"]
    assert client.get(f"{v1}/items").status_code == 200
    assert client.get(f"{v1}/items/{item_id}").status_code == 200
    assert client.delete(f"{v1}/items/{item_id}").status_code == 200
    assert client.get(f"{v1}/items/{item_id}").status_code == 404
    assert client.delete(v1).status_code == 200
    assert client.get(v1).status_code == 404
    assert client.post(v1, json={"metadata": {"topic": "gone"}}).status_code == 404
    # Branches and history (API-18..20): edit, regenerate, switch, the tree, append, delete.
    base = f"/conversations/{conversation_id}"
    edited = client.post(f"{base}/messages/{message_id}/edit", json={"content": "hello again"})
    assert edited.status_code == 201
    assert edited.json()["user_message"]["parent_id"] is None
    answer_id = edited.json()["assistant_message"]["message_id"]
    regenerated = client.post(f"{base}/messages/{answer_id}/regenerate", json={"temperature": 0.5})
    assert regenerated.status_code == 201
    assert client.put(f"{base}/active", json={"message_id": answer_id}).status_code == 200
    tree = client.get(f"{base}/tree", params={"limit": 3})
    assert tree.status_code == 200
    assert tree.json()["next_cursor"]
    appended = client.post(
        f"{base}/messages",
        json={"messages": [{"role": "user", "content": "noted"}, {"role": "assistant", "content": "ok"}]},
    )
    assert appended.status_code == 201
    popped = client.delete(f"{base}/messages/{appended.json()['messages'][-1]['message_id']}")
    assert popped.status_code == 200
    assert popped.json()["deleted"][0]["deleted_at"]
    assert client.post(f"{base}/messages", json={"messages": []}).status_code == 422
    assert client.delete(f"{base}/messages/{uuid.uuid4()}").status_code == 404
    # Conversation keys and metadata (API-21, API-22).
    named = client.put("/conversation-keys/wire-key", json={"title": "named"})
    assert named.status_code == 201
    assert client.put("/conversation-keys/wire-key").status_code == 200
    assert client.put("/conversation-keys/bad%20key").status_code == 400
    stored = client.post(
        f"/conversations/{named.json()['conversation_id']}/messages",
        json={"messages": [{"role": "user", "content": "kept", "metadata": {"id": "u1"}}]},
    )
    assert stored.status_code == 201
    read = client.get("/conversation-keys/wire-key", params={"limit": 5})
    assert read.status_code == 200
    assert read.json()["messages"][0]["metadata"] == {"id": "u1"}
    assert client.get("/conversation-keys/no-such-key").status_code == 404
    assert client.post("/conversations", json={"key": "wire-key"}).status_code == 409
    # Usage and budgets (COST-3, COST-4): the caller's own; another user's and setting one are admins'.
    usage = client.get("/usage")
    assert usage.status_code == 200
    assert usage.json()["totals"]["calls"] >= 1
    assert client.get("/usage", params={"from": "2026-02-01", "to": "2026-01-01"}).status_code == 400
    assert client.get("/usage", params={"user": "someone-else"}).status_code == 403
    assert client.put("/budgets/someone-else", json={"daily_tokens": 10}).status_code == 403
    assert client.put("/budgets/someone-else", json={"weekly": 10}).status_code == 422
    # Memory items (MEM-20..26): put, get, search, namespaces, delete, and their errors.
    memory = {"namespace": ["wire", "notes"], "key": "k1", "value": {"text": "wire memory"}, "ttl": 5}
    assert client.put("/memory/items", json=memory).status_code == 200
    assert client.put("/memory/items", json={**memory, "value": [1]}).status_code == 422
    assert client.put("/memory/items", json={**memory, "value": {"t": "x" * 70_000}}).status_code == 413
    where = {"namespace": "wire.notes", "key": "k1"}
    assert client.get("/memory/items", params=where).status_code == 200
    assert client.get("/memory/items", params={**where, "namespace": "wire..x"}).status_code == 400
    assert (
        client.post(
            "/memory/items/search", json={"namespace_prefix": ["wire"], "query": "memory"}
        ).status_code
        == 200
    )
    assert client.post("/memory/items/search", json={"filter": {"n": {"$bad": 1}}}).status_code == 400
    assert client.post("/memory/items/namespaces", json={"prefix": ["wire"]}).status_code == 200
    assert client.post("/memory/items/namespaces", json={"limit": 0}).status_code == 422
    assert client.delete("/memory/items", params=where).status_code == 204
    assert client.get("/memory/items", params=where).status_code == 404
    # Recall's search (MEM-11) and long-term facts (MEM-32, MEM-33): answers and their errors.
    assert client.get("/memory/search", params={"q": "wire"}).status_code == 200
    assert client.get("/memory/search", params={"q": "wire", "limit": "0"}).status_code in (400, 422)
    unknown = {"q": "wire", "conversation_id": "01J0000000000000000000000Z"}
    assert client.get("/memory/search", params=unknown).status_code == 404
    assert client.get("/memory").status_code == 200
    assert client.get("/memory", params={"limit": "0"}).status_code == 422
    assert client.delete("/memory/01JAAAAAAAAAAAAAAAAAAAAAAA").status_code == 404
    # Delete, then the conversation is gone.
    assert client.delete(f"/conversations/{conversation_id}").status_code == 204
    assert client.get(f"/conversations/{conversation_id}").status_code == 404
    # A user's data (PRV-1..3), last since it erases the caller: an export and its job, the export
    # imported back through a presigned upload, another user's refused, then the erasure and its progress.
    me = client.headers["X-User-Id"]
    export = client.post(f"/users/{me}/exports")
    assert export.status_code == 202, export.text
    export_path = f"/users/{me}/exports/{export.json()['export_id']}"
    deadline = time.monotonic() + 60
    while (exported_job := client.get(export_path).json())["status"] != "done":
        assert time.monotonic() < deadline, "the export job did not finish"
        time.sleep(0.1)
    archive = httpx.get(exported_job["url"], timeout=30).content
    user_import = client.post(f"/users/{me}/imports")
    assert user_import.status_code == 202, user_import.text
    upload = user_import.json()["upload"]
    assert httpx.put(upload["url"], content=archive, timeout=30).status_code == 200
    import_path = f"/users/{me}/imports/{user_import.json()['import_id']}"
    assert client.post(f"{import_path}/start").status_code == 202
    while client.get(import_path).json()["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, "the import job did not finish"
        time.sleep(0.1)
    assert client.get(import_path).json()["status"] == "done"
    assert client.get(f"/users/{me}/exports/nope").status_code == 404
    assert client.post("/users/someone-else/exports").status_code == 403
    assert client.post("/users/someone-else/erasure").status_code == 403
    assert client.post(f"/users/{me}/erasure").status_code == 202
    assert client.get(f"/users/{me}/erasure").status_code == 200

    # Every operation of the document was exercised at least once.
    operations = {
        (method.upper(), path)
        for path, item in checker.document["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    missed = operations - {(method, template) for method, template, _ in checker.seen}
    assert not missed, f"routes the wire test never called: {sorted(missed)}"


def test_the_checker_finds_an_undocumented_field() -> None:
    """The check above can fail: a field the schema does not name is reported with its path."""
    components = {
        "Msg": {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": True},
        "Page": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Msg"}}},
        },
    }
    body = {"items": [{"id": "a"}, {"id": "b", "pinned": True}]}
    assert undocumented_fields(body, {"$ref": "#/components/schemas/Page"}, components) == [
        "$.items[1].pinned"
    ]
    assert (
        undocumented_fields({"items": [{"id": "a"}]}, {"$ref": "#/components/schemas/Page"}, components) == []
    )
