"""API-7: a request's identity and Idempotency-Key are its own, even when a host resolves requests on
several threads at once (the local server runs concurrent invocations in one process)."""

from __future__ import annotations

import json
import threading
from typing import Any

from chat_core.http.api import build_app, caller, idempotency_key, json_response

from tests.support.events import http_event
from tests.support.lambda_context import LambdaContext


def _app(entered: threading.Event, release: threading.Event) -> Any:
    app = build_app()

    @app.get("/whoami")
    def whoami() -> Any:
        first = caller(app)
        entered.set()
        # Another request is resolved (by another container of the same function) while this one runs.
        assert release.wait(30), "the other request never finished"
        return json_response(200, {"before": first, "after": caller(app), "key": idempotency_key(app)})

    return app


def test_concurrent_requests_never_see_each_others_caller_or_key() -> None:
    """API-7 / API-6: alice's request, paused mid-route while bob's runs, still reads alice and her key."""
    # Given two warm containers of one function, as the local server keeps them
    entered, release = threading.Event(), threading.Event()
    alice_app = _app(entered, release)
    bob_release = threading.Event()
    bob_release.set()  # bob's request runs straight through
    bob_app = _app(threading.Event(), bob_release)
    answers: dict[str, Any] = {}

    def alice() -> None:
        event = http_event("GET", "/whoami", user="alice", headers={"Idempotency-Key": "alice-key"})
        answers["alice"] = alice_app.resolve(event, LambdaContext(function_name="whoami"))

    # When alice's request is inside its route and bob's request is resolved in full meanwhile
    thread = threading.Thread(target=alice)
    thread.start()
    assert entered.wait(30)
    bob_event = http_event("GET", "/whoami", user="bob", headers={"Idempotency-Key": "bob-key"})
    answers["bob"] = bob_app.resolve(bob_event, LambdaContext(function_name="whoami"))
    release.set()
    thread.join(30)
    # Then each answer names its own caller and key, before and after the other request ran
    assert json.loads(answers["alice"]["body"]) == {"before": "alice", "after": "alice", "key": "alice-key"}
    assert json.loads(answers["bob"]["body"]) == {"before": "bob", "after": "bob", "key": "bob-key"}


def test_one_container_resolving_two_requests_at_once_keeps_each_ones_route() -> None:
    """API-7: a host running one function's handler on several threads (the tests' in-process calls, a
    threaded server) never lets one request's end clear the route another is still resolving (a 500)."""
    # Given ONE app whose route pauses until another request on it has been resolved in full
    entered, release = threading.Event(), threading.Event()
    app = build_app()

    @app.get("/route")
    def route() -> Any:
        if caller(app) == "alice":
            entered.set()
            assert release.wait(30), "the other request never finished"
        matched = app.context.get("_route")
        return json_response(200, {"route": None if matched is None else matched.path})

    answers: dict[str, Any] = {}

    def alice() -> None:
        event = http_event("GET", "/route", user="alice")
        answers["alice"] = app.resolve(event, LambdaContext(function_name="route"))

    # When alice's request is inside its route and bob's request on the same app runs start to end
    thread = threading.Thread(target=alice)
    thread.start()
    assert entered.wait(30)
    bob = http_event("GET", "/route", user="bob")
    answers["bob"] = app.resolve(bob, LambdaContext(function_name="route"))
    release.set()
    thread.join(30)
    # Then alice's request still knows its route after bob's ended
    assert json.loads(answers["alice"]["body"]) == {"route": "/route"}
    assert json.loads(answers["bob"]["body"]) == {"route": "/route"}
