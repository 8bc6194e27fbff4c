"""A JWT issuer on 127.0.0.1 for tests: an RSA key pair, its JWKS served over real HTTP (with OIDC
discovery), and tokens signed with it (RS256, by the `cryptography` package the dev venv has)."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _int_b64(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class Issuer:
    """Keys by kid; `jwks` is what the server publishes (rotate by replacing it)."""

    def __init__(self) -> None:
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.published: list[str] = []
        self.jwks_requests = 0
        self.url = ""
        self.add_key("key-1")

    def add_key(self, kid: str, *, publish: bool = True) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            numbers = self.keys[kid].public_key().public_numbers()
            keys.append(
                {
                    "kty": "RSA",
                    "kid": kid,
                    "alg": "RS256",
                    "use": "sig",
                    "n": _int_b64(numbers.n),
                    "e": _int_b64(numbers.e),
                }
            )
        return {"keys": keys}

    def token(self, *, kid: str = "key-1", alg: str = "RS256", **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": self.url, "aud": "client-1", "sub": "alice", "iat": now, "exp": now + 300, **claims}
        body = {k: v for k, v in body.items() if v is not None}
        header = _b64(json.dumps({"alg": alg, "kid": kid, "typ": "JWT"}).encode())
        payload = _b64(json.dumps(body).encode())
        signature = self.keys[kid].sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{_b64(signature)}"


@contextmanager
def jwt_issuer() -> Iterator[Issuer]:
    """An issuer whose discovery document and JWKS are served on a free loopback port."""
    issuer = Issuer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/keys"}
            elif self.path == "/keys":
                issuer.jwks_requests += 1
                body = issuer.jwks()
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
