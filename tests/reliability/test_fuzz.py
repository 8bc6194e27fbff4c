"""REL-7 / API-5: schemathesis against the local server's OpenAPI document, every template route,
with and without identity: no 5xx, every answer conforming to the documented statuses, media types,
bodies and headers, no internal text. Budget: FUZZ_MAX_EXAMPLES per route, mode and identity (4 in
`make test`, derandomized; `make fuzz` raises it and explores at random)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.reliability.figures import FIGURES
from tests.reliability.leaks import assert_clean
from tests.reliability.routes import Route, http_routes, identified_routes
from tests.reliability.samples import body_for
from tests.support.local_server import ServerProcess

pytestmark = [pytest.mark.fuzz, pytest.mark.e2e]

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "4"))
DERANDOMIZE = os.environ.get("FUZZ_RANDOM", "") not in ("1", "true", "yes")
FUZZ_USER = "fuzz-user"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
ROUTES = http_routes()
# The import route takes JSON Lines as text.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")


@pytest.fixture(scope="module")
def api_schema(rel_server: ServerProcess) -> Any:
    return schemathesis.openapi.from_url(f"{rel_server.url}/openapi.json")


@pytest.fixture(scope="module")
def known_ids(rel_server: ServerProcess) -> dict[str, str]:
    """Real ids of the fuzz user, so positive cases also reach the code past "not found"."""
    with httpx.Client(base_url=rel_server.url, headers={"X-User-Id": FUZZ_USER}, timeout=60) as client:
        turn = client.post("/messages", json={"content": "seed conversation for the fuzzer"})
        assert turn.status_code == 201, turn.text
        world = client.post(
            "/worlds/fuzz-world/dialogues/entries",
            json=body_for("POST /worlds/{world_id}/dialogues/entries", {}),
        )
        assert world.status_code in (200, 201), world.text
    body = turn.json()
    return {
        "conversation_id": body["conversation_id"],
        "message_id": body["user_message"]["message_id"],
        "world_id": "fuzz-world",
    }


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


def _with_known_ids(case: Any, ids: dict[str, str]) -> None:
    for name in list(case.path_parameters or {}):
        if name in ids:
            case.path_parameters[name] = ids[name]
    if isinstance(case.body, dict) and "conversation_id" in case.body:
        case.body["conversation_id"] = ids["conversation_id"]


def _spoil_text(value: Any, choice: int) -> bool:
    """Append an unpaired surrogate to one string of a JSON body (the `choice`-th, wrapping around)."""
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, str):
                    slots.append((node, key))
                walk(item)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    slots.append((node, index))
                walk(item)

    walk(value)
    if not slots:
        return False
    parent, key = slots[choice % len(slots)]
    parent[key] = parent[key] + "\ud800"
    return True


def _fuzz(
    route: Route,
    operation: Any,
    mode: GenerationMode,
    *,
    identity: str | None,
    url: str,
    session: requests.Session,
    known: dict[str, str],
) -> None:
    section = "fuzz"

    @given(
        case=operation.as_strategy(generation_mode=mode),
        use_known=st.booleans(),
        spoil=st.one_of(st.none(), st.integers(min_value=0, max_value=50)),
    )
    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=DERANDOMIZE,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any, use_known: bool, spoil: int | None) -> None:
        headers = {
            k: v for k, v in (case.headers or {}).items() if k.lower() not in ("x-user-id", "authorization")
        }
        if identity is not None:
            headers["X-User-Id"] = identity
        case.headers = headers
        if use_known and mode is GenerationMode.POSITIVE:
            _with_known_ids(case, known)
        # API-5: text that is not valid Unicode (escaped lone surrogates) in any field of the body.
        spoiled = spoil is not None and _spoil_text(case.body, spoil)
        response = case.call(base_url=url, session=session, timeout=60)
        FIGURES.response(section, response.status_code)
        context = f"{route.key} ({mode.value}, {'as ' + identity if identity else 'anonymous'})"
        assert_clean(response.status_code, response.text, context)
        if identity is None:
            # No identity is 401 everywhere (API-8), in the one error shape.
            assert response.status_code == 401, f"{context}: {response.status_code} {response.text[:300]}"
            assert json.loads(response.text)["error"]["code"] == "unauthorized"
            return
        if spoiled:
            assert response.status_code in (400, 413), (
                f"{context}: {response.status_code} {response.text[:300]}"
            )
            return
        checks = CHECKS + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])
        case.validate_response(response, checks=checks)

    run()


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_every_route_survives_fuzzing_with_identity(
    route: Route,
    api_schema: Any,
    rel_server: ServerProcess,
    session: requests.Session,
    known_ids: dict[str, str],
) -> None:
    """REL-7 / API-5: positive and negative cases as a user: no 5xx, answers as documented."""
    # Given the route as the served OpenAPI document describes it (every template route must be there)
    operation = api_schema[route.path][route.method]
    # When schemathesis sends valid and invalid requests; Then every answer conforms (checked per case)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        _fuzz(
            route, operation, mode, identity=FUZZ_USER, url=rel_server.url, session=session, known=known_ids
        )


@pytest.mark.parametrize("route", identified_routes(), ids=str)
def test_every_route_answers_401_to_anonymous_fuzzing(
    route: Route,
    api_schema: Any,
    rel_server: ServerProcess,
    session: requests.Session,
    known_ids: dict[str, str],
) -> None:
    """API-8: no identity is 401 on every route that needs one (all but the console's files, CON-1),
    whatever else the request gets wrong."""
    # Given the route's operation
    operation = api_schema[route.path][route.method]
    # When fuzzed requests come without X-User-Id; Then each is a clean 401 (checked per case)
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        _fuzz(route, operation, mode, identity=None, url=rel_server.url, session=session, known=known_ids)


#: POST routes without a JSON body: the import takes JSON Lines; the others are actions on the path
#: alone (DLG-5 load, DLG-6 export to S3, a new import job, starting one; PRV-1..3 a user's erasure, export,
#: import job and its start: the file itself goes to the presigned upload URL).
_NO_JSON_BODY = {
    "POST /users/{user_id}/erasure",
    "POST /users/{user_id}/exports",
    "POST /users/{user_id}/imports",
    "POST /users/{user_id}/imports/{import_id}/start",
    "POST /worlds/{world_id}/import",
    "POST /worlds/{world_id}/saves/{save_id}/load",
    "POST /worlds/{world_id}/exports",
    "POST /worlds/{world_id}/imports",
    "POST /worlds/{world_id}/imports/{job_id}/start",
}


def test_the_openapi_document_describes_every_route_with_its_statuses(rel_server: ServerProcess) -> None:
    """REL-7: the served document lists every template route, its request body where it takes one,
    and the one error shape for its error statuses (401 where the route needs an identity)."""
    # Given the served document
    document = httpx.get(f"{rel_server.url}/openapi.json", timeout=30).json()
    for route in ROUTES:
        # When the route's operation is looked up
        operation = document["paths"][route.path][route.method.lower()]
        responses = operation["responses"]
        # Then it documents a success status, 401 and the error shape
        assert any(code.startswith("2") for code in responses), route.key
        if route.public:
            continue
        assert "401" in responses, route.key
        error_schema = responses["401"]["content"]["application/json"]["schema"]
        # (the /v1 routes answer OpenAI's error shape, API-13)
        shape = "OpenAIErrorOut" if route.path.startswith("/v1/") else "ErrorOut"
        assert error_schema == {"$ref": f"#/components/schemas/{shape}"}, route.key
        if route.method in ("POST", "PUT", "PATCH") and route.key not in _NO_JSON_BODY:
            assert "requestBody" in operation, route.key


#: Content-Type headers a broken or hostile client sends: a multipart type without its boundary (it was
#: a 500 on two routes), a boundary with nothing behind it, unknown and malformed types, a bad charset,
#: parameters without a type, an empty header and bytes that are not a media type at all.
MALFORMED_CONTENT_TYPES = (
    "multipart/form-data",
    "multipart/form-data; boundary=",
    "multipart/mixed; boundary=x",
    "application/x-www-form-urlencoded",
    "text/plain",
    "application/json; charset=klingon",
    "application/json; charset",
    "; boundary=x",
    "",
    "*/*",
    "application/",
    "\u00e9/\u00e9",
)


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_every_route_answers_a_malformed_content_type_with_a_client_error(
    route: Route, rel_server: ServerProcess, known_ids: dict[str, str]
) -> None:
    """API-5 / REL-7: whatever the Content-Type says, an answer is never a 5xx and never shows internals;
    a route that reads a body answers a malformed or unsupported type with 400 or 415 (or reads it as
    its documented body), never by guessing into an internal error."""
    ids = {**known_ids}
    url = f"{rel_server.url}{route.url(ids)}"
    body = body_for(route.key, ids)
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    with httpx.Client(timeout=60) as client:
        for content_type in MALFORMED_CONTENT_TYPES:
            # Given a request of the route with a well-formed body under a malformed Content-Type
            headers = [(b"X-User-Id", FUZZ_USER.encode()), (b"Content-Type", content_type.encode())]
            # When it is sent as is
            response = client.request(route.method, url, content=raw, headers=headers)
            context = f"{route.key} with Content-Type {content_type!r}"
            FIGURES.response("fuzz", response.status_code)
            # Then it is a clean answer below 500, in the route's error shape when it is an error
            assert response.status_code < 500, f"{context}: {response.status_code} {response.text[:300]}"
            assert_clean(response.status_code, response.text, context)
            if response.status_code >= 400 and not route.public:
                assert "error" in response.json(), f"{context}: {response.text[:300]}"
