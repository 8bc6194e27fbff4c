"""REL-8: the process dies between the user-message write and the reply write (SIGKILL of the local
server while the model is answering). After a restart the question is there, and the next post closes
the abandoned reply slot as an error turn instead of wedging the conversation."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.reliability.figures import FIGURES
from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

pytestmark = [pytest.mark.reliability, pytest.mark.e2e]

SECTION = "crash"


def _wait_for(predicate: object, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_a_server_killed_mid_turn_keeps_the_question_and_the_next_post_repairs_the_turn(
    rel_model: OpenAIStandin, tmp_path: Path
) -> None:
    """REL-8: SIGKILL between TransactWrite #1 and #2 loses nothing and wedges nothing."""
    env = {
        "LLM_BASE_URL": rel_model.base_url,
        "LLM_MODEL": "standin-model",
        "LLM_MAX_RETRIES": "0",
        "LLM_TIMEOUT_SECONDS": "60",
        "ABANDONED_TURN_SECONDS": "1",
    }
    snapshot = tmp_path / "dynamodb.json"
    server = ServerProcess(tmp_path, env=env).start()
    try:
        # Given a conversation with one turn, and a model that now takes a minute to answer
        with server.client("crash-user") as client:
            first = client.post("/messages", json={"content": "first"})
            conversation_id = first.json()["conversation_id"]
        FIGURES.response(SECTION, first.status_code)
        rel_model.configure(mode="slow", slow_seconds=60.0)
        asked = threading.Thread(
            target=lambda: _post_ignoring_errors(server.url, conversation_id, "are you still there?"),
            daemon=True,
        )
        asked.start()
        # When the question is stored and the model is being asked, and the server is killed
        _wait_for(
            lambda: any("are you still there?" in str(r.json) for r in rel_model.completion_requests),
            "the model call",
        )
        _wait_for(
            lambda: snapshot.exists() and "are you still there?" in snapshot.read_text(encoding="utf-8"),
            "the snapshot with the question",
        )
        server.stop(signal.SIGKILL)
        FIGURES.add(SECTION, requests=1, faults=1, messages_posted=2)
    finally:
        server.stop()
        rel_model.configure(mode="ok")
    asked.join(timeout=30)
    # Then after a restart the question is still there, without a reply
    restarted = ServerProcess(tmp_path, env=env).start()
    try:
        with restarted.client("crash-user") as client:
            kept = client.get(f"/conversations/{conversation_id}").json()["messages"]
            assert [(m["role"], m["content"]) for m in kept][-1] == ("user", "are you still there?")
            # When the next message is posted
            time.sleep(1.1)  # ABANDONED_TURN_SECONDS=1: the interrupted turn must be older than that
            after = client.post("/messages", json={"conversation_id": conversation_id, "content": "hello?"})
            detail = client.get(f"/conversations/{conversation_id}").json()
        FIGURES.response(SECTION, after.status_code)
        FIGURES.add(SECTION, requests=2, messages_posted=1)
    finally:
        restarted.stop()
    # Then the new turn landed, and the interrupted one ended as an error reply in its slot
    assert after.status_code == 201, after.text
    messages = detail["messages"]
    assert [(m["role"], m["status"]) for m in messages] == [
        ("user", "ok"),
        ("assistant", "ok"),
        ("user", "ok"),
        ("assistant", "error"),
        ("user", "ok"),
        ("assistant", "ok"),
    ]
    assert "interrupted" in messages[3]["error"]["message"]
    # And the counters are exact
    assert detail["message_count"] == len(messages)
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert detail["usage"][key] == sum(m["usage"][key] for m in messages if m["role"] == "assistant")
    FIGURES.add(SECTION, messages_lost=0)


def _post_ignoring_errors(url: str, conversation_id: str, content: str) -> None:
    """The client whose server dies under it: its connection breaks, which is the point."""
    try:
        with httpx.Client(base_url=url, headers={"X-User-Id": "crash-user"}, timeout=90) as client:
            client.post("/messages", json={"conversation_id": conversation_id, "content": content})
    except httpx.HTTPError:
        pass
