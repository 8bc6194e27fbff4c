"""chat_local.apigw: API Gateway HTTP API payload 2.0 events, routing and Lambda proxy responses."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from chat_local.apigw import (
    HttpRequest,
    NoRoute,
    RouteMatch,
    Router,
    build_event,
    decoded_path,
    proxy_response,
)
from chat_local.template import load_template

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "local_app" / "template.yaml"
ROUTER = Router(load_template(FIXTURE, region="us-east-1").routes)


def _match(method: str, path: str) -> RouteMatch:
    found = ROUTER.match(method, decoded_path(path))
    assert isinstance(found, RouteMatch)
    return found


def _request(**overrides: object) -> HttpRequest:
    values: dict[str, object] = {
        "method": "GET",
        "raw_path": "/echo/caf%C3%A9",
        "raw_query": "a=1&a=2&b=x%20y&empty=",
        "headers": [("Host", "127.0.0.1:3000"), ("X-Trace", "one"), ("x-trace", "two"), ("User-Agent", "ua")],
        "body": b"",
        "received_at": 1_700_000_000.5,
    }
    values.update(overrides)
    return HttpRequest(**values)  # type: ignore[arg-type]


def test_event_has_the_payload_2_0_shape() -> None:
    """LOC-1: version 2.0, routeKey, rawPath, rawQueryString, requestContext (http, requestId, time)."""
    # Given a GET on a parameterised route
    request = _request()
    # When the event is built
    event = build_event(request, _match("GET", request.raw_path), region="us-east-1")
    # Then it has API Gateway's fields
    assert event["version"] == "2.0"
    assert event["routeKey"] == "GET /echo/{name}"
    assert event["rawPath"] == "/echo/café"  # HTTP APIs hand the path over decoded
    assert event["rawQueryString"] == "a=1&a=2&b=x%20y&empty="
    ctx = event["requestContext"]
    assert ctx["http"] == {
        "method": "GET",
        "path": "/echo/café",
        "protocol": "HTTP/1.1",
        "sourceIp": "127.0.0.1",
        "userAgent": "ua",
    }
    assert ctx["routeKey"] == "GET /echo/{name}"
    assert ctx["timeEpoch"] == 1_700_000_000_500
    assert ctx["requestId"]
    assert event["isBase64Encoded"] is False
    assert "body" not in event


def test_headers_query_and_path_parameters_are_normalised_like_api_gateway() -> None:
    """Headers lower-cased and repeated ones comma-joined; query values joined; path parameters decoded."""
    # When the event is built
    request = _request()
    event = build_event(request, _match("GET", request.raw_path), region="us-east-1")
    # Then
    assert event["headers"]["x-trace"] == "one,two"
    assert event["headers"]["host"] == "127.0.0.1:3000"
    assert event["queryStringParameters"] == {"a": "1,2", "b": "x y", "empty": ""}
    assert event["pathParameters"] == {"name": "café"}


def test_an_encoded_slash_never_splits_a_path_parameter() -> None:
    """%2F stays encoded while the rest of the path is decoded, so /echo/a%2Fb is one parameter."""
    # When a parameter holds an encoded slash and a space
    request = _request(raw_path="/echo/a%2Fb%20c")
    event = build_event(request, _match("GET", request.raw_path), region="us-east-1")
    # Then it is one parameter, decoded except for the slash
    assert event["pathParameters"] == {"name": "a%2Fb c"}
    assert event["rawPath"] == "/echo/a%2Fb c"


def test_x_user_id_becomes_the_jwt_sub_claim() -> None:
    """API-8 dev mode: X-User-Id -> requestContext.authorizer.jwt.claims.sub."""
    # When the header is present
    request = _request(headers=[("X-User-Id", "alice")])
    event = build_event(request, _match("GET", request.raw_path), region="us-east-1")
    # Then the authorizer claims carry it
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] == "alice"


def test_no_x_user_id_means_no_authorizer() -> None:
    """API-8: without the header there are no claims, so the handler answers 401."""
    # When the header is absent or blank
    for headers in ([], [("X-User-Id", "  ")]):
        request = _request(headers=headers)
        event = build_event(request, _match("GET", request.raw_path), region="us-east-1")
        # Then there is no authorizer at all
        assert "authorizer" not in event["requestContext"]


def test_text_body_is_passed_as_text_and_binary_as_base64() -> None:
    """LOC-1: body base64 when binary, with isBase64Encoded."""
    # Given a JSON body and a binary body
    text = _request(
        method="POST",
        raw_path="/echo",
        headers=[("Content-Type", "application/json")],
        body=b'{"a":"\xc3\xa9"}',
    )
    binary = _request(
        method="POST", raw_path="/echo", headers=[("Content-Type", "image/png")], body=b"\x89PNG\x00\xff"
    )
    # When events are built
    text_event = build_event(text, _match("POST", "/echo"), region="us-east-1")
    binary_event = build_event(binary, _match("POST", "/echo"), region="us-east-1")
    # Then the text body is a string, the binary one base64
    assert text_event["body"] == '{"a":"é"}'
    assert text_event["isBase64Encoded"] is False
    assert base64.b64decode(binary_event["body"]) == b"\x89PNG\x00\xff"
    assert binary_event["isBase64Encoded"] is True


def test_cookies_move_to_their_own_field() -> None:
    """Payload 2.0 puts cookies in `cookies`, not in headers."""
    # When a Cookie header is sent
    request = _request(headers=[("Cookie", "a=1; b=2")])
    event = build_event(request, _match("GET", request.raw_path), region="us-east-1")
    # Then
    assert event["cookies"] == ["a=1", "b=2"]
    assert "cookie" not in event["headers"]


def test_router_answers_404_and_405() -> None:
    """LOC-1: 404 for an unknown route, 405 (with the allowed methods) for a wrong method."""
    # When unknown and wrong-method paths are matched
    unknown = ROUTER.match("GET", "/nothing/here")
    wrong = ROUTER.match("DELETE", "/echo")
    # Then
    assert unknown == NoRoute(())
    assert wrong == NoRoute(("POST",))


def test_any_and_greedy_routes_match_every_method_and_depth() -> None:
    """ANY and {proxy+} routes of a template work as in API Gateway."""
    # When a deep path is matched with two methods
    for method in ("GET", "PATCH"):
        found = _match(method, "/any/a/b/c")
        # Then the greedy parameter holds the rest of the path
        assert found.route.route_key == "ANY /any/{proxy+}"
        assert found.path_parameters == {"proxy": "a/b/c"}


def test_proxy_response_with_headers_cookies_and_body() -> None:
    """A proxy result becomes status, headers (cookies as Set-Cookie) and body."""
    # When a handler returns a proxy response
    response = proxy_response(
        {"statusCode": 201, "headers": {"x-a": "1"}, "cookies": ["s=1"], "body": '{"ok":true}'}
    )
    # Then
    assert response.status == 201
    assert ("x-a", "1") in response.headers
    assert ("Set-Cookie", "s=1") in response.headers
    assert ("Content-Type", "application/json") in response.headers
    assert json.loads(response.body) == {"ok": True}


def test_proxy_response_decodes_base64_bodies() -> None:
    """isBase64Encoded responses are decoded before they are sent."""
    # When a binary body is returned
    response = proxy_response(
        {"statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(), "isBase64Encoded": True}
    )
    # Then the bytes are sent
    assert response.body == b"\x00\x01"


def test_a_result_without_status_code_is_a_200_json_body() -> None:
    """Payload 2.0: a return value that is not a proxy response is sent as JSON with 200."""
    # When a handler returns a plain dict
    response = proxy_response({"plain": True})
    # Then
    assert response.status == 200
    assert json.loads(response.body) == {"plain": True}


def test_an_invalid_status_code_is_a_500() -> None:
    """A malformed integration response is API Gateway's 500, not a crash of the local server."""
    # When a handler returns nonsense
    for result in ({"statusCode": "abc"}, {"statusCode": 99}):
        response = proxy_response(result)
        # Then
        assert response.status == 500
        assert json.loads(response.body)["error"]["code"] == "internal_error"
