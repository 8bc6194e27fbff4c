"""JWT verification inside a function (API-16), for the one endpoint no API Gateway authorizer fronts:
the streaming function URL. It accepts what the HTTP API's JWT authorizer accepts: RS256 tokens signed
by a key of the issuer's JWKS, `iss` equal to the issuer, `aud` containing the audience (or, as
Cognito access tokens carry it, `client_id` equal to it), within `exp` / `nbf` (60 s of clock skew).

The signature is checked with Python's own integers (RSASSA-PKCS1-v1_5 with SHA-256, RFC 8017 8.2.2):
verifying needs no secret and no native library in the layer. The JWKS is read once per process (OIDC
discovery, else `<issuer>/.well-known/jwks.json`) and again, at most once a minute, when a token names
a key it does not hold (key rotation).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Mapping
from typing import Any, Final

import httpx

from chat_core.errors import Unauthorized

#: DER prefix of a SHA-256 DigestInfo (RFC 8017 9.2, note 1).
_SHA256_PREFIX: Final = bytes.fromhex("3031300d060960864801650304020105000420")
LEEWAY_S: Final = 60
REFRESH_AFTER_S: Final = 60.0


def _b64(segment: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (ValueError, TypeError) as exc:
        raise Unauthorized("the token is not a JWT") from exc


def _int(value: str) -> int:
    return int.from_bytes(_b64(value), "big")


def rs256_valid(signing_input: bytes, signature: bytes, n: int, e: int) -> bool:
    """RSASSA-PKCS1-v1_5 verification with SHA-256 for the public key (n, e)."""
    size = (n.bit_length() + 7) // 8
    if len(signature) != size:
        return False
    value = int.from_bytes(signature, "big")
    if value >= n:
        return False
    encoded = pow(value, e, n).to_bytes(size, "big")
    digest = _SHA256_PREFIX + hashlib.sha256(signing_input).digest()
    expected = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
    return len(digest) + 11 <= size and hmac.compare_digest(encoded, expected)


class JwtVerifier:
    """Verifies tokens of one issuer and audience; thread-safe, one per process."""

    def __init__(self, issuer: str, audience: str, *, client: httpx.Client | None = None) -> None:
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self._client = client or httpx.Client(timeout=5.0)
        self._keys: dict[str, tuple[int, int]] = {}
        self._fetched_at = 0.0
        self._lock = threading.Lock()

    def _jwks_url(self) -> str:
        try:
            found = self._client.get(f"{self.issuer}/.well-known/openid-configuration")
            if found.status_code == 200 and isinstance(found.json().get("jwks_uri"), str):
                return str(found.json()["jwks_uri"])
        except (httpx.HTTPError, ValueError):
            pass
        return f"{self.issuer}/.well-known/jwks.json"

    def _refresh(self) -> None:
        try:
            answer = self._client.get(self._jwks_url())
            answer.raise_for_status()
            keys = answer.json().get("keys", [])
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise Unauthorized("the issuer's keys could not be read; retry") from exc
        self._keys = {
            str(key["kid"]): (_int(key["n"]), _int(key["e"]))
            for key in keys
            if isinstance(key, Mapping)
            and key.get("kty") == "RSA"
            and "kid" in key
            and "n" in key
            and "e" in key
        }
        self._fetched_at = time.monotonic()

    def _key(self, kid: str) -> tuple[int, int]:
        with self._lock:
            if kid not in self._keys and (
                not self._fetched_at or time.monotonic() - self._fetched_at > REFRESH_AFTER_S
            ):
                self._refresh()
            if kid not in self._keys:
                raise Unauthorized("the token was not signed by a key of the issuer")
            return self._keys[kid]

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims; Unauthorized (401) for anything the authorizer would refuse."""
        parts = token.split(".")
        if len(parts) != 3:
            raise Unauthorized("the token is not a JWT")
        try:
            header = json.loads(_b64(parts[0]))
            claims = json.loads(_b64(parts[1]))
        except ValueError as exc:
            raise Unauthorized("the token is not a JWT") from exc
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise Unauthorized("the token is not a JWT")
        if header.get("alg") != "RS256" or not isinstance(header.get("kid"), str):
            raise Unauthorized("the token must be signed with RS256 and name its key (kid)")
        n, e = self._key(header["kid"])
        if not rs256_valid(f"{parts[0]}.{parts[1]}".encode("ascii"), _b64(parts[2]), n, e):
            raise Unauthorized("the token's signature is not valid")
        now = time.time()
        if claims.get("iss") != self.issuer:
            raise Unauthorized("the token was issued by another issuer")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.audience not in audiences and claims.get("client_id") != self.audience:
            raise Unauthorized("the token is for another audience")
        expires = claims.get("exp")
        if not isinstance(expires, int | float) or expires + LEEWAY_S < now:
            raise Unauthorized("the token has expired")
        not_before = claims.get("nbf")
        if isinstance(not_before, int | float) and not_before - LEEWAY_S > now:
            raise Unauthorized("the token is not valid yet")
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise Unauthorized("the token names no subject (sub)")
        return claims
