"""CON-2: `chat-local-server --jwt-issuer` verifies bearer tokens against the issuer's keys, as the
deployed HTTP API's JWT authorizer does, so the console's token sign-in can be tried locally."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.jwt_issuer import jwt_issuer
from tests.support.local_server import ServerProcess

pytestmark = pytest.mark.e2e


def test_jwt_mode_takes_the_caller_from_a_verified_token_only(tmp_path: Path) -> None:
    """CON-2, LOC-1: in JWT mode the caller is a verified token's `sub`; X-User-Id and bad tokens get 401."""
    with jwt_issuer() as issuer:
        server = ServerProcess(
            tmp_path, args=["--jwt-issuer", issuer.url, "--jwt-audience", "client-1"]
        ).start()
        try:
            assert "JWT mode" in server.output
            with httpx.Client(base_url=server.url, timeout=60.0) as client:
                token = issuer.token(sub="carol")
                created = client.post(
                    "/conversations", json={"title": "by token"}, headers={"Authorization": f"Bearer {token}"}
                )
                assert created.status_code == 201
                listed = client.get("/conversations", headers={"Authorization": f"Bearer {token}"}).json()
                assert [c["title"] for c in listed["items"]] == ["by token"]
                # The dev-mode header counts for nothing here.
                assert client.get("/conversations", headers={"X-User-Id": "carol"}).status_code == 401
                # A token the issuer did not sign, or for another audience: refused as API Gateway does.
                issuer.add_key("rogue", publish=False)
                for bad in (issuer.token(kid="rogue", sub="carol"), issuer.token(sub="carol", aud="other")):
                    refused = client.get("/conversations", headers={"Authorization": f"Bearer {bad}"})
                    assert refused.status_code == 401
                    assert refused.json() == {"message": "Unauthorized"}
                # The console needs no identity to load.
                assert client.get("/console").status_code == 200
        finally:
            server.stop()
