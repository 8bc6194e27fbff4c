"""API-16: the streaming function verifies JWTs as the HTTP API's authorizer does, against a real issuer
on loopback (its JWKS over HTTP, tokens signed with its RSA keys)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from chat_core.errors import Unauthorized
from chat_core.http import jwt
from chat_core.http.jwt import JwtVerifier

from tests.support.jwt_issuer import Issuer, jwt_issuer


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with jwt_issuer() as running:
        yield running


def test_a_valid_token_gives_its_claims(issuer: Issuer) -> None:
    claims = JwtVerifier(issuer.url, "client-1").verify(issuer.token(sub="alice"))
    assert claims["sub"] == "alice"


def test_a_cognito_access_token_names_its_client_in_client_id(issuer: Issuer) -> None:
    token = issuer.token(aud=None, client_id="client-1", token_use="access")
    assert JwtVerifier(issuer.url, "client-1").verify(token)["sub"] == "alice"


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"nbf": int(time.time()) + 3600}, "not valid yet"),
        ({"iss": "https://another.example"}, "another issuer"),
        ({"aud": "client-2"}, "another audience"),
        ({"sub": None}, "no subject"),
    ],
)
def test_tokens_the_authorizer_would_refuse_are_refused(issuer: Issuer, claims: dict, why: str) -> None:
    with pytest.raises(Unauthorized, match=why):
        JwtVerifier(issuer.url, "client-1").verify(issuer.token(**claims))


def test_a_tampered_token_or_another_signer_is_refused(issuer: Issuer) -> None:
    verifier = JwtVerifier(issuer.url, "client-1")
    header, _, signature = issuer.token(sub="alice").split(".")
    forged = issuer.token(sub="mallory").split(".")[1]
    with pytest.raises(Unauthorized, match="signature"):
        verifier.verify(f"{header}.{forged}.{signature}")
    issuer.add_key("key-unpublished", publish=False)
    with pytest.raises(Unauthorized, match="not signed by a key"):
        verifier.verify(issuer.token(kid="key-unpublished"))


@pytest.mark.parametrize("token", ["", "abc", "a.b", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30."])
def test_what_is_not_an_rs256_jwt_is_refused(issuer: Issuer, token: str) -> None:
    with pytest.raises(Unauthorized):
        JwtVerifier(issuer.url, "client-1").verify(token)


def test_an_hs256_token_is_refused_even_if_it_names_a_known_key(issuer: Issuer) -> None:
    with pytest.raises(Unauthorized, match="RS256"):
        JwtVerifier(issuer.url, "client-1").verify(issuer.token(alg="HS256"))


def test_keys_are_read_once_and_again_when_a_new_key_appears(
    issuer: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = JwtVerifier(issuer.url, "client-1")
    for _ in range(3):
        verifier.verify(issuer.token())
    assert issuer.jwks_requests == 1
    # The issuer rotates: a new key signs; the verifier reads the keys again (not more than once a minute)
    issuer.add_key("key-2")
    monkeypatch.setattr(jwt, "REFRESH_AFTER_S", 0.0)
    assert verifier.verify(issuer.token(kid="key-2"))["sub"] == "alice"
    assert issuer.jwks_requests == 2
