"""The Responses API's WebSocket mode (RSP-12) behind an API Gateway WebSocket API: `$connect` checks the
caller and opens the connection's item, `response.create` (and `$default`, for anything else) runs one
turn and posts its events to the connection through the management API, `$disconnect` deletes the item."""

from __future__ import annotations

import json
import os
from typing import Any, Final

import botocore.session
from chat_core.chat import socket_state
from chat_core.errors import ChatError, Unauthorized
from chat_core.http.jwt import JwtVerifier
from chat_core.http.responses_socket import error_event, socket_turn
from chat_core.observability import entry, logger
from chat_core.settings import get_settings
from chat_core.store.keys import is_valid_owner

#: The local server points the management API here (deployed: https://<domainName>/<stage>).
CALLBACK_URL_ENV: Final = "WEBSOCKET_CALLBACK_URL"
#: The management API clients (per endpoint) and the JWT verifier, built by the first event that needs them.
_clients: dict[str, Any] = {}
_verifier: list[JwtVerifier] = []


def _management(event: dict[str, Any]) -> Any:
    """The @connections client of the API the event came through (one per endpoint, kept warm)."""
    context = event["requestContext"]
    endpoint = os.environ.get(CALLBACK_URL_ENV) or f"https://{context['domainName']}/{context['stage']}"
    client = _clients.get(endpoint)
    if client is None:
        client = _clients[endpoint] = botocore.session.get_session().create_client(
            "apigatewaymanagementapi", region_name=get_settings().region, endpoint_url=endpoint
        )
    return client


def _caller(event: dict[str, Any]) -> str:
    """The caller on $connect: API Gateway's WebSocket APIs have no JWT authorizer, so the bearer token is
    verified here (JWT_ISSUER, JWT_AUDIENCE), as the streaming function does; claims an authorizer put in
    the request context (the local server's dev mode) are taken as they are."""
    authorizer = event["requestContext"].get("authorizer") or {}
    claims = (authorizer.get("jwt") or {}).get("claims") if isinstance(authorizer, dict) else None
    if claims is None:
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        issuer, audience = os.environ.get("JWT_ISSUER", ""), os.environ.get("JWT_AUDIENCE", "")
        if scheme.lower() != "bearer" or not token.strip() or not issuer:
            raise Unauthorized("send the caller's JWT as Authorization: Bearer <token>")
        if not _verifier:
            _verifier.append(JwtVerifier(issuer, audience))
        claims = _verifier[0].verify(token.strip())
    owner = claims.get("sub")
    if not isinstance(owner, str) or not is_valid_owner(owner):
        raise Unauthorized("the token names no caller")
    return owner


@entry()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = event["requestContext"]
    route, connection_id = request["routeKey"], request["connectionId"]
    if route == "$connect":
        try:
            socket_state.open_socket(connection_id, _caller(event))
        except Unauthorized as exc:
            logger.info("socket refused", code=exc.code)
            return {"statusCode": 401, "body": exc.message}
        return {"statusCode": 200}
    if route == "$disconnect":
        socket_state.close(connection_id)
        return {"statusCode": 200}
    client = _management(event)

    def send(server_event: dict[str, Any]) -> None:
        data = json.dumps(server_event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        client.post_to_connection(ConnectionId=connection_id, Data=data)

    try:
        socket = socket_state.find(connection_id)
        if socket is None:
            send(error_event(401, "unauthorized", "the connection is not open; connect again"))
            keep_open = False
        else:
            keep_open = socket_turn(socket, event.get("body"), send, context=context).keep_open
    except ChatError as exc:  # the store failed before the turn began: the client may retry on this socket
        send(error_event(503, exc.code, exc.message))
        keep_open = True
    except client.exceptions.GoneException:
        logger.info("socket gone", connection_id=connection_id)
        return {"statusCode": 410}
    if not keep_open:
        client.delete_connection(ConnectionId=connection_id)
    return {"statusCode": 200}
