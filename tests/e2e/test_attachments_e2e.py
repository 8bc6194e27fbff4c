"""API-17 through `make run`: a large image posted over HTTP is kept in the local blob bucket (the embedded
moto S3), its presigned URL serves the image, and it survives a restart of the server (the bucket is
mirrored to the data directory like the table's snapshot)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import httpx
import pytest

from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(500_000)
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}
TEXT = {"type": "text", "text": "Describe this."}


def _server(data_dir: Path, model: OpenAIStandin) -> ServerProcess:
    return ServerProcess(
        data_dir,
        env={"LLM_BASE_URL": model.base_url, "LLM_MODEL": "standin-model", "LLM_MAX_RETRIES": "1"},
    ).start()


def test_a_large_image_is_served_by_its_url_and_survives_a_restart(
    model: OpenAIStandin, tmp_path: Path
) -> None:
    """API-17: 680 KB of JSON in one post is accepted, stored in S3, readable by URL, and sent again to the
    model after the server restarted."""
    server = _server(tmp_path, model)
    try:
        with server.client() as api:
            # When a user posts a 500 KB image over HTTP
            answer = api.post("/messages", json={"content": [TEXT, IMAGE]})
            assert answer.status_code == 201, answer.text
            conversation_id = answer.json()["conversation_id"]
            # Then the detail route shows a URL that serves the image itself
            shown = api.get(f"/conversations/{conversation_id}").json()["messages"][0]["content_parts"][1]
            fetched = httpx.get(shown["blob"]["url"], timeout=30)
            assert fetched.status_code == 200
            assert fetched.content == PNG
            assert fetched.headers["content-type"] == "image/png"
    finally:
        assert server.stop() == 0
    # And the bucket is mirrored to the data directory beside the table's snapshot
    assert [p.read_bytes() for p in (tmp_path / "s3").rglob("*") if p.is_file()] == [PNG]
    # When the server starts again on the same data directory and the user asks a follow-up
    server = _server(tmp_path, model)
    try:
        with server.client() as api:
            model.reset()
            follow_up = api.post("/messages", json={"conversation_id": conversation_id, "content": "And?"})
            # Then the model receives the image again, byte for byte
            assert follow_up.status_code == 201, follow_up.text
            assert model.requests[-1].json["messages"][0] == {"role": "user", "content": [TEXT, IMAGE]}
    finally:
        assert server.stop() == 0
